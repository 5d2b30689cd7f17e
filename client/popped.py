"""What a pop hands the caller: `PoppedMessages`, a sequence of `PoppedMessage`, decoded only as far as it is read.

A compact (v1) pop answers per partition a checkpoint (handle epoch, offset ranges, deadline) and the stored
batches holding its records. Nothing here walks the records up front: the sequence knows its length and every
offset from the ranges, a `PoppedMessage` is made when the caller takes it. The first time a record's key, value,
timestamp or headers are asked, its batch is decoded in C (`logwright.client.record_reader`: aiokafka's reader,
about 0.1 us a record where parsing in Python cost 2-3 us) up to that record and `READ_STEP` beyond, and the
records kept with the batch; a batch's CRC is checked once, when it arrives. The receipt handle text is built only
when asked. Acknowledging a whole `PoppedMessages` sends its checkpoints' ranges as they came, with no work per
record.

The broker sends an uncompressed stored batch cut to the records from the first to the last it hands out (a
slice: base offset as stored, its first record past it), so a process decodes only its records, not the batch
from its start (four popping processes decoded 2.7 records per record popped). Decoded batches are kept per
process (`KEPT_BATCHES`), shared by every connection: a compressed batch, sent whole, often holds thousands of
records, of which one pop hands out up to 1024, so the next pops of any connection read the same records; a
pop names the batches it holds and the broker sends a reference instead of the bytes again.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from operator import attrgetter
from typing import Any, overload

from logwright.client.connection import ClientError
from logwright.client.record_reader import CorruptRecordBatch, RecordCursor
from logwright.compat.wire.record_batch import RecordBatchError, parse_header

KEPT_BATCHES = 16
"""Stored batches kept decoded in the process (at most a few MB each)."""

READ_STEP = 256
"""Records decoded beyond the one asked when a read goes past those known."""

DECODE_CHUNK = 128
"""Records decoded in one call of the C reader. Its record objects are tracked by the garbage collector: a read far
into a batch decoding thousands at once set off full collections (0.07-0.1 s of a popping process's 0.25 s over
300,000 records); in chunks of 128, freed before the next, the collector's count never gets there."""
Headers = tuple[tuple[str, bytes | None], ...]


class Batch:
    """One stored batch's records, decoded in C (`RecordCursor`) as far as they were read, in offset order, kept
    as plain lists of fields (what the garbage collector does not walk)."""

    __slots__ = ("base_offset", "first_offset", "last_offset", "crc", "dense", "timestamps", "keys", "values",
                 "headers", "offsets", "_cursor", "_fault")

    def __init__(self, cursor: RecordCursor) -> None:
        header = cursor.header
        self.base_offset, self.last_offset, self.crc = header.base_offset, header.last_offset, header.crc
        self.first_offset = header.base_offset + cursor.first_delta
        """Of the first record: past the base in a pop's slice of a stored batch (the broker sends the records
        from the first to the last it hands out)."""
        self.dense = header.record_count == header.last_offset_delta - cursor.first_delta + 1
        """Offsets first, first + 1, ... with no gap: record ``i`` holds offset ``first_offset + i``."""
        self.timestamps: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        """Of the records decoded so far, in batch order."""
        self.headers: dict[int, Headers] = {}
        """Of the records decoded so far that have headers, by position."""
        self.offsets: list[int] = []
        """Of a batch with gaps only: the offset of each record decoded."""
        self._cursor = cursor
        self._fault = ""

    def index(self, offset: int) -> int | None:
        """The position of the record at ``offset`` (decoded on demand); ``None`` if the batch lacks it."""
        if offset < self.first_offset or offset > self.last_offset:
            return None
        if self.dense:
            index = offset - self.first_offset
            while index >= len(self.values):  # ahead in steps: the caller most likely reads the records that follow
                self._read(index + READ_STEP - len(self.values))
            return index
        offsets = self.offsets
        while (not offsets or offsets[-1] < offset) and len(offsets) < self._cursor.total:
            self._read(READ_STEP)
        at = bisect_right(offsets, offset) - 1
        return at if at >= 0 and offsets[at] == offset else None

    def _read(self, count: int) -> None:
        """Decode ``count`` more records (or the rest), `DECODE_CHUNK` at a time; in a batch without gaps check
        that they hold the offsets the header says (the first and last of each chunk), in the others note their
        offsets."""
        if self._fault:
            raise CorruptRecordBatch(self._fault)
        cursor, base, first = self._cursor, self.base_offset, self.first_offset
        count = min(count, cursor.total - cursor.taken)
        while count > 0:
            known = len(self.values)
            chunk = cursor.take(min(count, DECODE_CHUNK))
            cursor.check()  # a chunk with a fault in it, or bytes left after it, is refused whole, every time
            if not chunk:
                raise CorruptRecordBatch(f"batch {base} holds {known} records, not more")
            if self.dense:
                if chunk[0].offset != first + known or chunk[-1].offset != first + known + len(chunk) - 1:
                    self._fault = f"batch {base} announces offsets without gaps, its records {known}.. hold others"
                    raise CorruptRecordBatch(self._fault)
            else:
                self.offsets.extend(map(_OFFSET, chunk))
            self.timestamps.extend(map(_TIMESTAMP, chunk))
            self.keys.extend(map(_KEY, chunk))
            self.values.extend(map(_VALUE, chunk))
            if any(map(_HEADERS, chunk)):
                self.headers.update((known + at, tuple(record.headers)) for at, record in enumerate(chunk)
                                    if record.headers)
            count -= len(chunk)


