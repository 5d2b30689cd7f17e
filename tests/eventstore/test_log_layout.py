"""Old data directories must open: every core event keeps its tag, version and field order, and a few
events written by this layout decode to the same values (golden bytes)."""

from __future__ import annotations

import dataclasses

import msgpack
import pytest
from logwright.core.acls.bindings import AclBinding
from logwright.core.cursors.subscription_mode import Membership
from logwright.core.events import (
    ALL_EVENT_TYPES,
    AclsCreated,
    ClientQuotasAltered,
    ConsumerMemberLeft,
    ConsumerTargetAssignmentComputed,
    DelegationTokenCreated,
    DelegationTokenRemoved,
    DelegationTokenRenewed,
    Event,
    FeatureLevelsUpdated,
    GenerationStarted,
    ManualClockSet,
    OffsetCommitted,
    RecordsAcquired,
    RecordsAppended,
    ScramCredential,
    SwitchDelayStarted,
    TopicCreated,
    TransactionalOffsetCommitted,
    TransactionEnded,
    TransactionMarkerWritten,
    UserScramCredentialsAltered,
)
from logwright.core.quotas.entities import QuotaAlteration
from logwright.eventstore.codec import default_registry

CODEC = default_registry()

LAYOUT: dict[int, tuple[str, str]] = {
    1: ("TopicCreated", "topic topic_id partition_ids configs"),
    2: ("PartitionsCreated", "topic partition_ids"),
    3: ("TopicDeleted", "topic topic_id partition_ids"),
    4: ("ConfigChanged", "resource_type resource_name changes"),
    5: ("RecordsAppended", "partition_id base_offset record_count byte_size max_timestamp producer_id producer_epoch "
                           "base_sequence transactional"),
    6: ("LogTruncated", "partition_id log_start_offset removed_batches removed_bytes reason"),
    7: ("OffsetCommitted", "group topic partition offset leader_epoch metadata commit_time_ms "
                           "expire_time_ms"),  # version 2 added expire_time_ms
    8: ("OffsetDeleted", "group topic partition"),
    9: ("GroupDeleted", "group partitions"),  # version 2 added partitions
    10: ("ProducerIdAllocated", "producer_id producer_epoch transactional_id"),
    11: ("ManualClockSet", "now_ms"),
    12: ("DelayedRecordsIndexed", "partition_id appended_at_ms entries own_row"),
    13: ("DelayedRecordsDropped", "partition_id rows"),
    14: ("ProducerStatesExpired", "partition_id producer_ids"),
    15: ("FeatureLevelsUpdated", "levels epoch"),
    20: ("RebalanceStarted", "group reason"),
    21: ("MemberJoined", "group member_id group_instance_id client_id client_host session_timeout_ms "
                         "rebalance_timeout_ms protocol_type protocols"),
    22: ("MemberLeft", "group member_id reason"),
    26: ("MembersLeft", "group member_ids reason"),
    27: ("EmptyGroupConverted", "group to at_ms"),  # version 2 added at_ms
    28: ("ClassicGroupUpgraded", "group generation at_ms"),
    29: ("ConsumerGroupDowngraded", "group generation at_ms"),
    23: ("GenerationStarted", "group generation protocol_name leader at_ms"),  # version 2 added at_ms
    24: ("AssignmentsSynced", "group generation assignments"),
    25: ("StaticMemberReplaced", "group group_instance_id old_member_id new_member_id"),
    30: ("SubscriptionCreated", "subscription partition_id topic start_offset"),
    31: ("RecordsAcquired", "subscription partition_id consumer ranges lock_deadline_ms"),
    32: ("RecordsAcked", "subscription partition_id consumer ranges cumulative"),
    33: ("RecordsReleased", "subscription partition_id consumer ranges available_at_ms delivery_uncounted"),
    34: ("RecordsRejected", "subscription partition_id consumer ranges reason"),
    35: ("LockExpired", "subscription partition_id ranges available_at_ms"),
    36: ("LockRenewed", "subscription partition_id consumer ranges lock_deadline_ms"),
    37: ("SubscriptionDeleted", "subscription partition_id"),
    38: ("DeadLettered", "subscription partition_id consumer deliveries reason time_ms dead_letter_topic "
                         "dead_letter_partition_id dead_letter_base_offset"),
    39: ("MovedToRetry", "subscription partition_id consumer offset reconsume_times delay_ms time_ms retry_topic "
                         "retry_partition_id retry_offset"),
    40: ("DeadLetterDeferred", "subscription partition_id consumer deliveries reason time_ms dead_letter_topic error "
                               "available_at_ms"),
    50: ("ShareMemberJoined", "group_id member_id client_id client_host rack_id subscribed_topics lock_duration_ms"),
    51: ("ShareMemberSubscribed", "group_id member_id subscribed_topics"),
    52: ("ShareMemberAssigned", "group_id member_id member_epoch assignment"),
    53: ("ShareMemberLeft", "group_id member_id reason"),
    54: ("ShareMembershipChanged", "group_id member_id membership"),
    55: ("ShareGroupCreated", "group_id member_id"),
    56: ("ShareGroupDeleted", "group_id member_id"),
    60: ("TransactionalProducerInitialized",
         "transactional_id producer_id producer_epoch timeout_ms previous_epoch now_ms"),
    61: ("PartitionsAddedToTransaction", "transactional_id producer_id producer_epoch partition_ids now_ms"),
    62: ("GroupAddedToTransaction", "transactional_id producer_id producer_epoch group now_ms"),
    63: ("TransactionalOffsetCommitted", "transactional_id producer_id producer_epoch commit"),
    64: ("TransactionMarkerWritten", "partition_id offset producer_id producer_epoch committed first_offset "
                                     "last_stable_offset coordinator_epoch"),  # VERSION 3
    65: ("TransactionEnded", "transactional_id producer_id producer_epoch committed reason now_ms next_producer_id"),
    66: ("TransactionalIdsExpired", "transactional_ids producer_ids"),
    70: ("ConsumerMemberSubscribed", "group_id member_id instance_id rack_id client_id client_host "
                                     "rebalance_timeout_ms server_assignor subscribed_topic_names "
                                     "subscribed_topic_regex classic_session_timeout_ms classic_protocols"),
    # version 2 added classic_session_timeout_ms and classic_protocols
    71: ("ConsumerGroupEpochBumped", "group_id member_id group_epoch subscription_metadata"),
    72: ("ConsumerTargetAssignmentComputed", "group_id member_id assignment_epoch assignor targets computed_at_ms"),
    73: ("ConsumerMemberReconciled", "group_id member_id member_epoch previous_member_epoch state assigned revoking"),
    74: ("ConsumerMemberLeft", "group_id member_id reason"),
    75: ("ConsumerStaticMemberReplaced", "group_id member_id old_member_id"),
    80: ("AclsCreated", "bindings"),
    81: ("AclsDeleted", "bindings"),
    88: ("SwitchDelayStarted", "group_id previous until_ms"),
    90: ("PopCursorCreated", "group partition_id topic start_offset"),
    91: ("CheckpointCreated", "group partition_id consumer offsets next_offset pop_time_ms invisible_time_ms epoch "
                              "orderly"),
    92: ("CheckpointAcked", "group partition_id consumer handles ranges"),
    93: ("InvisibleTimeChanged", "group partition_id consumer offset old_epoch epoch invisible_until_ms"),
    94: ("Revived", "group partition_id offsets revive_time_ms"),
    95: ("PopNacked", "group partition_id consumer offset old_epoch epoch invisible_until_ms"),
    96: ("PopDeadLettered", "group partition_id records reason time_ms dead_letter_topic dead_letter_partition_id "
                            "dead_letter_base_offset"),
    97: ("PopCursorDeleted", "group partition_id reason"),
    98: ("PopDelayed", "group partition_id records time_ms"),
    41: ("PopPositionMoved", "group partition_id offset reason time_ms"),
    42: ("PopEntriesDropped", "group partition_id ranges reason time_ms"),
    100: ("BacklogEvicted", "subscription kind topic partition_id from_offset to_offset records bytes reason"),
    101: ("EvictedCommitRaised", "group topic partition_id requested_offset evicted_to"),
    102: ("EvictionPointLifted", "group topic partition_id evicted_to reason"),
    120: ("PartitionCompacted", "partition_id from_offset to_offset records_removed batches_removed bytes_removed "
                                "cleaned_to next_delete_horizon_ms kept_max_timestamp kept_max_timestamp_offset"),
    110: ("DedupKeysIndexed", "partition_id appended_at_ms expires_at_ms entries"),
    111: ("DuplicateDropped", "partition_id appended_at_ms answered_offset sent_record_count duplicates producer_id "
                              "producer_epoch base_sequence"),
    112: ("DedupKeysExpired", "expired"),
    113: ("ProcessedKeysRecorded", "subscription topic partition_id expires_at_ms keys"),
    114: ("ProcessedDuplicateAcked", "subscription topic partition_id records"),
    115: ("ProcessedKeysExpired", "expired"),
    121: ("ClientQuotasAltered", "alterations"),
    122: ("UserScramCredentialsAltered", "upserted deleted"),
    123: ("DelegationTokenCreated", "token_id owner_type owner_name requester_type requester_name renewers issue_ms "
                                    "expiry_ms max_ms"),
    124: ("DelegationTokenRenewed", "token_id expiry_ms"),
    125: ("DelegationTokenRemoved", "token_id expired_by_request"),
}
"""Tag -> (class, fields in log order) as logs were written when the events were split per domain.
A new event adds a row; a changed row is a log nobody can read without a VERSION bump and upgrade_fields."""


