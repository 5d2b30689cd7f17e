"""The pop decisions: given a group's in-flight tables, what a pop, ack, change or nack records.

Commands are functions returning events (or raising a domain error with nothing decided); the coordinator
stages what they return. What a pop serves, in order: revived records that are due, oldest deadline first
across the topic's partitions (RocketMQ draws 1 in 5 at random; here it is deterministic), then new records
partition by partition from a start that rotates with every pop, so no partition is hot or starved. An
orderly pop serves a partition only when nothing of it is in flight, lowest offsets first.
"""

from __future__ import annotations

import heapq
import re
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, islice

from logwright.core.cursors.redelivery_backoff import POLICY_KEY as BACKOFF_POLICY_KEY
from logwright.core.cursors.redelivery_backoff import (
    ROCKETMQ_LEVELS,
    LevelBackoff,
    backoff_from_settings,
    parse_levels,
)
from logwright.core.errors import InvalidConfig, InvalidRecordState, InvalidRequest
from logwright.core.events.pop import (
    CheckpointAcked,
    CheckpointCreated,
    InvisibleTimeChanged,
    PopDeadLettered,
    PopDelayed,
    PopEntriesDropped,
    PopEvent,
    PopNacked,
    PopPositionMoved,
    Revived,
)
from logwright.core.pop.inflight import PAGE_OFFSETS, PopEntry, PopPartition, PopRun, page_of, page_ranges
from logwright.core.pop.receipt_handle import StaleReceiptHandle, UnknownReceiptHandle

MAX_MESSAGES = 32
"""RocketMQ's bound on one pop (more is INVALID_PARAMETER there, INVALID_REQUEST here)."""
MAX_MESSAGES_COMPACT = 1_024
"""The bound on one compact (v1) pop: its answer carries stored batches by reference, not a map and a handle
per record, so what limits a pop is its checkpoint (one event listing the offsets, and the in-flight table it
grows); 1,024 records of a pop are about 3 KiB of event and 32 times fewer round trips than RocketMQ's 32."""
MIN_INVISIBLE_TIME_MS = 10_000
MAX_HANDLES = 1_024
"""Receipt handles one batch ack may carry (32 pops' worth), and compact ack entries one request may carry."""
MAX_INVISIBLE_TIME_MS = 12 * 3_600_000
DEFAULT_INVISIBLE_TIME_MS = 60_000
MAX_LONG_POLL_MS = 20_000
DEFAULT_MAX_RECONSUME_TIMES = 16
MAX_RECONSUME_REASON = "max reconsume times reached"

MAX_RECONSUME_TIMES_KEY = "logwright.pop.max.reconsume.times"
DEAD_LETTER_TOPIC_KEY = "logwright.pop.dead.letter.topic"
INIT_MODE_KEY = "logwright.pop.init.mode"
MAX_IN_FLIGHT_KEY = "logwright.pop.max.in.flight.per.partition"
DEFAULT_MAX_IN_FLIGHT = 20_000
"""The group configs of pop consumption (registered by the built-in plugin ``pop``)."""

_ILLEGAL_IN_TOPIC = re.compile(r"[^a-zA-Z0-9._-]")


def default_dead_letter_topic(group: str) -> str:
    """RocketMQ's ``%DLQ%{group}`` as a legal Kafka topic name: ``DLQ.{group}`` (other characters become ``_``)."""
    return ("DLQ." + _ILLEGAL_IN_TOPIC.sub("_", group))[:249]


def retry_delay_ms(settings: Mapping[str, str], deliveries: int) -> int:
    """How long a record that failed its ``deliveries``-th delivery stays invisible: the next level of the group's
    redelivery backoff policy (``logwright.redelivery.backoff.*``) if it set one, else RocketMQ's default table
    (1 s, 5 s, 10 s, 30 s, 1 m ... 2 h), the first failure waiting the first level."""
    rocketmq = LevelBackoff(parse_levels(ROCKETMQ_LEVELS))
    try:
        backoff = backoff_from_settings(settings) if settings.get(BACKOFF_POLICY_KEY, "none") != "none" else rocketmq
    except InvalidConfig:
        backoff = rocketmq
    return backoff.delay_for(deliveries - 1)


def dead_letter_label(group: str) -> str:
    """RocketMQ's ``%DLQ%{group}``: a label shown in inspection; the copies go to a legal topic name
    (`default_dead_letter_topic`, unless the group or a plugin names another)."""
    return f"%DLQ%{group}"


