"""Every state change the broker remembers, one module per domain; this package gathers them.

`base` defines `Event` and imports no other event module; each domain module imports only `base` (and
`groups`, for the offsets a transaction carries), so there is no import cycle. Import an event from here
or from its domain module, both stay valid. `ALL_EVENT_TYPES` is the one list of core events the codec's
type registry starts from; a new event goes in its domain module's tuple, which is spliced in below.
"""

from __future__ import annotations

from logwright.core.events.acls import ACL_EVENT_TYPES, AclsCreated, AclsDeleted
from logwright.core.events.backlog import BACKLOG_EVENT_TYPES, BacklogEvicted
from logwright.core.events.base import PLUGIN_EVENT_TAGS, ConfigChanges, ConfigEntries, Event
from logwright.core.events.clock import CLOCK_EVENT_TYPES, ManualClockSet
from logwright.core.events.consumer_groups import (
    CONSUMER_GROUP_EVENT_TYPES,
    ConsumerGroupEpochBumped,
    ConsumerGroupEvent,
    ConsumerMemberLeft,
    ConsumerMemberReconciled,
    ConsumerMemberSubscribed,
    ConsumerStaticMemberReplaced,
    ConsumerTargetAssignmentComputed,
)
from logwright.core.events.cursors import (
    CURSOR_EVENT_TYPES,
    CursorEvent,
    DeadLetterDeferred,
    DeadLettered,
    LockExpired,
    LockRenewed,
    MovedToRetry,
    RecordsAcked,
    RecordsAcquired,
    RecordsRejected,
    RecordsReleased,
    SubscriptionCreated,
    SubscriptionDeleted,
)
from logwright.core.events.groups import (
    GROUP_EVENT_TYPES,
    AssignmentsSynced,
    GenerationStarted,
    GroupDeleted,
    MemberJoined,
    MemberLeft,
    OffsetCommitted,
    OffsetDeleted,
    RebalanceStarted,
    StaticMemberReplaced,
)
from logwright.core.events.log import (
    LOG_EVENT_TYPES,
    ConfigChanged,
    DelayedRecordsIndexed,
    LogTruncated,
    PartitionsCreated,
    ProducerIdAllocated,
    RecordsAppended,
    TopicCreated,
    TopicDeleted,
)
from logwright.core.events.share_groups import (
    SHARE_GROUP_EVENT_TYPES,
    SWITCH_DELAY_EVENT_TYPES,
    ShareGroupCreated,
    ShareGroupDeleted,
    ShareGroupEvent,
    ShareMemberAssigned,
    ShareMemberJoined,
    ShareMemberLeft,
    ShareMembershipChanged,
    ShareMemberSubscribed,
    SwitchDelayStarted,
)
from logwright.core.events.transactions import (
    TRANSACTION_EVENT_TYPES,
    GroupAddedToTransaction,
    PartitionsAddedToTransaction,
    TransactionalOffsetCommitted,
    TransactionalProducerInitialized,
    TransactionEnded,
    TransactionMarkerWritten,
)

ALL_EVENT_TYPES: tuple[type[Event], ...] = (
    *LOG_EVENT_TYPES,
    *GROUP_EVENT_TYPES,
    *CLOCK_EVENT_TYPES,
    *CURSOR_EVENT_TYPES,
    *SHARE_GROUP_EVENT_TYPES,
    *SWITCH_DELAY_EVENT_TYPES,
    *TRANSACTION_EVENT_TYPES,
    *CONSUMER_GROUP_EVENT_TYPES,
    *ACL_EVENT_TYPES,
    *BACKLOG_EVENT_TYPES,
)
"""Every core event class; each tag once, all below `PLUGIN_EVENT_TAGS`."""

__all__ = [
    "ALL_EVENT_TYPES",
    "PLUGIN_EVENT_TAGS",
    "ConfigChanges",
    "ConfigEntries",
    "Event",
    "TopicCreated",
    "PartitionsCreated",
    "TopicDeleted",
    "ConfigChanged",
    "DelayedRecordsIndexed",
    "RecordsAppended",
    "LogTruncated",
    "ProducerIdAllocated",
    "OffsetCommitted",
    "OffsetDeleted",
    "GroupDeleted",
    "RebalanceStarted",
    "MemberJoined",
    "MemberLeft",
    "GenerationStarted",
    "AssignmentsSynced",
    "StaticMemberReplaced",
    "ManualClockSet",
    "CursorEvent",
    "SubscriptionCreated",
    "RecordsAcquired",
    "RecordsAcked",
    "RecordsReleased",
    "RecordsRejected",
    "LockExpired",
    "LockRenewed",
    "SubscriptionDeleted",
    "DeadLetterDeferred",
    "DeadLettered",
    "MovedToRetry",
    "ShareGroupEvent",
    "ShareMemberJoined",
    "ShareMemberSubscribed",
    "ShareMemberAssigned",
    "ShareMemberLeft",
    "ShareMembershipChanged",
    "ShareGroupCreated",
    "ShareGroupDeleted",
    "SwitchDelayStarted",
    "TransactionalProducerInitialized",
    "PartitionsAddedToTransaction",
    "GroupAddedToTransaction",
    "TransactionalOffsetCommitted",
    "TransactionMarkerWritten",
    "TransactionEnded",
    "ConsumerGroupEvent",
    "ConsumerMemberSubscribed",
    "ConsumerGroupEpochBumped",
    "ConsumerTargetAssignmentComputed",
    "ConsumerMemberReconciled",
    "ConsumerMemberLeft",
    "ConsumerStaticMemberReplaced",
    "AclsCreated",
    "AclsDeleted",
    "BacklogEvicted",
]
