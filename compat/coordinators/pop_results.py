"""What a pop consumer sends back: acknowledgements (one handle, many, or compact offset ranges), nacks, changes of
invisible time, and the dead-letter copy a nack past the group's max reconsume times makes.

A mixin of `PopCoordinator`: every refusal of a receipt handle (unknown, stale, not the group's) is a domain error
of its own (`receipt_handle.HANDLE_ERRORS`), never a silent success, and each partition's settlement is one event.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from logwright.compat.coordinators.pop_dead_letters import NOT_COPIED, stage_dead_letters
from logwright.core.cursors.plugin_decisions import ArchiveDecider
from logwright.core.errors import DomainError
from logwright.core.events import Event
from logwright.core.events.pop import PopNacked
from logwright.core.pop import pop_commands
from logwright.core.pop.inflight import PopEntry, PopPartition
from logwright.core.pop.pop_commands import MAX_RECONSUME_REASON
from logwright.core.pop.receipt_handle import HANDLE_ERRORS, ReceiptHandle, UnknownReceiptHandle

if TYPE_CHECKING:
    from logwright.compat.broker import Broker
    from logwright.compat.coordinators.pop_reads import PopReader

NOT_COPIED_REASON = "max reconsume times reached; no plugin decided a dead-letter topic (not copied)"
COPY_RETRY_MS = 60_000
"""How long records wait before the dead-letter copy is tried again when it could not be written."""


@dataclass(frozen=True, slots=True)
class AckRanges:
    """A compact (v1) acknowledgement: offset ranges of one partition popped under one handle epoch."""

    topic_id: bytes
    partition: int
    epoch: int
    ranges: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class Changed:
    """What a change of invisible time answers: the new handle and the new deadline."""

    handle: str
    invisible_until_ms: int


class PopResults:
    """Acks, nacks and invisible-time changes (`PopCoordinator` inherits them)."""

    broker: Broker
    reader: PopReader
    _archive_decider: ArchiveDecider | None

    if TYPE_CHECKING:
        def _require(self) -> None: ...
        def table(self, group: str, partition_id: int) -> PopPartition | None: ...
        def _stage(self, state: PopPartition, events: Sequence[Event]) -> None: ...
        def _wake(self) -> None: ...
        def settings(self, group: str) -> Mapping[str, str]: ...
        def max_reconsume_times(self, group: str) -> int: ...
        def nack_delay_ms(self, group: str, entry: PopEntry) -> int: ...

    def resolve(self, group: str, text: object) -> tuple[ReceiptHandle, PopPartition]:
        """The handle and the in-flight table it points into; refusals as the handle's domain errors."""
        self._require()
        handle = ReceiptHandle.parse(text).owned_by(group)
        topic = self.broker.topic_by_id(handle.topic_id.bytes)
        if topic is None or handle.partition >= len(topic.partition_ids):
            raise UnknownReceiptHandle(f"unknown receipt handle: topic id {handle.topic_id} partition "
                                       f"{handle.partition} does not exist (the topic was deleted?)")
        state = self.table(group, topic.partition_ids[handle.partition])
        if state is None:
            raise UnknownReceiptHandle(f"unknown receipt handle: group {group!r} never popped {topic.name}")
        return handle, state

    def ack(self, group: str, consumer: str, handle_text: object) -> None:
        """Settle one record (staged; the caller awaits durability); a refused handle raises."""
        refusal = self.ack_many(group, consumer, [handle_text])[0]
        if refusal is not None:
            raise refusal

    def ack_many(self, group: str, consumer: str, handle_texts: Sequence[object]) -> list[DomainError | None]:
        """Settle the records of every current handle, one `CheckpointAcked` per partition (staged; the caller
        awaits durability); each refused handle's error, ``None`` for those settled."""
        results: list[DomainError | None] = []
        accepted: dict[tuple[str, int], tuple[PopPartition, list[tuple[int, int]]]] = {}
        for text in handle_texts:
            try:
                handle, state = self.resolve(group, text)
                key = (state.group, state.partition_id)
                state, handles = accepted.get(key, (state, []))
                pop_commands.current(state, handle.offset, handle.epoch, held=False)
                handles.append((handle.offset, handle.epoch))
                accepted[key] = (state, handles)
                results.append(None)
            except HANDLE_ERRORS as error:
                results.append(error)
        for state, handles in accepted.values():
            self._stage(state, [pop_commands.ack(state, consumer, handles)])
        if accepted:
            self._wake()
        return results

    def ack_ranges(self, group: str, consumer: str, acks: Sequence[AckRanges]) -> list[list[tuple[int, DomainError]]]:
        """Settle every offset of ``acks`` whose handle ``(offset, epoch)`` is current, one `CheckpointAcked` per
        partition (staged; the caller awaits durability); for each entry, the refused offsets with their error
        (checked exactly as `ack_many` checks each handle)."""
        self._require()
        refusals: list[list[tuple[int, DomainError]]] = []
        accepted: dict[tuple[str, int], tuple[PopPartition, list[tuple[int, int, int]]]] = {}
        for entry in acks:
            refused: list[tuple[int, DomainError]] = []
            refusals.append(refused)
            try:
                state = self._table_of(group, entry.topic_id, entry.partition)
            except UnknownReceiptHandle as error:
                refused.extend((offset, error) for first, last in entry.ranges for offset in range(first, last + 1))
                continue
            key = (state.group, state.partition_id)
            state, settled = accepted.get(key, (state, []))
            current, stale = pop_commands.ranges_current(state, entry.epoch, entry.ranges)
            settled.extend(current)
            refused.extend(stale)
            accepted[key] = (state, settled)
        staged = False
        for state, settled in accepted.values():
            if settled:
                self._stage(state, [pop_commands.settle(state, consumer, settled)])
                staged = True
        if staged:
            self._wake()
        return refusals

    def _table_of(self, group: str, topic_id: bytes, partition: int) -> PopPartition:
        """The group's in-flight table of partition ``partition`` of the topic ``topic_id``."""
        topic = self.broker.topic_by_id(topic_id)
        if topic is None or not 0 <= partition < len(topic.partition_ids):
            raise UnknownReceiptHandle(f"unknown receipt handle: topic id {uuid.UUID(bytes=topic_id)} partition "
                                       f"{partition} does not exist (the topic was deleted?)")
        state = self.table(group, topic.partition_ids[partition])
        if state is None:
            raise UnknownReceiptHandle(f"unknown receipt handle: group {group!r} never popped {topic.name}")
        return state

    def change_invisible_time(self, group: str, consumer: str, handle_text: object, invisible_time_ms: int) -> Changed:
        handle, state = self.resolve(group, handle_text)
        event = pop_commands.change_invisible_time(state, consumer, handle.offset, handle.epoch,
                                                   self.broker.clock.now_ms(), invisible_time_ms)
        self._stage(state, [event])
        new = ReceiptHandle(handle.group, handle.topic_id, handle.partition, handle.offset, event.epoch)
        return Changed(new.text(), event.invisible_until_ms)

    def nack(self, group: str, consumer: str, handle_text: object, delay_ms: int | None) -> int:
        """Give the record back as failed: it revives after ``delay_ms`` (default: the retry table's level); past
        the group's max reconsume times it goes to the dead-letter topic at once. Returns the due time (-1:
        dead-lettered)."""
        handle, state = self.resolve(group, handle_text)
        entry = pop_commands.current(state, handle.offset, handle.epoch)
        now = self.broker.clock.now_ms()
        if pop_commands.exhausted(entry, self.max_reconsume_times(group)):
            self._stage(state, self._dead_letter(state, [entry], now, consumer))
            return -1
        delay = delay_ms if delay_ms is not None else self.nack_delay_ms(group, entry)
        event = pop_commands.nack(state, consumer, handle.offset, handle.epoch, now, delay)
        self._stage(state, [event])
        return event.invisible_until_ms

    def _dead_letter(self, state: PopPartition, entries: Sequence[PopEntry], now: int, consumer: str = ""
                     ) -> list[Event]:
        """Copies staged now (where the plugins' ``logwright_decide_archive`` says) and the event settling
        ``entries``; if no copy can be written, events keeping them invisible for `COPY_RETRY_MS` instead
        (nothing is lost while the dead-letter topic is broken). ``consumer`` nacked them ("": timed out)."""
        partition_id = state.partition_id
        originals = {entry.offset: record for entry in entries
                     if (record := self.reader.record_at(partition_id, entry.offset)) is not None}
        copied = stage_dead_letters(self.broker, self._archive_decider, state, entries, originals,
                                    self.settings(state.group), MAX_RECONSUME_REASON, consumer)
        if copied is NOT_COPIED:
            return [pop_commands.dead_lettered(state, entries, now, "", -1, -1, NOT_COPIED_REASON)]
        if copied is not None:
            return [pop_commands.dead_lettered(state, entries, now, copied.topic, copied.partition_id,
                                               copied.base_offset)]
        epoch = state.last_epoch
        kept: list[Event] = []
        for entry in entries:
            epoch += 1
            kept.append(PopNacked(state.group, partition_id, "", entry.offset, entry.epoch, epoch, now + COPY_RETRY_MS))
        return kept
