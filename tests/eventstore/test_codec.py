"""The event and state codec: every registered type round-trips with generated values; damage is CorruptState;
the type registry refuses tag clashes and events outside their tag range when it is built."""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from logwright.core.cursors.cursor import CursorState
from logwright.core.errors import CorruptState
from logwright.core.events import (
    ALL_EVENT_TYPES,
    PLUGIN_EVENT_TAGS,
    Event,
    GroupDeleted,
    OffsetCommitted,
    RecordsAppended,
    SubscriptionCreated,
)
from logwright.core.flat_sequence import FlatSequence
from logwright.core.groups.group_offsets import CommittedPartitions, OffsetsHead
from logwright.core.log.producers import BatchSequence, ProducerState, RecentBatches
from logwright.core.rangeset import RangeSet
from logwright.core.transactions.partition_transactions import (
    AbortedTransaction,
    AbortedTransactions,
    PartitionTransactions,
)
from logwright.core.transactions.pending_offsets import PendingOffsets
from logwright.core.transactions.transactions import TransactionState
from logwright.eventstore.codec import STATE_TYPES, TypeRegistry, default_registry, event_tag

CODEC = default_registry()
I64 = st.integers(-(2**63), 2**63 - 1)


def strategy_for(hint: Any) -> st.SearchStrategy[Any]:
    """Values of a field's type, built from the dataclasses' own annotations so new fields are covered."""
    if hint is int:
        return I64
    if hint is bool:
        return st.booleans()
    if hint is float:  # quota values: finite doubles (NaN never equals itself, and Kafka refuses it)
        return st.floats(allow_nan=False)
    if hint is str:
        return st.text(max_size=20)
    if hint is bytes:
        return st.binary(max_size=20)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(st.none() if arg is type(None) else strategy_for(arg) for arg in args))
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(strategy_for(args[0]), max_size=3).map(tuple)
        return st.tuples(*(strategy_for(arg) for arg in args))
    if dataclasses.is_dataclass(hint) or hint in (CommittedPartitions, PendingOffsets) or (
            isinstance(hint, type) and issubclass(hint, FlatSequence)):
        return instances(hint)
    raise AssertionError(f"no strategy for {hint!r}: teach strategy_for about it")


def instances(cls: type[Any]) -> st.SearchStrategy[Any]:
    if cls is CommittedPartitions:  # stored as its sorted pairs: build it from any (topic, partition)
        return st.lists(st.tuples(st.text(max_size=5), st.integers(0, 2**31 - 1)), max_size=4).map(CommittedPartitions)
    if cls is PendingOffsets:  # stored as its sorted commits: build it from any commits
        return st.lists(instances(OffsetCommitted), max_size=4).map(PendingOffsets)
    if issubclass(cls, FlatSequence):  # stored as flat integers: build it from any entries
        return st.lists(instances(cls.ENTRY), max_size=4).map(cls)
    if cls is RangeSet:
        return st.lists(st.tuples(I64, st.integers(0, 5)), max_size=4).map(
            lambda spans: RangeSet.of(n for start, width in spans for n in range(start, min(start + width, 2**63))))
    hints = typing.get_type_hints(cls)
    return st.builds(cls, **{field.name: strategy_for(hints[field.name]) for field in dataclasses.fields(cls)})


def test_every_event_type_and_state_type_is_registered_under_a_unique_tag_below_the_plugin_range() -> None:
    tags = [cls.TAG for cls in ALL_EVENT_TYPES]
    assert len(set(tags)) == len(tags)
    assert set(CODEC.event_types()) == set(ALL_EVENT_TYPES)
    assert not set(tags) & set(STATE_TYPES)
    assert 0 < min(tags) and max(tags) < PLUGIN_EVENT_TAGS.start
    assert not set(STATE_TYPES) & set(PLUGIN_EVENT_TAGS)


@pytest.mark.parametrize("cls", ALL_EVENT_TYPES, ids=lambda cls: cls.__name__)
@settings(max_examples=60, deadline=None)  # a wall-clock deadline fails on a busy 2-core machine
@given(data=st.data(), time_ms=I64)
def test_events_round_trip(cls: type[Event], data: st.DataObject, time_ms: int) -> None:
    event = data.draw(instances(cls))
    assert CODEC.decode_event(CODEC.encode_event(time_ms, event), "test") == (time_ms, event)
    assert CODEC.decode(CODEC.encode(event), "test") == event
    assert event_tag(CODEC.encode_event(time_ms, event)) == cls.TAG, "read from the first bytes, whatever the time"


