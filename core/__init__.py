"""The pure domain of logwright: events, projections and decisions. Standard library only, no I/O."""

from __future__ import annotations

from typing import Any

from . import events  # noqa: F401  (first: the event modules it gathers import it back)
from .acl_events import ACLS
from .catalog import CATALOG
from .clock import MANUAL_CLOCK
from .consumer_groups import CONSUMER_GROUPS
from .cursor import CURSORS
from .group_offsets import GROUP_OFFSETS
from .groups import GROUPS
from .partition_log import PARTITIONS
from .partition_transactions import PARTITION_TRANSACTIONS
from .producers import PRODUCERS
from .projection import Projection
from .share_groups import SHARE_GROUPS
from .switch_delays import SWITCH_DELAYS
from .transactions import TRANSACTIONS

CORE_PROJECTIONS: tuple[Projection[Any], ...] = (
    CATALOG, PARTITIONS, GROUP_OFFSETS, PRODUCERS, GROUPS, CURSORS, SHARE_GROUPS, MANUAL_CLOCK, ACLS,
    TRANSACTIONS, PARTITION_TRANSACTIONS, SWITCH_DELAYS, CONSUMER_GROUPS,
)
