"""What a pop hands the caller: `PoppedMessages`, a sequence of `PoppedMessage`, decoded only as far as it is read.

A compact (v1) pop answers per partition a checkpoint (handle epoch, offset ranges, deadline) and the stored
batches holding its records. Nothing here walks the records up front: the sequence knows its length and every
offset from the ranges, a `PoppedMessage` is made when the caller takes it, its key, value and timestamp are
read from the batch bytes when first asked (the batch's record positions found once, as far as needed, and
kept with the batch), its headers only when asked, its receipt handle text only when asked. Acknowledging a
whole `PoppedMessages` sends its checkpoints' ranges as they came, with no work per record.

Decompressed batches are kept per process (`KEPT_BATCHES`), shared by every connection: a stored batch often
holds thousands of records, of which one pop hands out up to 1024, so the next pops of any connection read the
same bytes; a pop names the batches it holds and the broker sends a reference instead of the bytes again.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from logwright.client.connection import ClientError
from logwright.compat.wire.compression import decompress
from logwright.compat.wire.record_batch import HEADER_SIZE, TimestampType, parse_header
from logwright.compat.wire.records import CorruptRecords
from logwright.compat.wire.varints import read_uvarint, read_varint

KEPT_BATCHES = 16
"""Stored batches kept decompressed in the process (at most a few MB each)."""

SCAN_STEP = 256
"""Record starts found at a time when a read goes past those known."""
Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(slots=True)
class Batch:
    """One stored batch's records, decompressed, and the start of each record found so far (in offset order)."""

    data: bytes
    base_offset: int
    last_offset: int
    base_timestamp: int
    append_time: int | None
    crc: int
    dense: bool
    """Offsets base, base + 1, ... with no gap: record ``i`` holds offset ``base + i``."""
    starts: list[int] = field(default_factory=list)
    """Byte position of each record found so far (its length varint)."""
    offsets: list[int] = field(default_factory=list)
    """Of a batch with gaps only: the offset of each record in `starts`."""
    scanned: int = 0
    """Byte position after the last record in `starts`."""

    def index(self, offset: int) -> int | None:
        """The position in `starts` of the record at ``offset`` (found on demand); ``None`` if the batch lacks it."""
        if offset < self.base_offset or offset > self.last_offset:
            return None
        if self.dense:
            index = offset - self.base_offset
            if index >= len(self.starts):  # ahead in steps: the caller most likely reads the records that follow
                self._scan(min(max(index + 1, len(self.starts) + SCAN_STEP), self.last_offset - self.base_offset + 1))
            return index
        while not self.offsets or (self.offsets[-1] < offset and self.scanned < len(self.data)):
            self._scan(len(self.starts) + SCAN_STEP)
            if not self.offsets:
                return None
        at = bisect_right(self.offsets, offset) - 1
        return at if at >= 0 and self.offsets[at] == offset else None

    def _scan(self, count: int) -> None:
        """Find record starts until ``count`` are known (a batch with gaps: or the data ends); only the length of
        each record is read (and, with gaps, its offset delta)."""
        if self.dense:
            self._scan_dense(count)
            return
        data, starts, position, end = self.data, self.starts, self.scanned, len(self.data)
        while len(starts) < count and position < end:
            at = position
            length, position = read_varint(data, position)
            if length <= 0 or position + length > end:
                raise CorruptRecords(f"a record at byte {at} of batch {self.base_offset} announces {length} bytes")
            _, delta_at = read_varint(data, position + 1)  # after the attributes: timestamp delta, offset delta
            self.offsets.append(self.base_offset + read_varint(data, delta_at)[0])
            starts.append(at)
            position += length
        self.scanned = position

    def _scan_dense(self, count: int) -> None:
        """`_scan` of a batch without gaps, the hot loop of a pop's first reads: lengths of one or two bytes read
        inline; positions only grow (a length below 1 is refused), so one bound check at the end (and the
        IndexError of a read past the data) finds a record running past the batch."""
        data, starts, position, end = self.data, self.starts, self.scanned, len(self.data)
        total = self.last_offset - self.base_offset + 1
        if count > total:
            raise CorruptRecords(f"batch {self.base_offset} holds {total} records, not {count}")
        append, known = starts.append, len(starts)
        try:
            for _ in range(count - known):
                byte = data[position]
                if byte < 0x80:
                    length = (byte >> 1) ^ -(byte & 1)
                    size = 1
                elif data[position + 1] < 0x80:
                    length = (byte & 0x7F) | (data[position + 1] << 7)
                    length, size = (length >> 1) ^ -(length & 1), 2
                else:
                    length, after = read_uvarint(data, position)
                    length, size = (length >> 1) ^ -(length & 1), after - position
                if length <= 0:
                    position = end + 1  # refused below, as a record running past the data
                    break
                append(position)
                position += size + length
        except IndexError:
            position = end + 1
        if position > end or (len(starts) == total and position != end):
            del starts[known:]  # as before the scan: a later read finds the same fault, not a half scan
            raise CorruptRecords(f"the records of batch {self.base_offset} do not fill its {end} bytes: "
                                 f"{len(starts)} of {total} found")
        self.scanned = position

    def fields(self, index: int) -> tuple[int, bytes | None, bytes | None, int, int]:
        """Timestamp, key, value, where the headers start and where the record ends, of record ``index`` (its
        end is the next record's start: `_scan` checked the length; the varints read inline when short)."""
        data = self.data
        position = self.starts[index]
        end = self.starts[index + 1] if index + 1 < len(self.starts) else self.scanned
        while data[position] >= 0x80:  # the length, known from the scan
            position += 1
        position += 2  # and the attributes
        byte = data[position]
        if byte < 0x80:
            delta = byte
            position += 1
        else:
            delta, position = read_uvarint(data, position)
        while data[position] >= 0x80:  # the offset delta
            position += 1
        position += 1
        byte = data[position]
        if byte < 0x80:
            size = byte
            position += 1
        else:
            size, position = read_uvarint(data, position)
        size = (size >> 1) ^ -(size & 1)
        key = None if size < 0 else data[position:position + size]
        position += max(size, 0)
        byte = data[position]
        if byte < 0x80:
            size = byte
            position += 1
        elif data[position + 1] < 0x80:
            size = (byte & 0x7F) | (data[position + 1] << 7)
            position += 2
        else:
            size, position = read_uvarint(data, position)
        size = (size >> 1) ^ -(size & 1)
        value = None if size < 0 else data[position:position + size]
        position += max(size, 0)
        if position >= end:  # the header count, at least, follows
            raise CorruptRecords(f"record {index} of batch {self.base_offset} runs past its end")
        timestamp = self.append_time if self.append_time is not None else self.base_timestamp + (
            (delta >> 1) ^ -(delta & 1))
        return timestamp, key, value, position, end

    def headers(self, index: int) -> Headers:
        _, _, _, position, end = self.fields(index)
        data = self.data
        count, position = read_varint(data, position)
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(count):
            size, position = read_varint(data, position)
            if size < 0:
                raise CorruptRecords(f"record {index} of batch {self.base_offset} has a header with a null key")
            name = data[position:position + size].decode("utf-8")
            position += size
            size, position = read_varint(data, position)
            headers.append((name, None if size < 0 else data[position:position + size]))
            position += max(size, 0)
        if position != end:
            raise CorruptRecords(f"record {index} of batch {self.base_offset}: its headers do not end the record")
        return tuple(headers)