def retry_topic_label(group: str, topic: str) -> str:
    """RocketMQ's ``%RETRY%{group}_{topic}``: only a label here (revived records are read from their own
    partition, never copied), shown in inspection and on dead-letter copies."""
    return f"%RETRY%{group}_{topic}"


@dataclass(frozen=True, slots=True)
class PopLimits:
    """One pop's checked parameters."""

    max_messages: int
    invisible_time_ms: int
    long_poll_ms: int = 0
    orderly: bool = False
    bound: int = MAX_MESSAGES
    """The most ``max_messages`` may be: `MAX_MESSAGES` (v0), `MAX_MESSAGES_COMPACT` (v1)."""

    def __post_init__(self) -> None:
        if not 1 <= self.max_messages <= self.bound:
            raise InvalidRequest(f"max_messages must be 1 to {self.bound}, got {self.max_messages}")
        if not MIN_INVISIBLE_TIME_MS <= self.invisible_time_ms <= MAX_INVISIBLE_TIME_MS:
            raise InvalidRequest(f"invisible_time_ms must be {MIN_INVISIBLE_TIME_MS} (10 s) to "
                                 f"{MAX_INVISIBLE_TIME_MS} (12 h), got {self.invisible_time_ms}")
        if not 0 <= self.long_poll_ms <= MAX_LONG_POLL_MS:
            raise InvalidRequest(f"long_poll_ms must be 0 to {MAX_LONG_POLL_MS} (20 s), got {self.long_poll_ms}")


def check_changed_invisible_time(invisible_time_ms: int) -> int:
    """A change may shorten to 0 (visible at once, revived by the timer) but not pass the 12 h bound."""
    if not 0 <= invisible_time_ms <= MAX_INVISIBLE_TIME_MS:
        raise InvalidRequest(f"invisible_time_ms must be 0 to {MAX_INVISIBLE_TIME_MS} (12 h), got {invisible_time_ms}")
    return invisible_time_ms


def rotated(count: int, start: int) -> list[int]:
    """Partition indexes ``0..count-1`` visited from ``start`` (mod ``count``), wrapping around."""
    return [(start + step) % count for step in range(count)] if count else []


def due_revivals(states: Sequence[PopPartition], limit: int) -> list[tuple[int, tuple[int, ...]]]:
    """Up to ``limit`` revived records across ``states``, the longest waiting first (by the deadline that revived
    them, then partition order, then offset), grouped by partition in first-served order: ``(position in
    states, offsets)`` (the caller searched ``states`` for each, comparing whole tables).

    Chosen by run: a run's offsets share its deadline and partition, and a partition's runs never overlap, so the
    ``limit`` first runs in (deadline, position, first offset) order hold the answer. Expanding and sorting every
    revived record of the topic for each pop cost seconds once consumers left tens of thousands unacknowledged."""
    waiting = heapq.nsmallest(limit, ((run.invisible_until_ms, position, run.first, run.last)
                                      for position, state in enumerate(states) for run in state.runs if run.visible))
    chosen: dict[int, list[int]] = {}
    left = limit
    for _, position, first, last in waiting:
        taken = min(last - first + 1, left)
        chosen.setdefault(position, []).extend(range(first, first + taken))
        left -= taken
        if not left:
            break
    return [(position, tuple(sorted(offsets))) for position, offsets in chosen.items()]


def first_revived(state: PopPartition, limit: int) -> list[int]:
    """The first ``limit`` revived offsets of a partition, in offset order (an orderly pop serves them first), read
    from its runs without expanding the rest."""
    return list(islice(chain.from_iterable(range(run.first, run.last + 1) for run in state.runs if run.visible),
                       limit))


def orderly_blocked(state: PopPartition) -> bool:
    """An orderly pop skips a partition while anything of it is in flight (RocketMQ's FIFO queue lock)."""
    return state.holds_any()


def checkpoint(state: PopPartition, consumer: str, offsets: Sequence[int], next_offset: int, now_ms: int,
               limits: PopLimits) -> CheckpointCreated | None:
    """One pop of ``offsets`` (revived entries or offsets at or past ``state.next_offset``) under a new epoch;
    ``None`` if there is nothing to record."""
    past = state.last_offset()
    offsets = sorted(offsets)
    fresh = bisect_left(offsets, max(state.next_offset, past + 1))  # from here: new records past every run
    for offset in offsets[:fresh]:
        entry = state.entry(offset)
        if (entry is not None and not entry.visible) or (entry is None and offset < state.next_offset):
            raise ValueError(f"offset {offset} of {state.group}/{state.partition_id} is not available to pop")
    if not offsets and next_offset <= state.next_offset:
        return None
    return CheckpointCreated(state.group, state.partition_id, consumer, tuple(offsets),
                             max(next_offset, state.next_offset), now_ms, limits.invisible_time_ms,
                             state.last_epoch + 1, limits.orderly)