@pytest.mark.parametrize("tag", [1, 127, 128, 255, 256, 999, 10_000, 19_999])
@pytest.mark.parametrize("time_ms", [0, 5, 127, -1, -33, 200, 70_000, 2**31, 2**40, -(2**40), 2**63 - 1])
def test_an_events_tag_is_read_from_its_first_bytes_in_every_integer_format(tag: int, time_ms: int) -> None:
    encoded = msgpack.packb([time_ms, tag, 1, "field"])
    assert event_tag(encoded) == tag
    assert event_tag(msgpack.packb([time_ms, tag, 1, *range(20)])) == tag, "a longer array header"


@pytest.mark.parametrize("data", [b"", b"\x93", b"\x93\x00", b"\xc1\x00\x05", b"\x93\xc1\x05\x01",
                                  b"\x93\x00\xce\x00\x00\x00\x01", b"\x93\x00\xcd\x01", b"\x93\x00\xe0\x01"])
def test_bytes_that_do_not_start_as_an_event_give_no_tag(data: bytes) -> None:
    """The caller decodes those in full, which names what is wrong with them."""
    assert event_tag(data) is None


@pytest.mark.parametrize("cls", list(STATE_TYPES.values()), ids=lambda cls: cls.__name__)
@settings(max_examples=60, deadline=None)  # a wall-clock deadline fails on a busy 2-core machine
@given(data=st.data())
def test_states_round_trip(cls: type[Any], data: st.DataObject) -> None:
    state = data.draw(instances(cls))
    decoded = CODEC.decode(CODEC.encode(state), "test")
    assert decoded == state
    assert type(decoded) is cls


@pytest.mark.parametrize(
    "value", [b"", b"\xc1", b"\x93\x01\x02", b"\x92\xcd\x03\xe9\x01", b"\xff" * 9, b"\x91\x00"],
    ids=["empty", "never-used-byte", "unknown-tag", "wrong-field-count", "junk", "tag-zero"],
)
def test_undecodable_bytes_raise_corrupt_state_naming_where(value: bytes) -> None:
    with pytest.raises(CorruptState, match="at the-place"):
        CODEC.decode(value, "the-place")
    with pytest.raises(CorruptState, match="at the-place"):
        CODEC.decode_event(value, "the-place")


@given(st.one_of(st.integers(max_value=-(2**63) - 1), st.integers(min_value=2**64), I64))
def test_integers_past_msgpacks_range_round_trip_in_states_and_events(value: int) -> None:
    """Kafka's int64 fields take any value and a state derived from one may step past it (a share group started at
    -2**63 settles up to -2**63 - 1): such a state failed its commit, and the store had to reopen (fuzz seed 202)."""
    cursor = CursorState("g", "t", 3, value)
    assert CODEC.decode(CODEC.encode(cursor), "test") == cursor
    event = SubscriptionCreated("g", 3, "t", value)
    assert CODEC.decode_event(CODEC.encode_event(5, event), "test") == (5, event)


def test_a_state_is_not_an_event() -> None:
    with pytest.raises(CorruptState, match="is not an event"):
        CODEC.decode_event(CODEC._packer.pack([0, *CODEC._as_list(RangeSet.of([1]))]), "x")


def test_unregistered_types_are_refused_when_encoding() -> None:
    @dataclass(frozen=True)
    class Stranger:
        value: int

    with pytest.raises(TypeError, match="register it"):
        CODEC.encode(Stranger(1))


@dataclass(frozen=True, slots=True)
class Renamed(Event):
    TAG: ClassVar[int] = 7_001
    name: str


@dataclass(frozen=True, slots=True)
class RenamedV2(Event):
    """Version 2 split ``name`` into two fields; version 1 logs stay readable."""

    TAG: ClassVar[int] = 7_001
    VERSION: ClassVar[int] = 2
    first: str
    last: str

    @staticmethod
    def upgrade_fields(version: int, fields: list[Any]) -> list[Any]:
        first, _, last = fields[0].partition(" ")
        return [first, last]


def registry_with(*classes: type[Any]) -> TypeRegistry:
    registry = default_registry()
    registry.register_all(classes)
    return registry


def test_an_older_version_is_upgraded_when_read() -> None:
    old = registry_with(Renamed).encode_event(5, Renamed("Ada Lovelace"))
    assert registry_with(RenamedV2).decode_event(old, "x") == (5, RenamedV2("Ada", "Lovelace"))


def test_a_newer_version_than_this_build_reads_is_corrupt() -> None:
    new = registry_with(RenamedV2).encode_event(5, RenamedV2("Ada", "Lovelace"))
    with pytest.raises(CorruptState, match="version 2 cannot be read"):
        registry_with(Renamed).decode_event(new, "x")


def test_a_tag_cannot_be_taken_twice() -> None:
    with pytest.raises(ValueError, match="taken by"):
        registry_with(Renamed).register(RenamedV2)
    with pytest.raises(ValueError, match="positive tag"):
        TypeRegistry().register(Event)