_KEPT: OrderedDict[tuple[str, int, int, int], Batch] = OrderedDict()
"""(topic id hex, partition, base offset, CRC) → the batch, least recently used first."""


def held_batches(topic_hex: str) -> dict[tuple[int, int, int], Batch]:
    """The kept batches of one topic by (partition, base offset, CRC): what a pop tells the broker it holds (the
    broker then sends a reference, resolved against this very dict, so an eviction meanwhile loses nothing)."""
    return {(partition, base, crc): batch for (hex_id, partition, base, crc), batch in _KEPT.items()
            if hex_id == topic_hex}


def kept_batch(topic_hex: str, partition: int, raw: bytes) -> Batch | None:
    """The stored batch ``raw`` decompressed (``None`` for a control batch), from the kept ones if it came before."""
    header = parse_header(raw)
    if header.is_control:
        return None
    key = (topic_hex, partition, header.base_offset, header.crc)
    found = _KEPT.get(key)
    if found is None:
        if len(raw) < header.size:
            raise ClientError(f"pop: a batch announces {header.size} bytes, only {len(raw)} came")
        append_time = header.max_timestamp if header.timestamp_type is TimestampType.LOG_APPEND_TIME else None
        found = Batch(decompress(header.compression, memoryview(raw)[HEADER_SIZE:header.size]), header.base_offset,
                      header.last_offset, header.base_timestamp, append_time, header.crc,
                      header.record_count == header.last_offset_delta + 1)
        keep(topic_hex, partition, found)
    else:
        _KEPT.move_to_end(key)
    return found