def current(state: PopPartition, offset: int, epoch: int, held: bool = True) -> PopEntry:
    """The entry handle ``(offset, epoch)`` names, if that handle is the current one (and, with ``held``, the
    record is still invisible); `UnknownReceiptHandle` or `StaleReceiptHandle` otherwise."""
    entry = state.entry(offset)
    where = f"offset {offset} of {state.topic} (group {state.group!r})"
    if entry is None:
        settled = ("was acknowledged or dead-lettered (or dropped by a reset or an eviction)"
                   if offset < state.next_offset else "is not in flight (never popped, or dropped by a reset)")
        raise UnknownReceiptHandle(f"unknown receipt handle: {where} {settled}")
    if entry.deliveries == 0:
        raise UnknownReceiptHandle(f"unknown receipt handle: {where} was never popped (its delivery is delayed "
                                   f"until {entry.invisible_until_ms})")
    if epoch > entry.epoch:
        raise UnknownReceiptHandle(f"unknown receipt handle: {where} never had handle epoch {epoch}")
    if epoch < entry.epoch:
        raise StaleReceiptHandle(f"stale receipt handle: {where} is in flight under handle epoch {entry.epoch}, "
                                 f"not {epoch} (its invisible time was changed, or it was nacked or popped again); "
                                 "use the newest handle")
    if held and entry.visible:
        raise StaleReceiptHandle(f"stale receipt handle: the invisible time of {where} ran out at "
                                 f"{entry.invisible_until_ms}; it was revived and will be popped again")
    return entry


def ranges_current(state: PopPartition, epoch: int, ranges: Sequence[tuple[int, int]]
                   ) -> tuple[list[tuple[int, int, int]], list[tuple[int, InvalidRecordState]]]:
    """The ``(first, last, epoch)`` ranges of ``ranges`` whose handles ``(offset, epoch)`` are current (as
    `current` with ``held=False`` takes them), and each other offset with the error `current` gives it; one
    search per range, then a step per run it crosses: a range of 1,024 popped together is one step."""
    accepted: list[tuple[int, int, int]] = []
    refused: list[tuple[int, InvalidRecordState]] = []
    runs = state.runs

    def refuse(first: int, last: int) -> None:
        for offset in range(first, last + 1):
            try:
                current(state, offset, epoch, held=False)
            except (UnknownReceiptHandle, StaleReceiptHandle) as error:
                refused.append((offset, error))
            else:  # pragma: no cover - the walk takes every handle `current` takes
                raise AssertionError(f"offset {offset} epoch {epoch} passed current's check but not the walk's")

    for first, last in ranges:
        position = first
        index = bisect_left(runs, first, key=_last_of)
        while position <= last:
            run = runs[index] if index < len(runs) else None
            if run is None or run.first > last:
                refuse(position, last)
                break
            if run.first > position:
                refuse(position, run.first - 1)
                position = run.first
            end = min(run.last, last)
            if run.epoch == epoch and run.deliveries > 0:
                if accepted and accepted[-1][1] + 1 == position and accepted[-1][2] == epoch:
                    accepted[-1] = (accepted[-1][0], end, epoch)
                else:
                    accepted.append((position, end, epoch))
            else:
                refuse(position, end)
            position = end + 1
            index += 1
    return accepted, refused


def settle(state: PopPartition, consumer: str, ranges: Sequence[tuple[int, int, int]]) -> CheckpointAcked:
    """The event settling the ``(first, last, epoch)`` ``ranges``, already checked (`ranges_current`)."""
    return CheckpointAcked(state.group, state.partition_id, consumer, (), tuple(ranges))


def ack(state: PopPartition, consumer: str, handles: Sequence[tuple[int, int]]) -> CheckpointAcked:
    """Settle each current handle (one of a revived record not yet popped again too: it was processed)."""
    for offset, epoch in handles:
        current(state, offset, epoch, held=False)
    return CheckpointAcked(state.group, state.partition_id, consumer, tuple(handles))


