"""The event and state codec: msgpack with an extension type for tagged, versioned dataclasses.

A dataclass is written as ``[tag, version, field values...]`` inside msgpack extension 1, so nested
states (a RangeSet inside a cursor) need no schema of their own. Each class carries a stable tag;
events use their ``TAG``, state types are registered here with tags from 1000 up. The registry is built
when a store opens, from `ALL_EVENT_TYPES` and the plugins' classes, and refuses there a tag two classes
claim (naming both), a plugin event outside `PLUGIN_EVENT_TAGS` and a core event or any state type inside
it: a clash found later would be a log nobody can read. A class whose ``VERSION`` grew may define
``upgrade_fields(version, fields) -> fields`` to read older values. An integer outside msgpack's range (-2**63 to
2**64 - 1) is extension 2, its two's-complement bytes: Kafka's int64 fields take any value, and a state derived from
one can step past it (a share group started at offset -2**63 settles everything up to -2**63 - 1).
msgpack is used rather than a hand-written format because its C extension packs a RecordsAppended in
about a microsecond and keeps the log compact.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Iterable
from typing import Any

import msgpack
from logwright.core.acls.bindings import AclBinding
from logwright.core.clock import ManualClockState
from logwright.core.compaction.state import CleanerCheckpoint
from logwright.core.consumer_groups.consumer_groups import ConsumerGroupState, ConsumerMember
from logwright.core.cursors.cursor import CursorState, Delivery, Redelivery
from logwright.core.cursors.dead_letter_history import DeadLetteredSpan, DeadLetterHistory, DeferredSpan
from logwright.core.cursors.key_hash_ranges import HashRange, KeyHashOwnership, OwnedRange
from logwright.core.cursors.subscription_mode import Handover, Membership, ModeConsumer
from logwright.core.errors import CorruptState
from logwright.core.events import ALL_EVENT_TYPES, PLUGIN_EVENT_TAGS, Event
from logwright.core.events.security import ScramCredential
from logwright.core.groups.group_offsets import CommittedOffset, OffsetsHead
from logwright.core.groups.groups import GroupMember, GroupState
from logwright.core.log.catalog import PartitionIdCounter, ResourceConfig, TopicState
from logwright.core.log.delayed_delivery import DelayedIndex
from logwright.core.log.features import FinalizedFeatures
from logwright.core.log.partition_log import PartitionState
from logwright.core.log.producers import BatchSequence, ProducerIdCounter, ProducerState
from logwright.core.quotas.entities import EntityQuotas, QuotaAlteration
from logwright.core.rangeset import RangeSet
from logwright.core.security.delegation_tokens import DelegationToken
from logwright.core.security.scram_credentials import UserCredentials
from logwright.core.share_groups.share_groups import ShareGroupState, ShareMember
from logwright.core.transactions.partition_transactions import (
    AbortedTransaction,
    OpenTransaction,
    PartitionTransactions,
)
from logwright.core.transactions.transactions import TransactionalIdOwner, TransactionState

_DATACLASS_EXT = 1
_BIG_INT_EXT = 2


class TypeRegistry:
    """Tag ↔ class for everything the codec may meet; plugins register their events and states."""

    def __init__(self) -> None:
        self._packer = msgpack.Packer(default=self._default, use_bin_type=True)
        self._by_tag: dict[int, type[Any]] = {}
        self._tag_of: dict[type[Any], int] = {}
        self._fields: dict[type[Any], Callable[[Any], tuple[Any, ...]]] = {}

    def register(self, cls: type[Any], tag: int | None = None) -> None:
        """Learn ``cls`` under ``tag`` (an event's own ``TAG`` by default); a tag names one class for good."""
        tag = tag if tag is not None else int(getattr(cls, "TAG", 0))
        if tag <= 0:
            raise ValueError(f"{cls.__name__} needs a positive tag")
        if tag in self._by_tag and self._by_tag[tag] is not cls:
            raise ValueError(f"tag {tag} of {_qualified(cls)} is taken by {_qualified(self._by_tag[tag])}")
        if self._tag_of.get(cls, tag) != tag:
            raise ValueError(f"{_qualified(cls)} is registered under tag {self._tag_of[cls]}, not also {tag}")
        if tag in PLUGIN_EVENT_TAGS and not issubclass(cls, Event):
            raise ValueError(f"state type {_qualified(cls)} has tag {tag}, inside the tags reserved for plugin "
                             f"events ({_span(PLUGIN_EVENT_TAGS)})")
        self._by_tag[tag] = cls
        self._tag_of[cls] = tag
        names = [field.name for field in dataclasses.fields(cls)]
        getter = operator.attrgetter(*names) if names else (lambda obj: ())
        self._fields[cls] = getter if len(names) != 1 else (lambda obj: (getter(obj),))

    def register_all(self, classes: Iterable[type[Any]]) -> None:
        for cls in classes:
            self.register(cls)

    def register_events(self, classes: Iterable[type[Event]], *, plugin: bool) -> None:
        """Learn core events (tags below `PLUGIN_EVENT_TAGS`) or a plugin's (tags inside it).

        A core event a plugin lists as well (its projection folds it too) is already known and stays so.
        """
        for cls in classes:
            if plugin and self._by_tag.get(cls.TAG) is cls:
                continue
            if plugin and cls.TAG not in PLUGIN_EVENT_TAGS:
                taken = self._by_tag.get(cls.TAG)
                raise ValueError(f"plugin event {_qualified(cls)} has tag {cls.TAG}, outside the tags reserved for "
                                 f"plugin events ({_span(PLUGIN_EVENT_TAGS)})"
                                 + (f"; tag {cls.TAG} is {_qualified(taken)}'s" if taken else ""))
            if not plugin and cls.TAG in PLUGIN_EVENT_TAGS:
                raise ValueError(f"core event {_qualified(cls)} has tag {cls.TAG}, inside the tags reserved for "
                                 f"plugin events ({_span(PLUGIN_EVENT_TAGS)})")
            self.register(cls)

    def event_types(self) -> list[type[Event]]:
        return [cls for cls in self._by_tag.values() if issubclass(cls, Event)]

    def event_tags(self, kinds: Iterable[type[Event]]) -> frozenset[int]:
        """The tags of every registered event type that is one of ``kinds`` or a subclass (as `Projection.handles`
        reads them)."""
        wanted = tuple(kinds)
        return frozenset(tag for tag, cls in self._by_tag.items() if issubclass(cls, Event) and issubclass(cls, wanted))

    def _as_list(self, obj: Any) -> list[Any]:
        cls = type(obj)
        tag = self._tag_of.get(cls)
        if tag is None:
            raise TypeError(f"the codec does not know {cls.__name__}; register it")
        return [tag, getattr(cls, "VERSION", 1), *self._fields[cls](obj)]

    def _default(self, obj: Any) -> Any:
        if type(obj) is int:  # msgpack passes on the integers it cannot write
            return msgpack.ExtType(_BIG_INT_EXT, obj.to_bytes((obj.bit_length() + 8) // 8, "big", signed=True))
        plain = getattr(obj, "codec_plain", None)
        if plain is not None:  # a value type a state holds, stored as plain msgpack (`CommittedPartitions`)
            return plain()
        nested = msgpack.packb(self._as_list(obj), default=self._default, use_bin_type=True)
        return msgpack.ExtType(_DATACLASS_EXT, nested)

    def _ext_hook(self, code: int, data: bytes) -> Any:
        if code == _BIG_INT_EXT:
            return int.from_bytes(data, "big", signed=True)
        if code != _DATACLASS_EXT:
            raise ValueError(f"unknown msgpack extension {code}")
        return self._from_list(msgpack.unpackb(data, ext_hook=self._ext_hook, use_list=False, raw=False))

    def _from_list(self, items: tuple[Any, ...]) -> Any:
        tag, version, *values = items
        cls = self._by_tag.get(tag)
        if cls is None:
            raise ValueError(f"unknown type tag {tag} (written by a newer logwright or a missing plugin?)")
        current = getattr(cls, "VERSION", 1)
        if version != current:
            upgrade = getattr(cls, "upgrade_fields", None)
            if upgrade is None or version > current:
                raise ValueError(f"{cls.__name__} version {version} cannot be read (this build reads {current})")
            values = upgrade(version, values)
        return cls(*values)

    def encode(self, obj: Any) -> bytes:
        """A registered dataclass as a flat ``[tag, version, fields...]`` list."""
        return self._packer.pack(self._as_list(obj))  # type: ignore[no-any-return]

    def decode(self, data: bytes, where: str) -> Any:
        """Decode what `encode` wrote, or raise `CorruptState` naming ``where`` (family and key)."""
        try:
            return self._from_list(msgpack.unpackb(data, ext_hook=self._ext_hook, use_list=False, raw=False))
        except Exception as error:
            raise CorruptState(f"cannot decode the value at {where}: {error}") from error

    def encode_event(self, time_ms: int, event: Event) -> bytes:
        """An event in the log: ``[time, tag, version, fields...]``; about a microsecond for an append."""
        return self._packer.pack([time_ms, *self._as_list(event)])  # type: ignore[no-any-return]

    def decode_event(self, data: bytes, where: str) -> tuple[int, Event]:
        try:
            time_ms, *items = msgpack.unpackb(data, ext_hook=self._ext_hook, use_list=False, raw=False)
            event = self._from_list(tuple(items))
            if not isinstance(event, Event):
                raise ValueError(f"{type(event).__name__} is not an event")
            return int(time_ms), event
        except Exception as error:
            raise CorruptState(f"cannot decode the event at {where}: {error}") from error


_INT_WIDTHS = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8, 0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8}
"""msgpack's integer formats after their first byte: how many bytes of value follow."""


def event_tag(data: bytes) -> int | None:
    """The type tag of an encoded event (``[time, tag, version, fields...]``, as `encode_event` writes it), read
    from its first bytes without decoding the rest; ``None`` when they do not start that way (decode it then).

    A store refolding a few projections reads only the events they fold: decoding every event of a 10 M-event log
    to fold the offsets of a renamed projection took ~50 s, most of them spent on events it then ignored."""
    size = len(data)
    if size < 3:
        return None
    first = data[0]
    position = 1 if 0x90 <= first <= 0x9F else 3 if first == 0xDC else 5 if first == 0xDD else 0
    if position == 0 or position >= size:
        return None
    time_format = data[position]  # the time: any integer format
    if time_format <= 0x7F or time_format >= 0xE0:
        position += 1
    elif time_format in _INT_WIDTHS:
        position += 1 + _INT_WIDTHS[time_format]
    else:
        return None
    if position >= size:
        return None
    tag_format = data[position]  # a tag is positive: a fixint, or an unsigned 8- or 16-bit integer
    if tag_format <= 0x7F:
        return tag_format
    width = {0xCC: 1, 0xCD: 2}.get(tag_format, 0)
    if width == 0 or position + width >= size:
        return None
    return int.from_bytes(data[position + 1:position + 1 + width], "big")


STATE_TYPES: dict[int, type[Any]] = {
    1001: TopicState,
    1002: ResourceConfig,
    1003: PartitionIdCounter,
    1004: PartitionState,
    1005: CommittedOffset,
    1012: OffsetsHead,
    1007: RangeSet,
    1008: BatchSequence,
    1009: ProducerState,
    1010: ProducerIdCounter,
    1011: DelayedIndex,
    1020: GroupState,
    1021: GroupMember,
    1030: CursorState,
    1031: Delivery,
    1032: Redelivery,
    1033: DeadLetterHistory,
    1034: DeadLetteredSpan,
    1035: DeferredSpan,
    1040: HashRange,
    1041: OwnedRange,
    1042: KeyHashOwnership,
    1043: ModeConsumer,
    1044: Membership,
    1050: ShareGroupState,
    1051: ShareMember,
    1060: ManualClockState,
    1070: ConsumerGroupState,
    1071: ConsumerMember,
    1080: AclBinding,
    1088: Handover,
    1160: TransactionState,
    1162: TransactionalIdOwner,
    1163: PartitionTransactions,
    1164: OpenTransaction,
    1165: AbortedTransaction,
    1200: CleanerCheckpoint,
    1210: EntityQuotas,
    1211: QuotaAlteration,
    1220: ScramCredential,
    1221: UserCredentials,
    1222: DelegationToken,
    1230: FinalizedFeatures,
}
"""1006 was a group's whole offset table (projection ``group_offsets``, replaced by ``committed_offsets``): not
reused, so an old row can never decode as something else."""


def default_registry() -> TypeRegistry:
    """The core events and states; a plugin host adds its plugins' classes with `register_events`."""
    registry = TypeRegistry()
    registry.register_events(ALL_EVENT_TYPES, plugin=False)
    for tag, cls in STATE_TYPES.items():
        registry.register(cls, tag)
    return registry


def _qualified(cls: type[Any]) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _span(tags: range) -> str:
    return f"{tags.start}-{tags.stop - 1}"


def event_to_json(event: Event) -> dict[str, Any]:
    """A JSON-friendly view (bytes as hex) for `logwright events --json` and Spark."""
    return {name: _jsonable(getattr(event, name)) for name in (f.name for f in dataclasses.fields(event))}


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, tuple):
        return [_jsonable(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value