def test_a_records_appended_stays_small() -> None:
    encoded = CODEC.encode_event(1_700_000_000_000, RecordsAppended(3, 1_000_000, 500, 1 << 20, 1_700_000_000_000))
    assert len(encoded) < 40
    assert len(CODEC.encode_event(0, OffsetCommitted("group", "topic", 0, 1))) < 30


@dataclass(frozen=True, slots=True)
class PluginTally(Event):
    TAG: ClassVar[int] = 10_001
    name: str


@dataclass(frozen=True, slots=True)
class OtherPluginTally(Event):
    TAG: ClassVar[int] = 10_001
    count: int


@dataclass(frozen=True, slots=True)
class StrayPluginEvent(Event):
    TAG: ClassVar[int] = 5
    name: str


@dataclass(frozen=True, slots=True)
class CoreEventInPluginRange(Event):
    TAG: ClassVar[int] = 12_345
    name: str


def test_plugin_events_in_their_range_are_read_and_written() -> None:
    registry = default_registry()
    registry.register_events([PluginTally, OffsetCommitted], plugin=True)  # a core event a plugin also folds
    assert registry.decode_event(registry.encode_event(5, PluginTally("x")), "x") == (5, PluginTally("x"))
    assert PluginTally in registry.event_types()


def test_two_plugin_events_with_one_tag_are_refused_naming_both() -> None:
    registry = default_registry()
    registry.register_events([PluginTally], plugin=True)
    with pytest.raises(ValueError, match=r"tag 10001 of .*test_codec\.OtherPluginTally is taken by "
                                         r".*test_codec\.PluginTally"):
        registry.register_events([OtherPluginTally], plugin=True)


def test_a_plugin_event_outside_the_plugin_range_is_refused_naming_the_core_event_it_hits() -> None:
    with pytest.raises(ValueError, match=r"plugin event .*StrayPluginEvent has tag 5, outside the tags reserved for "
                                         r"plugin events \(10000-19999\); tag 5 is .*\.RecordsAppended's"):
        default_registry().register_events([StrayPluginEvent], plugin=True)


def test_a_core_event_inside_the_plugin_range_is_refused() -> None:
    with pytest.raises(ValueError, match=r"core event .*CoreEventInPluginRange has tag 12345, inside the tags "
                                         r"reserved for plugin events \(10000-19999\)"):
        default_registry().register_events([CoreEventInPluginRange], plugin=False)


def test_a_core_event_clashing_with_another_is_refused_naming_both() -> None:
    with pytest.raises(ValueError, match=r"tag 5 of .*StrayPluginEvent is taken by .*\.RecordsAppended"):
        default_registry().register_events([StrayPluginEvent], plugin=False)


def test_a_state_type_inside_the_plugin_event_range_or_under_a_second_tag_is_refused() -> None:
    @dataclass(frozen=True, slots=True)
    class PluginState:
        count: int

    registry = default_registry()
    with pytest.raises(ValueError, match=r"state type .*PluginState has tag 10500, inside the tags reserved for "
                                         r"plugin events"):
        registry.register(PluginState, 10_500)
    registry.register(PluginState, 2_000)
    with pytest.raises(ValueError, match=r"PluginState is registered under tag 2000, not also 2001"):
        registry.register(PluginState, 2_001)


def test_a_group_offsets_head_is_stored_as_its_sorted_partitions() -> None:
    """Plain msgpack (`codec_plain`), sorted whatever order the set was built in, so equal heads store equal bytes."""
    registry = default_registry()
    pairs = (("a", 2), ("a", 10), ("b", 0))
    head = OffsetsHead(CommittedPartitions(reversed(pairs)))
    assert registry.encode(head) == msgpack.packb([1012, 1, pairs])
    decoded = registry.decode(registry.encode(head), "test")
    assert decoded == head and tuple(decoded.partitions) == pairs


def test_a_transactions_pending_offsets_are_stored_sorted_and_read_in_the_order_stored_before() -> None:
    """The latest commit per group and partition, sorted by them whatever order they came in, so equal states store
    equal bytes; a store written before kept the commits as a tuple in commit order, and reads as the same state."""
    registry = default_registry()
    late, early = OffsetCommitted("g", "t", 1, 5), OffsetCommitted("g", "t", 0, 7)
    state = TransactionState("tx", 0, 0, 60_000, pending_offsets=PendingOffsets((late, early)))
    encoded = registry.encode(state)
    decoded = registry.decode(encoded, "test")
    assert decoded == state and tuple(decoded.pending_offsets) == (early, late)
    assert registry.encode(TransactionState("tx", 0, 0, 60_000, pending_offsets=PendingOffsets((early, late)))) == (
        encoded)
    stored_before = dataclasses.replace(state)
    object.__setattr__(stored_before, "pending_offsets", (late, early))  # what the state held: a tuple
    before = registry.decode(registry.encode(stored_before), "test")
    assert before == state and isinstance(before.pending_offsets, PendingOffsets)


