"""`BrokerFacade` over a `Broker`: what a plugin's background task is handed instead of the broker.

Appends take the producer's path (`appends.prepare_partition`, the admission plugins, `stage_partition`)
with the batch built here, so a task cannot write what a client could not; the client id the admission
plugins see is ``logwright-plugin:<task name>``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from logwright.compat import turns
from logwright.compat.appends import PartitionResult, admit, prepare_partition, stage_partition
from logwright.compat.broker import Broker
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext
from logwright.compat.wire.record_batch import build_batch, parse_header
from logwright.compat.wire.records import Record
from logwright.core.events import Event
from logwright.plugins.facade import AppendRefused, BrokerTimer, OutgoingRecord, StoredBatchInfo

READ_CHUNK_BYTES = 1 << 20
"""How much `stored_batches` reads at a time."""


class PluginFacade:
    """One task's view of ``broker``; ``client_id`` names the task to the admission plugins."""

    def __init__(self, broker: Broker, client_id: str) -> None:
        self._broker = broker
        self._client_id = client_id

    def now_ms(self) -> int:
        return self._broker.clock.now_ms()

    async def sleep(self, milliseconds: int) -> None:
        await self._broker.sleep(milliseconds)

    async def sleep_until(self, time_ms: int) -> None:
        await self._broker.sleep_until(time_ms)

    async def give_way(self) -> None:
        await turns.give_way()

    def deadline_timer(self, name: str, next_deadline: Callable[[], int | None],
                       tick: Callable[[], object]) -> BrokerTimer:
        return self._broker.coordinators.plugin_timers.add(f"plugin {name}", next_deadline, tick)

    def broker_config(self, name: str) -> str:
        return self._broker.broker_config(name)

    def topic_config(self, topic: str, name: str) -> str | None:
        state = self._broker.topic(topic)
        return self._broker.topic_config(state, name) if state is not None else None

    def group_config(self, group: str, name: str) -> str | None:
        return share_coordinator(self._broker).group_settings(group).get(name)

    def partition_count(self, topic: str) -> int | None:
        state = self._broker.topic(topic)
        return len(state.partition_ids) if state is not None else None

    async def append(self, topic: str, records: Sequence[OutgoingRecord], partition: int = 0) -> int:
        if not records:
            raise ValueError("append needs at least one record")
        broker = self._broker
        now = broker.clock.now_ms()
        batch = build_batch([Record(0, now if r.timestamp_ms is None else r.timestamp_ms, r.key, r.value, r.headers)
                             for r in records])
        prepared = prepare_partition(broker, broker.topic(topic), partition, batch)
        if isinstance(prepared, PartitionResult):
            raise _refused(topic, partition, prepared)
        context = RequestContext(broker, 0, 0, 0, self._client_id, -1, "plugin")
        refused, deduplicated = admit(broker, context, [prepared])
        result = refused.get(prepared.partition_id) or stage_partition(broker, prepared,
                                                                       deduplicated.get(prepared.partition_id))
        if result.error_code != ErrorCode.NONE:
            raise _refused(topic, partition, result)
        await broker.durable()
        return result.base_offset

    def entities(self, projection: str) -> Mapping[str, object]:
        return self._broker.store.entities(projection)

    def stored_batches(self, partition_id: int, from_offset: int) -> Iterator[StoredBatchInfo]:
        return stored_batches(self._broker, partition_id, from_offset)

    def add_commit_listener(self, listener: Callable[[Sequence[Event]], None],
                            event_types: Iterable[type[Event]] | None = None) -> None:
        self._broker.store.add_commit_listener(lambda logged: listener([entry.event for entry in logged]),
                                               event_types)

    def stage(self, events: Sequence[Event]) -> None:
        self._broker.stage(events)

    async def durable(self) -> None:
        await self._broker.durable()


def stored_batches(broker: Broker, partition_id: int, from_offset: int) -> Iterator[StoredBatchInfo]:
    """The committed batches from the one holding ``from_offset``, described by their headers, read lazily."""
    offset = from_offset
    while offset < broker.high_watermark(partition_id):
        batches = broker.store.read_batches(partition_id, offset, READ_CHUNK_BYTES)
        if not batches:
            return
        for batch in batches:
            header = parse_header(batch)
            span = header.last_offset_delta + 1  # a compacted batch holds fewer records than offsets
            yield StoredBatchInfo(header.base_offset, span, len(batch), header.max_timestamp)
            offset = header.base_offset + span


def _refused(topic: str, partition: int, result: PartitionResult) -> AppendRefused:
    return AppendRefused(ErrorCode(result.error_code).name, f"{topic}-{partition}: {result.error_message or ''}")