def layout(cls: type[Event]) -> tuple[str, str]:
    return cls.__name__, " ".join(field.name for field in dataclasses.fields(cls))


def test_every_core_event_keeps_its_tag_and_field_order() -> None:
    assert {cls.TAG: layout(cls) for cls in ALL_EVENT_TYPES} == LAYOUT


def test_a_target_assignment_written_before_pacing_reads_as_unpaced() -> None:
    """``computed_at_ms`` was appended (session 80): an event without it decodes with 0, so the group's next change
    is assigned at once."""
    old = msgpack.packb([NOW, 72, 1, "g", "m", 3, "uniform", [["m", [["orders", [0, 1]]]]]], use_bin_type=True)
    _, event = CODEC.decode_event(old, "test")
    assert event == ConsumerTargetAssignmentComputed("g", "m", 3, "uniform", (("m", (("orders", (0, 1)),)),), 0)


NOW = 1_700_000_000_000
GOLDEN: list[tuple[Event, str]] = [
    (TopicCreated("orders", b"\x01" * 16, (0, 1), (("retention.ms", "1000"),)),
     "97cf0000018bcfe568000101a66f7264657273c410010101010101010101010101010101019200019192ac726574656e74696f6e2e6d73"
     "a431303030"),
    (RecordsAppended(3, 1_000, 5, 512, NOW, 7, 0, 40, True),
     "9ccf0000018bcfe56800050103cd03e805cd0200cf0000018bcfe56800070028c3"),
    (OffsetCommitted("g", "orders", 1, 42, 3, "meta", NOW, NOW + 60_000),
     "9bcf0000018bcfe568000702a167a66f7264657273012a03a46d657461cf0000018bcfe56800cf0000018bcfe65260"),
    (GenerationStarted("g", 2, None, None, NOW), "98cf0000018bcfe568001702a16702c0c0cf0000018bcfe56800"),
    (ManualClockSet(1_000), "94cf0000018bcfe568000b01cd03e8"),
    (RecordsAcquired("g", 0, "c1", ((3, 7),), 31_000), "98cf0000018bcfe568001f01a16700a2633191920307cd7918"),
    (TransactionalOffsetCommitted("tx", 9, 1, OffsetCommitted("g", "orders", 0, 5)),
     "97cf0000018bcfe568003f01a274780901c712019a0702a167a66f72646572730005ffc000ff"),
    (ConsumerMemberLeft("g", "m1", "left"), "96cf0000018bcfe568004a01a167a26d31a46c656674"),
    (AclsCreated((AclBinding(2, "orders", 3, "User:alice", "*", 3, 3),)),
     "94cf0000018bcfe56800500191c71d0199cd04380102a66f726465727303aa557365723a616c696365a12a0303"),
    (SwitchDelayStarted("g", Membership("g"), 5_000),
     "96cf0000018bcfe568005801a167c7140195cd041401a16790c7090194cd04120190cdffffcd1388"),
    (FeatureLevelsUpdated((("group.version", 1), ("transaction.version", 1)), 2),
     "95cf0000018bcfe568000f019292ad67726f75702e76657273696f6e0192b37472616e73616374696f6e2e76657273696f6e0102"),
    (TransactionEnded("tx", 9, 32_767, True, "client", NOW, 12),
     "9acf0000018bcfe568004102a2747809cd7fffc3a6636c69656e74cf0000018bcfe568000c"),
    (TransactionMarkerWritten(3, 1_000, 7, 0, False, 990, 995, 5),
     "9bcf0000018bcfe56800400303cd03e80700c2cd03decd03e305"),
    (ClientQuotasAltered((QuotaAlteration((("client-id", "c1"), ("user", "alice")), (("producer_byte_rate", 1024.0),),
                                          ("consumer_byte_rate",)),)),
     "94cf0000018bcfe56800790191c7520195cd04bb019292a9636c69656e742d6964a2633192a475736572a5616c6963659192b270726f64"
     "756365725f627974655f72617465cb409000000000000091b2636f6e73756d65725f627974655f72617465"),
    (UserScramCredentialsAltered((ScramCredential("alice", 1, b"salt", b"\x01" * 4, b"\x02" * 4, 4096),),
                                 (("bob", 2),)),
     "95cf0000018bcfe568007a0191c7210198cd04c401a5616c69636501c40473616c74c40401010101c40402020202cd10009192a3626f6202"),
    (DelegationTokenCreated("tok1", "User", "alice", "User", "alice", (("User", "bob"),), 1, 2, 3),
     "9ccf0000018bcfe568007b01a4746f6b31a455736572a5616c696365a455736572a5616c6963659192a455736572a3626f62010203"),
    (DelegationTokenRenewed("tok1", 5), "95cf0000018bcfe568007c01a4746f6b3105"),
    (DelegationTokenRemoved("tok1", True), "95cf0000018bcfe568007d01a4746f6b31c3"),
]