_OFFSET, _TIMESTAMP, _KEY, _VALUE, _HEADERS = (
    attrgetter("offset"), attrgetter("timestamp"), attrgetter("key"), attrgetter("value"), attrgetter("headers"))


_KEPT: OrderedDict[tuple[str, int, int, int], Batch] = OrderedDict()
"""(topic id hex, partition, base offset, CRC) → the batch, least recently used first."""


def held_batches(topic_hex: str) -> dict[tuple[int, int, int], Batch]:
    """The kept batches of one topic by (partition, base offset, CRC): what a pop tells the broker it holds (the
    broker then sends a reference, resolved against this very dict, so an eviction meanwhile loses nothing)."""
    return {(partition, base, crc): batch for (hex_id, partition, base, crc), batch in _KEPT.items()
            if hex_id == topic_hex}


def kept_batch(topic_hex: str, partition: int, raw: bytes) -> Batch | None:
    """The stored batch ``raw``, its CRC checked, ready to decode (``None`` for a control batch), from the kept ones
    if it came before."""
    try:
        header = parse_header(raw)
    except RecordBatchError as error:
        raise CorruptRecordBatch(f"pop: a batch does not read: {error}") from error
    if header.is_control:
        return None
    key = (topic_hex, partition, header.base_offset, header.crc)
    found = _KEPT.get(key)
    if found is None:
        found = Batch(RecordCursor(raw, header))
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
                 "count", "dense")

    def __init__(self, topic: str, group: str, topic_hex: str, partition: int, epoch: int, until: int,
                 reconsumed: dict[int, int], ranges: Sequence[tuple[int, int]], batches: Sequence[Batch]) -> None:
        self.topic, self.group, self.topic_hex, self.partition = topic, group, topic_hex, partition
        self.epoch, self.until, self.reconsumed, self.ranges = epoch, until, reconsumed, tuple(ranges)
        self.batches = sorted(batches, key=_base_offset)
        self.count = sum(last - first + 1 for first, last in self.ranges)
        self.dense = self.batches[0] if len(self.batches) == 1 and self.batches[0].dense else None
        """The one batch, without gaps, that holds every record (the usual case): a record's position is its
        offset less the batch's first."""

    def check(self) -> None:
        """Every offset of the ranges is in a batch sent: per batch for batches without gaps, per record in the
        others (the only ones whose offsets the header cannot say)."""
        bases = [batch.base_offset for batch in self.batches]
        for first, last in self.ranges:
            offset = first
            while offset <= last:
                at = bisect_right(bases, offset) - 1
                batch = self.batches[at] if at >= 0 else None
                if (batch is None or offset > batch.last_offset or offset < batch.first_offset
                        or (not batch.dense and batch.index(offset) is None)):
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
        self._record: tuple[int, bytes | None, bytes | None, Headers] | None = (timestamp, key, value, headers)
        """The fields given (a version 0 pop's); those of a compact pop's are read from its batch."""
        self._changed: tuple[str, int] | None = (handle, invisible_until_ms)
        """A handle given, not built from the checkpoint: a version 0 pop's, or the new one of a change."""

    def _located(self) -> tuple[Batch, int]:
        """The batch and position of the record, decoded with the rest of its step of the batch when it is the first
        of them asked."""
        checkpoint = self._checkpoint
        batch = checkpoint.dense
        if batch is not None:
            index = self.offset - batch.first_offset
            if index >= len(batch.values):
                batch.index(self.offset)
            return batch, index
        return checkpoint.locate(self.offset)

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
        if self._record is not None:
            return self._record[0]
        batch, index = self._located()
        return batch.timestamps[index]

    @property
    def key(self) -> bytes | None:
        if self._record is not None:
            return self._record[1]
        batch, index = self._located()
        return batch.keys[index]

    @property
    def value(self) -> bytes | None:
        batch = self._checkpoint.dense
        if batch is not None:  # the usual case, inline: the record decoded already
            index = self.offset - batch.first_offset
            if index < len(batch.values):
                return batch.values[index]
        if self._record is not None:
            return self._record[2]
        batch, index = self._located()
        return batch.values[index]

    @property
    def headers(self) -> Headers:
        if self._record is not None:
            return self._record[3]
        batch, index = self._located()
        return batch.headers.get(index, ())

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