def keep(topic_hex: str, partition: int, batch: Batch) -> None:
    key = (topic_hex, partition, batch.base_offset, batch.crc)
    _KEPT[key] = batch
    _KEPT.move_to_end(key)
    while len(_KEPT) > KEPT_BATCHES:
        _KEPT.popitem(last=False)


def _base_offset(batch: Batch) -> int:
    return batch.base_offset


class Checkpoint:
    """One partition's share of a pop: which offsets, under which handle epoch, until when, in which batches."""

    __slots__ = ("topic", "group", "topic_hex", "partition", "epoch", "until", "reconsumed", "ranges", "batches",
                 "count")

    def __init__(self, topic: str, group: str, topic_hex: str, partition: int, epoch: int, until: int,
                 reconsumed: dict[int, int], ranges: Sequence[tuple[int, int]], batches: Sequence[Batch]) -> None:
        self.topic, self.group, self.topic_hex, self.partition = topic, group, topic_hex, partition
        self.epoch, self.until, self.reconsumed, self.ranges = epoch, until, reconsumed, tuple(ranges)
        self.batches = sorted(batches, key=_base_offset)
        self.count = sum(last - first + 1 for first, last in self.ranges)

    def check(self) -> None:
        """Every offset of the ranges is in a batch sent: per batch for batches without gaps, per record in the
        others (the only ones whose offsets the header cannot say)."""
        bases = [batch.base_offset for batch in self.batches]
        for first, last in self.ranges:
            offset = first
            while offset <= last:
                at = bisect_right(bases, offset) - 1
                batch = self.batches[at] if at >= 0 else None
                if batch is None or offset > batch.last_offset or (not batch.dense and batch.index(offset) is None):
                    raise ClientError(f"pop: offset {offset} of partition {self.partition} is in the checkpoint but "
                                      "in none of the batches the broker sent")
                offset = batch.last_offset + 1 if batch.dense else offset + 1

    def locate(self, offset: int) -> tuple[Batch, int]:
        batches = self.batches
        at = 0 if len(batches) == 1 else bisect_right(batches, offset, key=_base_offset) - 1
        index = batches[at].index(offset) if at >= 0 else None
        if index is None:
            raise ClientError(f"pop: offset {offset} of partition {self.partition} is in no batch sent")
        return self.batches[at], index

    def position(self, offset: int) -> int | None:
        """``offset``'s place among this checkpoint's records, ``None`` if it is not one of them."""
        before = 0
        for first, last in self.ranges:
            if first <= offset <= last:
                return before + offset - first
            before += last - first + 1
        return None

    def messages(self) -> Iterator[PoppedMessage]:
        new = PoppedMessage.__new__
        for first, last in self.ranges:
            for offset in range(first, last + 1):
                message = new(PoppedMessage)
                message._checkpoint, message.offset, message._record, message._changed = self, offset, None, None
                yield message


