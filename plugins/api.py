"""Everything a logwright plugin may use, in one module: ``from logwright.plugins.api import ...``.

This is the boundary between logwright and its plugins. A third-party plugin imports only this module
(and the standard library); what is not listed in ``__all__`` may change in any release. The names are
defined where the broker uses them and re-exported here, so a plugin and the broker share one class:

- **hooks**: `hookimpl` marks a function (or method) as the implementation of a ``logwright_*`` hook
  (see `logwright.plugins.spec` for each hook's documentation); `acts_on_topics` declares the topics an
  admission implementation acts on, so produce requests to other topics skip it; `derives_from` declares the
  event types (`names_partition`: those naming a partition) and whether the record batches a
  ``logwright_derive_events`` implementation derives from, so other changes skip it.
- **registration**: the register each registration hook receives, and `BackgroundTask`; for an extension key's
  ``authorize`` check, `allowed` with `AclOperation` and `ResourceType` (the broker's ACLs).
- **subscription modes**: the `SubscriptionMode` protocol, `SubscriptionModeBase` (the membership
  bookkeeping: subclass it and override only what your mode does differently) and the values a mode
  reads and returns.
- **decisions and wrappers**: what ``logwright_decide_release`` and ``logwright_admit_append`` receive
  and return.
- **configs**: `ConfigKey` and validators for the keys a plugin adds, and the keys plugins commonly read.
- **errors**: the domain errors a plugin may raise or refuse with (each maps to a Kafka error code).
- **projections**: `Event` and `Projection`, for a plugin that stores its own events.
- **the broker, for background tasks**: `BrokerFacade` and the values it takes.
"""

from __future__ import annotations

from logwright.compat.authorization import allowed
from logwright.compat.registry import ErrorAnswer, Handler, RequestContext
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.config.configs import ConfigKey, any_value, boolean, long_at_least, long_between, one_of
from logwright.core.cursors.key_hash_ranges import HashRange
from logwright.core.cursors.plugin_decisions import (
    ADMIT_ALL,
    DEAD_LETTER_MAX_DELIVERIES_KEY,
    DEAD_LETTER_MAX_REDELIVER_COUNT_KEY,
    Admission,
    AppendRequest,
    ArchivedRecords,
    DeadLetter,
    GroupConfigChange,
    PartitionAppend,
    Redeliver,
    Reject,
    ReleasedDelivery,
    ReleaseDecision,
    ReleaseReason,
    TopicScope,
)
from logwright.core.cursors.subscription_mode import (
    DEFAULT_MODE,
    MAX_UNACKED_PER_CONSUMER,
    SUBSCRIPTION_MODE_KEY,
    DispatchView,
    Handover,
    Membership,
    ModeConsumer,
    SubscriptionMode,
    SubscriptionModeBase,
    first_offsets,
    in_flight_budget,
)
from logwright.core.errors import (
    AppendHeld,
    ConsumerBusy,
    DomainError,
    InvalidConfig,
    InvalidRequest,
    PolicyViolation,
)
from logwright.core.events import Event
from logwright.core.events.keys import DedupKeysExpired, ProcessedKeysExpired
from logwright.core.keys.dedup import Deduplication
from logwright.core.log.delayed_view import HeldSpan
from logwright.core.log.index_hooks import AppendedBatch, HeldBack, HoldBackQuery, StagedChange
from logwright.core.log.record_keys import KeyedRecord
from logwright.core.projection import Projection
from logwright.core.rangeset import RangeSet

from .facade import AppendRefused, BrokerFacade, BrokerTimer, OutgoingRecord, StoredBatchInfo, sweep_expired
from .registrars import (
    EXTENSION_API_KEYS,
    BackgroundTask,
    BackgroundTaskRegister,
    ConfigKeyRegister,
    ExtensionHandlerRegister,
    ProjectionRegister,
    SubscriptionModeRegister,
)
from .spec import DerivesFrom, acts_on_topics, derives_from, hookimpl, names_partition

DELIVERY_LIMIT_KEY = "share.delivery.count.limit"
"""Group config: deliveries after which the built-in ``redelivery`` plugin archives records."""
DEFAULT_DELIVERY_LIMIT = 5
"""Its default (KIP-932's)."""

__all__ = [
    # hooks
    "hookimpl", "acts_on_topics", "TopicScope", "derives_from", "DerivesFrom", "names_partition",
    # registration
    "SubscriptionModeRegister", "ConfigKeyRegister", "ExtensionHandlerRegister", "ProjectionRegister",
    "BackgroundTaskRegister", "BackgroundTask", "EXTENSION_API_KEYS", "Handler", "ErrorAnswer", "RequestContext",
    "allowed", "AclOperation", "ResourceType",
    # subscription modes
    "SubscriptionMode", "SubscriptionModeBase", "Membership", "ModeConsumer", "DispatchView", "Handover",
    "HashRange", "RangeSet", "first_offsets", "in_flight_budget", "SUBSCRIPTION_MODE_KEY", "DEFAULT_MODE",
    "MAX_UNACKED_PER_CONSUMER",
    # decisions and wrappers
    "ReleasedDelivery", "ReleaseReason", "ReleaseDecision", "Redeliver", "Reject", "ArchivedRecords", "DeadLetter",
    "DEAD_LETTER_MAX_DELIVERIES_KEY", "DEAD_LETTER_MAX_REDELIVER_COUNT_KEY", "GroupConfigChange",
    "AppendRequest",
    "PartitionAppend", "Admission", "ADMIT_ALL", "Deduplication", "KeyedRecord", "DedupKeysExpired",
    "ProcessedKeysExpired",
    # configs
    "ConfigKey", "long_at_least", "long_between", "one_of", "boolean", "any_value", "DELIVERY_LIMIT_KEY",
    "DEFAULT_DELIVERY_LIMIT",
    # errors
    "DomainError", "PolicyViolation", "InvalidConfig", "InvalidRequest", "ConsumerBusy", "AppendRefused", "AppendHeld",
    # projections
    "Event", "Projection",
    # index hooks
    "StagedChange", "AppendedBatch", "HoldBackQuery", "HeldBack", "HeldSpan",
    # the broker, for background tasks
    "BrokerFacade", "BrokerTimer", "OutgoingRecord", "StoredBatchInfo", "sweep_expired",
]