def test_a_marker_written_before_the_index_of_aborts_reads_as_one_the_partitions_row_keeps() -> None:
    """Version 1 of `TransactionMarkerWritten` (five fields) decodes with neither the first offset nor the last
    stable offset, so the fold keeps its abort in the partition's row, as it did when it was written; version 2 reads
    with the broker's own coordinator epoch (0)."""
    time_ms, marker = CODEC.decode_event(bytes.fromhex("98cf0000018bcfe56800400103cd03e80700c2"), "golden")
    assert (time_ms, marker) == (NOW, TransactionMarkerWritten(3, 1_000, 7, 0, False))
    assert isinstance(marker, TransactionMarkerWritten) and not marker.indexed_abort
    assert CODEC.decode_event(bytes.fromhex("9acf0000018bcfe56800400203cd03e80700c2cd03decd03e3"), "golden") == (
        NOW, TransactionMarkerWritten(3, 1_000, 7, 0, False, 990, 995, 0))  # version 2: the broker's own coordinator


def test_a_transaction_end_written_before_transaction_version_2_keeps_its_producer_id() -> None:
    """Version 1 of `TransactionEnded` (no ``next_producer_id``) reads as an end that keeps the producer id."""
    assert CODEC.decode_event(bytes.fromhex(
        "99cf0000018bcfe568004101a274780901c3a6636c69656e74cf0000018bcfe56800"), "golden") == (
        NOW, TransactionEnded("tx", 9, 1, True, "client", NOW, -1))