class PoppedMessage:
    """One popped record: where it is, what it holds, and the handle that settles it (read when first asked)."""

    __slots__ = ("_checkpoint", "offset", "_record", "_changed")

    def __init__(self, topic: str, group: str, partition: int, offset: int, timestamp: int, key: bytes | None,
                 value: bytes | None, headers: Headers, handle: str, reconsume_times: int,
                 invisible_until_ms: int) -> None:
        self._checkpoint = Checkpoint(topic, group, "", partition, 0, invisible_until_ms,
                                      {offset: reconsume_times} if reconsume_times else {}, ((offset, offset),), ())
        self.offset = offset
        self._record: tuple[int, bytes | None, bytes | None, Headers | None] | None = (timestamp, key, value, headers)
        self._changed: tuple[str, int] | None = (handle, invisible_until_ms)
        """A handle given, not built from the checkpoint: a version 0 pop's, or the new one of a change."""

    def _read(self) -> tuple[int, bytes | None, bytes | None, Headers | None]:
        record = self._record
        if record is None:
            batches = self._checkpoint.batches
            if len(batches) == 1 and batches[0].dense:  # the usual case, inline: the checkpoint's ranges are in it
                batch = batches[0]
                index = self.offset - batch.base_offset
                if index >= len(batch.starts):
                    batch.index(self.offset)
            else:
                batch, index = self._checkpoint.locate(self.offset)
            timestamp, key, value, _, _ = batch.fields(index)
            record = self._record = (timestamp, key, value, None)
        return record

    @property
    def topic(self) -> str:
        return self._checkpoint.topic

    @property
    def group(self) -> str:
        return self._checkpoint.group

    @property
    def partition(self) -> int:
        return self._checkpoint.partition

    @property
    def timestamp(self) -> int:
        return self._read()[0]

    @property
    def key(self) -> bytes | None:
        return self._read()[1]

    @property
    def value(self) -> bytes | None:
        return self._read()[2]

    @property
    def headers(self) -> Headers:
        record = self._read()
        if record[3] is None:
            batch, index = self._checkpoint.locate(self.offset)
            record = self._record = (*record[:3], batch.headers(index))
        headers = record[3]
        assert headers is not None
        return headers

    @property
    def handle(self) -> str:
        if self._changed is not None:
            return self._changed[0]
        checkpoint = self._checkpoint
        return f"1 {checkpoint.epoch} {checkpoint.partition} {self.offset} {checkpoint.topic_hex} {checkpoint.group}"

    @property
    def reconsume_times(self) -> int:
        return self._checkpoint.reconsumed.get(self.offset, 0)

    @property
    def invisible_until_ms(self) -> int:
        return self._checkpoint.until if self._changed is None else self._changed[1]

    def ack_key(self) -> tuple[str, int, int] | None:
        """(topic id hex, partition, handle epoch) of a handle in the text form compact acks use, else ``None``."""
        checkpoint = self._checkpoint
        if self._changed is None:
            return checkpoint.topic_hex, checkpoint.partition, checkpoint.epoch
        fields = self._changed[0].split(" ", 5)
        if len(fields) != 6 or fields[0] != "1" or not fields[1].isdigit() or len(fields[4]) != 32:
            return None
        return fields[4], checkpoint.partition, int(fields[1])

    def with_handle(self, handle: str, invisible_until_ms: int) -> PoppedMessage:
        """The same record under a new handle and deadline (after a change of invisible time)."""
        changed = PoppedMessage.__new__(PoppedMessage)
        changed._checkpoint, changed.offset, changed._record = self._checkpoint, self.offset, self._record
        changed._changed = (handle, invisible_until_ms)
        return changed

    def _identity(self) -> tuple[str, str, int, int, str]:
        return self.topic, self.group, self.partition, self.offset, self.handle

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PoppedMessage) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __repr__(self) -> str:
        return (f"PoppedMessage(topic={self.topic!r}, group={self.group!r}, partition={self.partition}, "
                f"offset={self.offset}, handle={self.handle!r}, reconsume_times={self.reconsume_times}, "
                f"invisible_until_ms={self.invisible_until_ms})")


