"""Pulsar's Reader over Kafka offsets: read a topic from a chosen position without a group and without acks.

    reader = await client.create_reader("orders", start="earliest")            # every partition
    reader = await client.create_reader("orders", start=MessageId(0, 41))       # partition 0 from offset 42
    while await reader.has_message_available():
        msg = await reader.read_next(timeout=5)

Nothing is stored on the broker: the application keeps the last `MessageId` it processed (with its own
state, atomically) and starts the next reader from it, as Pulsar's effectively-once recipe does. A start id
is exclusive, as in Pulsar (``start_inclusive=True`` reads it again). Only committed records are read
(``read_committed``): open transactions hold the reader back, aborted ones and transaction markers are
skipped. Across partitions, records of one partition come in offset order; partitions are interleaved.
"""

from __future__ import annotations

import datetime
import struct
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from logwright.client.connection import BrokerError, ClientError, Connection
from logwright.client.consumer import Message, Timeout
from logwright.client.record_reader import read_all
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import iter_batches, parse_header

__all__ = ["EARLIEST", "LATEST", "MessageId", "PublishTime", "Reader", "StartPosition"]

EARLIEST: Final = "earliest"
LATEST: Final = "latest"
READ_COMMITTED: Final = 1
_EARLIEST_TIMESTAMP: Final = -2
_LATEST_TIMESTAMP: Final = -1
_FETCH_BYTES: Final = 1 << 20
_POLL_MS: Final = 500
_ABORT: Final = 0


@dataclass(frozen=True, slots=True, order=True)
class MessageId:
    """Where a record is: Pulsar's message id, here the partition and the Kafka offset."""

    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class PublishTime:
    """Start at the first record whose timestamp is at or after ``ms`` (ListOffsets by time)."""

    ms: int


StartPosition = str | int | MessageId | PublishTime | Mapping[int, int]
"""``EARLIEST``, ``LATEST``, an offset (of the reader's one partition, or of every partition), a `MessageId`
(its partition from there, the others from the earliest), a `PublishTime`, or offsets by partition (the
partitions not named from the earliest)."""


