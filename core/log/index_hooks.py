"""What the index hooks give a plugin: a change being staged, and an acquisition asking what is held back.

``logwright_derive_events`` sees every `StagedChange` (events, and record batches being appended) and may
return events of its own for the same WriteBatch: an index kept beside the log stays exactly as durable as
the records it describes. ``logwright_hold_back`` answers a `HoldBackQuery` from every consumption mode that
acquires records one by one (share groups, logwright subscriptions, Pop) with a `HeldBack`: offsets that may
not be handed out yet and when they may be, which the asking coordinator's timer waits for.

Both carry ``rows(projection)`` (a projection's live state, read-only) and ``memo``, a dictionary the
broker keeps for plugins' derived caches (key it by the plugin's name) and empties whenever the store
reloads its state from disk, so a cache never outlives the state it was derived from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Sized
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypeVar

from logwright.core.events import Event
from logwright.core.log.delayed_view import HeldSpan
from logwright.core.log.record_keys import KeyedRecord
from logwright.core.rangeset import RangeSet


class AppendedBatch(NamedTuple):
    """One record batch being appended (a producer's, a dead-letter or retry copy), its offsets assigned.

    A named tuple, not a frozen dataclass: one is built for every batch of every produce request, and a frozen
    dataclass of ten fields took 1.7 us to build, a named tuple 0.4."""

    topic: str
    partition_index: int
    partition_id: int
    base_offset: int
    record_count: int
    compressed: bool
    control: bool
    """A transaction marker: no user records."""
    topic_config: Callable[[str], str | None]
    """The topic's effective config value (plugin keys included); ``None`` for an unknown key."""
    contains: Callable[[bytes], bool]
    """Whether the stored bytes contain a byte string: a few microseconds, no decoding. Always false for
    what a compressed batch hides."""
    headers_contain: Callable[[bytes], bool]
    """Whether the records' headers may contain a byte string: never false when one does, possibly true when only
    a key or value does (it searches every byte of a batch of small records, and only the headers of a batch of
    large ones, skipping their values). Always false for what a compressed batch hides."""
    records: Callable[[bool], tuple[KeyedRecord, ...]]
    """``records(open_compressed)``: the batch's records, values left out (`record_keys`; a compressed batch
    only if asked: it costs a decompression); ``()`` if they cannot be read (the batch passed its CRC: its
    consumers judge it)."""


@dataclass(frozen=True, slots=True)
class StagedChange:
    """Events and record batches the broker is staging now, all going into one WriteBatch."""

    events: Sequence[Event]
    batches: Sequence[AppendedBatch]
    now_ms: int
    """The broker clock: the append time of the batches."""
    log_start_offset: Callable[[int], int | None]
    """A partition's log start offset by partition id; ``None`` for a partition that no longer exists."""
    rows: Callable[[str], Mapping[str, Any]]
    memo: dict[str, Any]


@dataclass(frozen=True, slots=True)
class HoldBackQuery:
    """A consumption mode about to acquire records of ``first..last`` (inclusive) on one partition."""

    partition_id: int
    first: int
    last: int
    now_ms: int
    in_order: bool
    """The mode delivers in offset order with cumulative acknowledgement (Exclusive, Failover): Pulsar
    delivers delayed records at once to those, and the built-in plugin holds nothing back for them."""
    detailed: bool
    """Spans with each offset's time are wanted (InspectCursor); an acquisition needs only the offsets and
    the earliest time, which is what an answer must always give."""
    rows: Callable[[str], Mapping[str, Any]]
    memo: dict[str, Any]


@dataclass(frozen=True, slots=True)
class HeldBack:
    """Offsets a plugin holds back, the earliest time one of them may go (the asking coordinator's timer waits
    for it), and, when the query was ``detailed``, spans with each offset's time (offset order)."""

    offsets: RangeSet = RangeSet()
    next_due_ms: int | None = None
    spans: tuple[HeldSpan, ...] = ()

    @classmethod
    def of(cls, spans: tuple[HeldSpan, ...]) -> HeldBack:
        return cls(RangeSet.from_ranges((span.first, span.last) for span in spans),
                   min((span.until_ms for span in spans), default=None), spans)

    def merged(self, other: HeldBack) -> HeldBack:
        """Two plugins' answers: the union of offsets (one held by both goes once neither holds it: the
        coordinator asks again at the earlier time)."""
        dues = [due for due in (self.next_due_ms, other.next_due_ms) if due is not None]
        return HeldBack(self.offsets.union(other.offsets), min(dues, default=None),
                        tuple(sorted((*self.spans, *other.spans), key=lambda span: (span.first, span.until_ms))))


_Batch = TypeVar("_Batch")


class EventDerivation(Protocol):
    """The plugins' ``logwright_derive_events``, as the broker asks them (`logwright.plugins.event_deriver`)."""

    def derive(self, events: Sequence[Event], batches: Sequence[_Batch],
               view: Callable[[Sequence[Event], Sequence[_Batch]], StagedChange],
               rows: Callable[[str], Sized] | None = None) -> list[Event]:
        """What the implementations ``events`` and ``batches`` concern derive from them; ``view`` builds the
        `StagedChange` they are asked with, only when one is concerned; ``rows`` (a projection's rows) lets those
        that derive only from a projection's rows be left out while it is empty."""
        ...