def change_invisible_time(state: PopPartition, consumer: str, offset: int, epoch: int, now_ms: int,
                          invisible_time_ms: int) -> InvisibleTimeChanged:
    """Keep the record invisible ``invisible_time_ms`` from now under a new handle; the old one turns stale."""
    current(state, offset, epoch)
    return InvisibleTimeChanged(state.group, state.partition_id, consumer, offset, epoch, state.last_epoch + 1,
                                now_ms + check_changed_invisible_time(invisible_time_ms))


def exhausted(entry: PopEntry, max_reconsume_times: int) -> bool:
    """Whether a failed delivery of ``entry`` was its last (RocketMQ's maxAttempts = max reconsume times + 1)."""
    return entry.reconsume_times >= max_reconsume_times


def nack(state: PopPartition, consumer: str, offset: int, epoch: int, now_ms: int, delay_ms: int) -> PopNacked:
    """Give the record back as failed: invisible ``delay_ms`` (the retry table's level), then revived."""
    current(state, offset, epoch)
    return PopNacked(state.group, state.partition_id, consumer, offset, epoch, state.last_epoch + 1,
                     now_ms + max(delay_ms, 0))


def revive(state: PopPartition, now_ms: int, max_reconsume_times: int) -> tuple[Revived | None, tuple[PopEntry, ...]]:
    """What the revive timer does at ``now_ms``: the due records that may be delivered again, and those past the
    group's max reconsume times (for the dead-letter topic instead)."""
    due = state.due(now_ms)
    exhausted_entries = tuple(entry for entry in due if exhausted(entry, max_reconsume_times))
    again = tuple(entry.offset for entry in due if not exhausted(entry, max_reconsume_times))
    revived = Revived(state.group, state.partition_id, again, now_ms) if again else None
    return revived, exhausted_entries


def delayed(state: PopPartition, held: Sequence[tuple[int, int]], now_ms: int) -> PopDelayed | None:
    """Park the ``(offset, due_ms)`` a pop passed over because a plugin holds them back; ``None`` if none."""
    fresh = tuple((offset, due) for offset, due in held if state.entry(offset) is None and offset >= state.next_offset)
    return PopDelayed(state.group, state.partition_id, fresh, now_ms) if fresh else None


def reset(state: PopPartition, offset: int, now_ms: int, reason: str) -> list[PopEvent]:
    """An admin reset (F41): the pops of new records start at ``offset``, whatever the pop position was, and every
    entry in flight is dropped (`PopEntriesDropped` of its pages): those below ``offset`` are skipped, those at or
    above it will be popped afresh from there (kept, they would be in flight twice); their handles are unknown."""
    events: list[PopEvent] = []
    if state.runs:
        pages = sorted({page for run in state.runs for page in range(page_of(run.first), page_of(run.last) + 1)})
        events.append(PopEntriesDropped(state.group, state.partition_id, page_ranges(pages), reason, now_ms))
    events.append(PopPositionMoved(state.group, state.partition_id, offset, reason, now_ms))
    return events


def evict(state: PopPartition, offset: int, now_ms: int, reason: str) -> list[PopEvent]:
    """A backlog eviction up to ``offset``: the entries below it are dropped (their records skipped, handles
    unknown), those at or above it stay in flight, and the pop position moves to ``offset`` if it was below.
    A page without entries at or above ``offset`` is dropped whole (its row goes and the head forgets it), the
    page holding both only below ``offset``."""
    events: list[PopEvent] = []
    pages = sorted({page for run in state.runs if run.first < offset
                    for page in range(page_of(run.first), page_of(min(run.last, offset - 1)) + 1)})
    if pages:
        kept = {page for run in state.runs if run.last >= offset
                for page in range(page_of(max(run.first, offset)), page_of(run.last) + 1)}
        whole = page_ranges(page for page in pages if page not in kept)
        cut = [(page * PAGE_OFFSETS, offset - 1) for page in pages if page in kept]
        events.append(PopEntriesDropped(state.group, state.partition_id, (*whole, *cut), reason, now_ms))
    if offset > state.next_offset:
        events.append(PopPositionMoved(state.group, state.partition_id, offset, reason, now_ms))
    return events


def dead_lettered(state: PopPartition, entries: Sequence[PopEntry], now_ms: int, topic: str, partition_id: int,
                  base_offset: int, reason: str = MAX_RECONSUME_REASON) -> PopDeadLettered:
    """Settle ``entries`` as copied to ``topic`` (``partition_id`` -1: no copy could be written)."""
    return PopDeadLettered(state.group, state.partition_id, tuple((e.offset, e.deliveries) for e in entries),
                           reason, now_ms, topic, partition_id, base_offset)


def _last_of(run: PopRun) -> int:
    return run.last