def test_a_transaction_state_of_version_1_has_no_previous_producer_id() -> None:
    """A transactional id's row written before transaction version 2 (11 fields) reads with no producer id it moved
    from; the current version writes the twelfth."""
    registry = default_registry()
    state = TransactionState("tx", 3, 2, 60_000, 1, "CompleteCommit", (), (), PendingOffsets(()), 10, 20)
    encoded = registry.encode(state)
    tag, version, *fields = msgpack.unpackb(encoded)  # nested values stay extension bytes
    assert (version, fields[-1]) == (2, -1)
    older = msgpack.packb([tag, 1, *fields[:-1]])
    assert registry.decode(older, "test") == state


def test_a_group_deleted_event_of_version_1_names_no_partitions() -> None:
    registry = default_registry()
    old = msgpack.packb([5, GroupDeleted.TAG, 1, "g"])
    assert registry.decode_event(old, "test") == (5, GroupDeleted("g", ()))
    assert registry.decode_event(registry.encode_event(5, GroupDeleted("g", (("t", 1),))), "test") == (
        5, GroupDeleted("g", (("t", 1),)))


def test_aborted_transactions_are_stored_as_flat_integers_and_read_as_stored_before() -> None:
    """A dataclass per aborted transaction made a 50,000-entry row take 64 ms to encode, at every abort."""
    registry = default_registry()
    aborted = (AbortedTransaction(7, 0, 1), AbortedTransaction(2**40, 2, 9))
    state = PartitionTransactions((), AbortedTransactions(aborted))
    encoded = registry.encode(state)
    assert msgpack.unpackb(encoded)[2:] == [[], [7, 0, 1, 2**40, 2, 9]]
    decoded = registry.decode(encoded, "test")
    assert decoded == state and tuple(decoded.aborted) == aborted
    stored_before = PartitionTransactions()
    object.__setattr__(stored_before, "aborted", aborted)  # what the state held: a tuple of dataclasses
    before = registry.decode(registry.encode(stored_before), "test")
    assert before == state and isinstance(before.aborted, AbortedTransactions)


def test_a_producers_recent_batches_are_stored_as_flat_integers_and_read_as_stored_before() -> None:
    """The row is written on every idempotent batch: its five dataclasses took 6 us to encode, flat 0.5."""
    registry = default_registry()
    recent = (BatchSequence(0, 29, 100), BatchSequence(30, 2**31 - 1, 2**40))
    state = ProducerState(3, RecentBatches(recent))
    encoded = registry.encode(state)
    assert msgpack.unpackb(encoded)[2:] == [3, [0, 29, 100, 30, 2**31 - 1, 2**40], -1, -1]  # no timestamp, no marker
    decoded = registry.decode(encoded, "test")
    assert decoded == state and tuple(decoded.recent) == recent and decoded.recent[-1].last_sequence == 2**31 - 1
    stored_before = ProducerState(3)
    object.__setattr__(stored_before, "recent", recent)  # what the state held: a tuple of dataclasses
    before = registry.decode(registry.encode(stored_before), "test")
    assert before == state and isinstance(before.recent, RecentBatches)
    assert ProducerState(3, recent) == state, "built from a tuple, as from the row"  # type: ignore[arg-type]


def test_a_consumer_member_written_before_classic_members_reads_as_a_consumer_protocol_one() -> None:
    """``ConsumerMemberSubscribed`` and the ``ConsumerMember`` row gained a classic member's session timeout and
    protocols in version 2: version 1 entries (written as msgpack lists without them) read with their defaults."""
    from logwright.core.consumer_groups.consumer_groups import ConsumerMember
    from logwright.core.events.consumer_groups import ConsumerMemberSubscribed

    event = ConsumerMemberSubscribed("g", "m", None, None, "client", "/host", 30_000, None, ("orders",), None)
    current = msgpack.unpackb(CODEC.encode_event(5, event), use_list=True)
    time_ms, tag, version, *fields = current
    assert (version, fields[-2:]) == (2, [None, []])
    old = msgpack.packb([time_ms, tag, 1, *fields[:-2]])
    assert CODEC.decode_event(old, "x") == (5, event)

    member = ConsumerMember("m", None, None, "client", "/host", 30_000, None, ("orders",), None)
    tag, version, *fields = msgpack.unpackb(CODEC.encode(member), use_list=True)
    assert CODEC.decode(msgpack.packb([tag, 1, *fields[:-2]]), "x") == member
    assert not member.uses_classic_protocol
