"""The pure domain of logwright: events, projections and decisions. Standard library only, no I/O."""

from __future__ import annotations

from typing import Any

from logwright.core.acls.acls import ACLS
from logwright.core.clock import MANUAL_CLOCK
from logwright.core.compaction.state import CLEANER_CHECKPOINTS
from logwright.core.consumer_groups.consumer_groups import CONSUMER_GROUPS
from logwright.core.cursors.cursor import CURSORS
from logwright.core.cursors.dead_letter_history import DEAD_LETTER_HISTORY
from logwright.core.groups.group_offsets import GROUP_OFFSETS
from logwright.core.groups.groups import GROUPS
from logwright.core.log.catalog import CATALOG
from logwright.core.log.partition_log import PARTITIONS
from logwright.core.log.producers import PRODUCERS
from logwright.core.projection import Projection
from logwright.core.quotas.client_quotas import CLIENT_QUOTAS
from logwright.core.security.delegation_tokens import DELEGATION_TOKENS
from logwright.core.security.scram_credentials import SCRAM_CREDENTIALS
from logwright.core.share_groups.share_groups import SHARE_GROUPS
from logwright.core.share_groups.switch_delays import SWITCH_DELAYS
from logwright.core.transactions.partition_transactions import PARTITION_TRANSACTIONS
from logwright.core.transactions.transactions import TRANSACTIONS

CORE_PROJECTIONS: tuple[Projection[Any], ...] = (
    CATALOG, PARTITIONS, GROUP_OFFSETS, PRODUCERS, GROUPS, CURSORS, SHARE_GROUPS, MANUAL_CLOCK, ACLS,
    TRANSACTIONS, PARTITION_TRANSACTIONS, SWITCH_DELAYS, CONSUMER_GROUPS,
    DEAD_LETTER_HISTORY, CLEANER_CHECKPOINTS, CLIENT_QUOTAS, SCRAM_CREDENTIALS, DELEGATION_TOKENS,
)