class PoppedMessages(Sequence[PoppedMessage]):
    """The messages of one pop, in checkpoint order; each `PoppedMessage` is made when taken. Read as a list
    is: equal to any sequence of equal messages (``popped == []``), ``+`` and slices give lists."""

    __slots__ = ("checkpoints", "_starts", "_listed")

    def __init__(self, checkpoints: Sequence[Checkpoint] = (), listed: Sequence[PoppedMessage] | None = None) -> None:
        self.checkpoints = tuple(checkpoints)
        """Of a compact pop: acknowledging the whole sequence sends these ranges as they are."""
        self._listed = None if listed is None else list(listed)
        starts = [0]
        for checkpoint in self.checkpoints:
            starts.append(starts[-1] + checkpoint.count)
        self._starts = starts

    def __len__(self) -> int:
        return len(self._listed) if self._listed is not None else self._starts[-1]

    def __iter__(self) -> Iterator[PoppedMessage]:
        if self._listed is not None:
            yield from self._listed
            return
        for checkpoint in self.checkpoints:
            yield from checkpoint.messages()

    @overload
    def __getitem__(self, index: int) -> PoppedMessage: ...

    @overload
    def __getitem__(self, index: slice) -> list[PoppedMessage]: ...

    def __getitem__(self, index: int | slice) -> PoppedMessage | list[PoppedMessage]:
        if isinstance(index, slice):
            return list(self)[index]
        if self._listed is not None:
            return self._listed[index]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("popped message index out of range")
        at = bisect_right(self._starts, index) - 1
        checkpoint, within = self.checkpoints[at], index - self._starts[at]
        for first, last in checkpoint.ranges:
            if within <= last - first:
                return _message(checkpoint, first + within)
            within -= last - first + 1
        raise IndexError(index)  # pragma: no cover - the counts add up

    def compact(self) -> bool:
        """Whether acknowledging all of it can send the checkpoints' ranges as they came."""
        return self._listed is None

    def position(self, checkpoint: int, offset: int) -> int | None:
        """Where ``offset`` of checkpoint number ``checkpoint`` is in the sequence."""
        within = self.checkpoints[checkpoint].position(offset)
        return None if within is None else self._starts[checkpoint] + within

    def __add__(self, other: Sequence[PoppedMessage]) -> list[PoppedMessage]:
        return [*self, *other]

    def __radd__(self, other: Sequence[PoppedMessage]) -> list[PoppedMessage]:
        return [*other, *self]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PoppedMessages({list(self)!r})"


def _message(checkpoint: Checkpoint, offset: int) -> PoppedMessage:
    message = PoppedMessage.__new__(PoppedMessage)
    message._checkpoint, message.offset, message._record, message._changed = checkpoint, offset, None, None
    return message


def unpacked(topic: str, group: str, answer: dict[str, Any], held: dict[tuple[int, int, int], Batch]
             ) -> PoppedMessages:
    """The messages of a compact (v1) pop answer; ``held``: the batches the request said this process holds."""
    topic_hex = bytes(answer["topic_id"]).hex()
    checkpoints: list[Checkpoint] = []
    for part in answer["partitions"]:
        partition = int(part["partition"])
        batches = [batch for raw in part["batches"] if (batch := kept_batch(topic_hex, partition, raw)) is not None]
        for base, crc in part.get("held", ()):
            kept = held.get((partition, int(base), int(crc)))
            if kept is None:
                raise ClientError(f"pop: the broker referred to batch {base} of partition {partition}, not held here")
            keep(topic_hex, partition, kept)
            batches.append(kept)
        checkpoint = Checkpoint(topic, group, topic_hex, partition, int(part["epoch"]), int(part["invisible_until_ms"]),
                                {int(offset): int(times) for offset, times in part["reconsumed"]},
                                [(int(first), int(last)) for first, last in part["ranges"]], batches)
        checkpoint.check()
        checkpoints.append(checkpoint)
    return PoppedMessages(checkpoints)
