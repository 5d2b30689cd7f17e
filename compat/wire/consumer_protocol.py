"""The consumer protocol embedded in classic group messages: a JoinGroup's subscription, a SyncGroup's assignment.

Read when a classic member joins a consumer group, and when a classic group becomes one (its members' last
subscriptions and assignments); written when such a member syncs.

A classic member of a KIP-848 consumer group sends its subscription as JoinGroup protocol metadata and gets its
assignment as SyncGroup bytes the broker writes (`core.consumer_groups.classic_members`). Both are Kafka's
ConsumerProtocolSubscription / ConsumerProtocolAssignment: an int16 version and the struct of that version. As in
Kafka's ``ConsumerProtocol``, a version above the highest known reads as the highest (newer versions only add
fields at the end) and a negative one does not read. The metadata is a client's bytes: every count in it is checked
against the bytes present before kio reads it (`bounds`).
"""

from __future__ import annotations

import struct
from typing import Any

from kio.schema.consumer_protocol_assignment.v0.data import ConsumerProtocolAssignment as AssignmentV0
from kio.schema.consumer_protocol_assignment.v1.data import ConsumerProtocolAssignment as AssignmentV1
from kio.schema.consumer_protocol_assignment.v2.data import ConsumerProtocolAssignment as AssignmentV2
from kio.schema.consumer_protocol_assignment.v3.data import ConsumerProtocolAssignment as AssignmentV3
from kio.schema.consumer_protocol_subscription.v0.data import ConsumerProtocolSubscription as SubscriptionV0
from kio.schema.consumer_protocol_subscription.v1.data import ConsumerProtocolSubscription as SubscriptionV1
from kio.schema.consumer_protocol_subscription.v2.data import ConsumerProtocolSubscription as SubscriptionV2
from kio.schema.consumer_protocol_subscription.v3.data import ConsumerProtocolSubscription as SubscriptionV3
from kio.serial import entity_reader
from logwright.compat.wire.bounds import check_body
from logwright.core.consumer_groups.classic_members import ClassicSubscription
from logwright.core.consumer_groups.consumer_groups import as_tuple
from logwright.core.events.consumer_groups import TopicPartitions

_SUBSCRIPTIONS: tuple[type[Any], ...] = (SubscriptionV0, SubscriptionV1, SubscriptionV2, SubscriptionV3)
_READERS = [entity_reader(cls) for cls in _SUBSCRIPTIONS]
HIGHEST_ASSIGNMENT_VERSION = 3


def read_subscription(metadata: bytes) -> ClassicSubscription | None:
    """The topics, owned partitions and rack of a ConsumerProtocolSubscription; ``None`` when it does not read."""
    if len(metadata) < 2:
        return None
    (version,) = struct.unpack_from(">h", metadata)
    if version < 0:
        return None
    version = min(version, len(_SUBSCRIPTIONS) - 1)
    try:
        check_body(_SUBSCRIPTIONS[version], metadata, 2)
        subscription, _ = _READERS[version](metadata, 2)
    except Exception:
        return None
    if subscription.topics is None:
        return None
    owned = getattr(subscription, "owned_partitions", ()) or ()
    return ClassicSubscription(
        topics=tuple(subscription.topics),
        owned=as_tuple((part.topic, int(index)) for part in owned for index in part.partitions),
        rack_id=getattr(subscription, "rack_id", None) or None,
    )


def metadata_version(metadata: bytes) -> int:
    """The version a member's subscription was written in (0 when it has none): its assignment is answered in it."""
    if len(metadata) < 2:
        return 0
    version: int = struct.unpack_from(">h", metadata)[0]
    return max(0, min(version, HIGHEST_ASSIGNMENT_VERSION))


def _string(text: str) -> bytes:
    encoded = text.encode()
    return struct.pack(">h", len(encoded)) + encoded


def write_assignment(partitions: TopicPartitions, version: int) -> bytes:
    """A ConsumerProtocolAssignment of ``version`` (every version has the same fields) with no user data."""
    parts = [struct.pack(">hi", version, len(partitions))]
    for topic, indexes in partitions:
        parts.append(_string(topic))
        parts.append(struct.pack(f">i{len(indexes)}i", len(indexes), *indexes))
    parts.append(struct.pack(">i", -1))
    return b"".join(parts)


_ASSIGNMENTS: tuple[type[Any], ...] = (AssignmentV0, AssignmentV1, AssignmentV2, AssignmentV3)
_ASSIGNMENT_READERS = [entity_reader(cls) for cls in _ASSIGNMENTS]


def read_assignment(assignment: bytes) -> tuple[TopicPartitions | None, bool]:
    """The partitions of a ConsumerProtocolAssignment (empty bytes: none yet) and whether it carries user data (a
    custom assignor's, which a consumer group's server-side assignor would drop); ``None`` when it does not read."""
    if not assignment:
        return (), False
    if len(assignment) < 2:
        return None, False
    version: int = struct.unpack_from(">h", assignment)[0]
    if version < 0:
        return None, False
    version = min(version, len(_ASSIGNMENTS) - 1)
    try:
        check_body(_ASSIGNMENTS[version], assignment, 2)
        read, _ = _ASSIGNMENT_READERS[version](assignment, 2)
    except Exception:
        return None, False
    partitions = as_tuple((part.topic, int(index)) for part in read.assigned_partitions for index in part.partitions)
    return partitions, bool(read.user_data)