class Reader:
    """Reads one partition or all of a topic; made by `Client.create_reader`."""

    def __init__(self, connection: Connection, topic: str, partitions: tuple[int, ...], start_inclusive: bool
                 ) -> None:
        self.topic = topic
        self.partitions = partitions
        self._connection = connection
        self._start_inclusive = start_inclusive
        self._next_fetch: dict[int, int] = {}
        self._stable_end: dict[int, int] = {}
        self._buffer: deque[Message] = deque()

    @classmethod
    async def open(cls, connection: Connection, topic: str, start: StartPosition, partition: int | None,
                   start_inclusive: bool) -> Reader:
        count = await _partition_count(connection, topic)
        if partition is not None and not 0 <= partition < count:
            raise ClientError(f"topic {topic!r} has {count} partitions; there is no partition {partition}")
        partitions = (partition,) if partition is not None else tuple(range(count))
        reader = cls(connection, topic, partitions, start_inclusive)
        await reader.seek(start)
        return reader

    async def seek(self, position: StartPosition) -> None:
        """Read from ``position`` next (same forms as the start); records already fetched are dropped."""
        self._buffer.clear()
        self._stable_end.clear()
        self._next_fetch = await self._resolve(position)

    async def has_message_available(self) -> bool:
        """Whether a committed record is there to read now (it fetches without waiting to know)."""
        while not self._buffer:
            before = dict(self._next_fetch)
            await self._fetch(max_wait_ms=0)
            if self._buffer:
                break
            if self._next_fetch == before or all(self._next_fetch[p] >= self._stable_end.get(p, 0)
                                                 for p in self.partitions):
                return False
        return True

    async def read_next(self, timeout: float | None = None) -> Message:
        """The next record; `Timeout` when none arrives within ``timeout`` seconds (``None``: wait for one)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._buffer:
            remaining_ms = _POLL_MS if deadline is None else int((deadline - time.monotonic()) * 1000)
            if remaining_ms <= 0:
                raise Timeout(f"no record on {self.topic!r} within {timeout} s")
            await self._fetch(max_wait_ms=min(remaining_ms, _POLL_MS))
        return self._buffer.popleft()

    def position(self) -> dict[int, int]:
        """The offset each partition is read from next (records fetched but not yet returned included)."""
        positions = dict(self._next_fetch)
        for message in reversed(self._buffer):
            positions[message.partition] = message.offset
        return positions

    async def close(self) -> None:
        """Forget the buffered records; the client's connection stays open (it is the client's)."""
        self._buffer.clear()

    async def _resolve(self, position: StartPosition) -> dict[int, int]:
        inclusive = 0 if self._start_inclusive else 1
        if position == EARLIEST or position == LATEST:
            stamp = _EARLIEST_TIMESTAMP if position == EARLIEST else _LATEST_TIMESTAMP
            return await self._list_offsets(dict.fromkeys(self.partitions, stamp))
        if isinstance(position, PublishTime):
            found = await self._list_offsets(dict.fromkeys(self.partitions, position.ms))
            missing = {p: _LATEST_TIMESTAMP for p, offset in found.items() if offset < 0}
            return {**found, **(await self._list_offsets(missing) if missing else {})}
        if isinstance(position, bool) or isinstance(position, str):
            raise ClientError(f"a start position is 'earliest', 'latest', an offset, a MessageId, a PublishTime or "
                              f"offsets by partition, not {position!r}")
        if isinstance(position, int):
            if position < 0:
                raise ClientError(f"an offset is not negative, got {position}")
            return {p: position + inclusive for p in self.partitions}
        named = {position.partition: position.offset} if isinstance(position, MessageId) else dict(position)
        unknown = sorted(set(named) - set(self.partitions))
        if unknown:
            raise ClientError(f"the reader of {self.topic!r} does not read partitions {unknown}")
        earliest = await self._list_offsets({p: _EARLIEST_TIMESTAMP for p in self.partitions if p not in named})
        return {**earliest, **{p: offset + inclusive for p, offset in named.items()}}

    async def _list_offsets(self, stamps: Mapping[int, int]) -> dict[int, int]:
        if not stamps:
            return {}
        response = await self._connection.request(make(
            ListOffsetsRequest, replica_id=-1, isolation_level=READ_COMMITTED, topics=(make(
                ListOffsetsTopic, name=self.topic, partitions=tuple(
                    make(ListOffsetsPartition, partition_index=p, current_leader_epoch=-1, timestamp=stamp)
                    for p, stamp in stamps.items())),)))
        offsets: dict[int, int] = {}
        for answer in response.topics[0].partitions:
            if answer.error_code:
                where = f"list offsets of {self.topic}-{answer.partition_index}"
                raise BrokerError(int(answer.error_code), None, where)
            offsets[int(answer.partition_index)] = int(answer.offset)
        return offsets

    async def _fetch(self, max_wait_ms: int) -> None:
        response = await self._connection.request(make(
            FetchRequest, cluster_id=None, replica_id=-1, max_wait=datetime.timedelta(milliseconds=max_wait_ms),
            min_bytes=1, max_bytes=_FETCH_BYTES, isolation_level=READ_COMMITTED, session_id=0, session_epoch=-1,
            topics=(make(FetchTopic, topic=self.topic, partitions=tuple(
                make(FetchPartition, partition=p, current_leader_epoch=-1, fetch_offset=self._next_fetch[p],
                     last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=_FETCH_BYTES)
                for p in self.partitions)),),
            forgotten_topics_data=(), rack_id=""), timeout_s=max_wait_ms / 1000 + 30)
        for data in response.responses[0].partitions:
            partition = int(data.partition_index)
            if data.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                self._next_fetch[partition] = (await self._list_offsets({partition: _EARLIEST_TIMESTAMP}))[partition]
                continue
            if data.error_code:
                raise BrokerError(int(data.error_code), None, f"fetch {self.topic}-{partition}")
            self._stable_end[partition] = int(data.last_stable_offset)
            aborted = sorted((int(t.first_offset), int(t.producer_id)) for t in data.aborted_transactions or ())
            self._take(partition, data.records or b"", aborted)

    def _take(self, partition: int, records: bytes, aborted: list[tuple[int, int]]) -> None:
        """Buffer the committed records from the fetch position on; move the position past every whole batch."""
        aborting: set[int] = set()
        position = self._next_fetch[partition]
        for batch in iter_batches(records, allow_partial_tail=True):
            header = parse_header(batch)
            while aborted and aborted[0][0] <= header.last_offset:
                aborting.add(aborted.pop(0)[1])
            if header.is_control:
                if header.producer_id in aborting and _marker_type(batch) == _ABORT:
                    aborting.discard(header.producer_id)
            elif not (header.is_transactional and header.producer_id in aborting):
                self._buffer.extend(
                    Message(self.topic, partition, record.offset, record.key, record.value, record.timestamp,
                            tuple(record.headers), 1)
                    for record in read_all(batch) if record.offset >= position)
            position = max(position, header.next_offset)
        self._next_fetch[partition] = position


def _marker_type(batch: Any) -> int:
    """A control batch's marker: its one record's key is (version i16, type i16); 0 aborts, 1 commits."""
    [marker] = read_all(batch)
    return int(struct.unpack(">hh", marker.key or b"\0\0\0\0")[1])


async def _partition_count(connection: Connection, topic: str) -> int:
    response = await connection.request(make(
        MetadataRequest, topics=(make(MetadataRequestTopic, topic_id=None, name=topic),),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    for found in response.topics:
        if found.name == topic:
            if found.error_code:
                raise BrokerError(int(found.error_code), None, f"topic {topic!r}")
            return len(found.partitions)
    raise BrokerError(int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), None, f"topic {topic!r}")