def test_offsets_and_generations_written_before_their_times_read_with_none() -> None:
    """Version 1 of `OffsetCommitted` (no expiry time of its own: the broker's retention applies), alone or inside a
    transaction's commit, and of `GenerationStarted` (no time: an Empty group's offsets count from their commits)."""
    assert CODEC.decode_event(bytes.fromhex(
        "9acf0000018bcfe568000701a167a66f7264657273012a03a46d657461cf0000018bcfe56800"), "golden") == (
        NOW, OffsetCommitted("g", "orders", 1, 42, 3, "meta", NOW, -1))
    assert CODEC.decode_event(bytes.fromhex(
        "97cf0000018bcfe568003f01a274780901c71101990701a167a66f72646572730005ffc000"), "golden") == (
        NOW, TransactionalOffsetCommitted("tx", 9, 1, OffsetCommitted("g", "orders", 0, 5)))
    assert CODEC.decode_event(bytes.fromhex("97cf0000018bcfe568001701a16702c0c0"), "golden") == (
        NOW, GenerationStarted("g", 2, None, None, 0))


@pytest.mark.parametrize(("event", "golden"), GOLDEN, ids=[type(event).__name__ for event, _ in GOLDEN])
def test_events_written_before_read_the_same_and_encode_to_the_same_bytes(event: Event, golden: str) -> None:
    assert CODEC.decode_event(bytes.fromhex(golden), "golden") == (NOW, event)
    assert CODEC.encode_event(NOW, event).hex() == golden
