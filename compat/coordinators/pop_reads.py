"""What a pop reads from a partition's log: the records (v0) or the stored batches and offsets (compact) a pop hands
out, from the due revivals and the partition's position up to the last stable offset, passing over control batches,
aborted transactions and what plugins hold back, and bounded in bytes (`PopBytes`).

Apart from `PopCoordinator` because reading is its own job with its own memory: the decoded batches a pop takes 32
records at a time from (batches often hold thousands), kept in a bounded cache. The coordinator decides what is in
flight and stages the events; this reads and never stages.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from logwright.compat.aborted_transactions import aborted_between
from logwright.compat.broker import Broker
from logwright.compat.coordinators.pop_held import HeldDueTimes
from logwright.compat.kafka.fetch import last_stable_offset
from logwright.compat.wire.record_batch import BatchHeader, decode_records, parse_header
from logwright.compat.wire.records import Record
from logwright.core.pop.inflight import PopPartition

DECODED_BATCHES = 64
"""Decoded batches kept (a few per partition being popped)."""
DECODED_BYTES = 32 * 2**20
"""And at most this much of them (`decoded_size`), the newest kept whatever its size: a compressed batch of a few
KiB may decode to 64 MiB (`compression.MAX_DECOMPRESSED_BYTES`), so 64 batches alone could have held 4 GiB (the
hostile-values fuzz, seed 239, had 40 MiB of 4 MiB values here by its 1,750th example)."""
RECORD_OBJECT_BYTES = 200
"""What a decoded record costs beside its key, value and headers (the object, its two ints and bytes headers)."""
POP_MAX_BYTES = 4 * 2**20
"""What one pop hands out at most, and one record (v0: keys, values and headers, `decoded_size`) or stored batch
(compact) more, so a pop always makes progress: without it a pop of 32 records that a few KiB of zstd expand to
8 MiB each (the hostile-values fuzz stores such records) would have built a 256 MiB answer, and 1,024 compact
records may sit in 1,024 stored batches of 1 MiB. Kafka's Fetch has ``fetch.max.bytes`` and RocketMQ's store
stops a pull at 256 KiB of messages (one at least); a pop answer here is one message, so this bound is
logwright's own."""


@dataclass(slots=True)
class PopBytes:
    """What is left of one pop's `POP_MAX_BYTES`, shared by the partitions it visits."""

    left: int = POP_MAX_BYTES

    @property
    def spent(self) -> bool:
        return self.left <= 0


class PopReader:
    """Reads for the pop coordinator, through a bounded cache of decoded batches."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._decoded: dict[tuple[int, int, int], tuple[int, tuple[Record, ...], int]] = {}
        """Recently decoded stored batches, oldest first: (partition id, base offset, CRC) → last offset, records."""
        self._decoded_sizes: dict[tuple[int, int, int], int] = {}
        self.decoded_bytes = 0
        """What the decoded batches kept hold (`decoded_size`), bounded by `DECODED_BYTES` beside the newest."""

    def read(self, state: PopPartition, revived: Sequence[int], budget: int, held_room: int, room: PopBytes
              ) -> tuple[dict[int, Record], list[int], int, list[tuple[int, int]]]:
        """The records at the ``revived`` offsets and up to ``budget`` new ones from ``state.next_offset``, the
        revived offsets read (those before ``room`` was spent), the position after what was read, and the
        ``(offset, due_ms)`` passed over because a plugin holds them back (delayed delivery: the coordinator parks them;
        the read stops when ``held_room`` would not fit another).
        Pops read committed data only, as RocketMQ hands out a transactional message once it is committed: up
        to the last stable offset, control batches and the batches of aborted transactions passed over."""
        partition_id = state.partition_id
        found: dict[int, Record] = {}
        log_start = self.broker.partition(partition_id).log_start_offset

        def revive(offset: int) -> int:
            record = self.record_at(partition_id, offset) if offset >= log_start else None
            if record is None:
                return 0
            found[offset] = record
            return record_size(record)

        read = _read_revived(revived, room, revive)
        next_offset, stable, aborted, hold = self.window(state, log_start)
        held: list[tuple[int, int]] = []
        taken = 0
        while taken < budget and next_offset < stable and taken + len(held) < held_room and not room.spent:
            batch = self.batch_at(partition_id, next_offset, stable - 1)
            if batch is None:
                break
            last, records, producer_id = batch
            if producer_id >= 0 and _aborted(aborted, producer_id, last):
                next_offset = max(next_offset, last + 1)
                continue
            for record in records[bisect_left(records, next_offset, key=_offset_of):]:
                due = hold.due(record.offset) if hold is not None else None
                if due is not None and taken + len(held) >= held_room:
                    break
                if taken >= budget or room.spent:
                    break
                next_offset = record.offset + 1
                if due is not None:
                    held.append((record.offset, due))
                    continue
                found[record.offset] = record
                room.left -= record_size(record)
                taken += 1
            if taken < budget and taken + len(held) < held_room and not room.spent:
                next_offset = max(next_offset, last + 1)
        return found, read, next_offset, held

    def window(self, state: PopPartition, log_start: int
                ) -> tuple[int, int, Sequence[tuple[int, int, int]], HeldDueTimes | None]:
        """Where a read of ``state`` starts (not before ``log_start``), the last stable offset it stays below,
        the aborted transactions with records in between (`aborted_between`) and what plugins hold back there:
        `read` and `read_offsets` read the same records, in their two forms."""
        next_offset = max(state.next_offset, log_start)
        stable = last_stable_offset(self.broker, state.partition_id)
        aborted = aborted_between(self.broker.store, state.partition_id, next_offset, stable)
        # what the plugins hold back (``logwright_hold_back``, as share groups ask before acquiring), each offset's
        # due time asked only for the stretch the read meets; None, after one plain question, when nothing is
        return next_offset, stable, aborted, HeldDueTimes.of(self.broker, state.partition_id, next_offset, stable - 1)

    def batch_at(self, partition_id: int, offset: int, end_offset: int
                  ) -> tuple[int, tuple[Record, ...], int] | None:
        """The last offset, the data records (none for a control batch) and the producer id of a transactional
        batch (-1 otherwise) of the stored batch holding ``offset``, decoded once: pops take 32 records at a time
        from batches that often hold thousands."""
        batches = self.broker.store.read_batches(partition_id, offset, 1, end_offset=end_offset)
        if not batches:
            return None
        batch = batches[0]
        header = parse_header(batch)
        key = (partition_id, header.base_offset, header.crc)
        cached = self._decoded.get(key)
        if cached is None:
            records = () if header.is_control else tuple(decode_records(batch))
            cached = (header.base_offset + header.last_offset_delta, records,
                      header.producer_id if header.is_transactional else -1)
            self._keep_decoded(key, cached)
        return cached

    def _keep_decoded(self, key: tuple[int, int, int], decoded: tuple[int, tuple[Record, ...], int]) -> None:
        """Remember a decoded batch, forgetting the oldest beyond `DECODED_BATCHES` or `DECODED_BYTES`."""
        size = decoded_size(decoded[1])
        self._decoded[key] = decoded
        self._decoded_sizes[key] = size
        self.decoded_bytes += size
        while len(self._decoded) > 1 and (len(self._decoded) > DECODED_BATCHES or self.decoded_bytes > DECODED_BYTES):
            oldest = next(iter(self._decoded))
            del self._decoded[oldest]
            self.decoded_bytes -= self._decoded_sizes.pop(oldest)

    def record_at(self, partition_id: int, offset: int) -> Record | None:
        """The data record at ``offset`` (revived records are read again from their partition, by reference)."""
        batch = self.batch_at(partition_id, offset, offset)
        if batch is None:
            return None
        return next((record for record in batch[1] if record.offset == offset), None)

    def read_offsets(self, state: PopPartition, revived: Sequence[int], budget: int, held_room: int,
                      room: PopBytes) -> tuple[list[int], list[int], dict[int, bytes], int, list[tuple[int, int]]]:
        """`read` in the compact form: the offsets handed out, the revived offsets read, the stored batches holding
        them (by base offset; each costs ``room`` its size once), the position after what was read and the
        held-back ``(offset, due_ms)``. Offsets come from the batch headers; only a batch with gaps (compaction) is
        decoded to learn which offsets it holds."""
        partition_id = state.partition_id
        found: list[int] = []
        batches: dict[int, bytes] = {}
        log_start = self.broker.partition(partition_id).log_start_offset

        def revive(offset: int) -> int:
            stored = self.offsets_at(partition_id, offset, offset) if offset >= log_start else None
            if stored is None or not _holds(stored[2], offset):
                return 0
            found.append(offset)
            if stored[0].base_offset in batches:
                return 0
            batches[stored[0].base_offset] = stored[1]
            return len(stored[1])

        read = _read_revived(revived, room, revive)
        next_offset, stable, aborted, hold = self.window(state, log_start)
        held: list[tuple[int, int]] = []
        taken = 0
        while taken < budget and next_offset < stable and taken + len(held) < held_room and not room.spent:
            stored = self.offsets_at(partition_id, next_offset, stable - 1)
            if stored is None:
                break
            header, batch, offsets = stored
            last = header.last_offset
            if header.is_transactional and _aborted(aborted, header.producer_id, last):
                next_offset = max(next_offset, last + 1)
                continue
            start = bisect_left(offsets, next_offset)
            before = taken
            if hold is None:
                chunk = offsets[start:start + budget - taken]
                if len(chunk):
                    found.extend(chunk)
                    taken += len(chunk)
                    next_offset = chunk[-1] + 1
            else:
                for offset in offsets[start:]:
                    due = hold.due(offset)
                    if (due is not None and taken + len(held) >= held_room) or taken >= budget:
                        break
                    next_offset = offset + 1
                    if due is not None:
                        held.append((offset, due))
                        continue
                    found.append(offset)
                    taken += 1
            if taken > before and header.base_offset not in batches:
                batches[header.base_offset] = batch
                room.left -= len(batch)
            if taken < budget and taken + len(held) < held_room:
                next_offset = max(next_offset, last + 1)
        return found, read, batches, next_offset, held

    def offsets_at(self, partition_id: int, offset: int, end_offset: int
                    ) -> tuple[BatchHeader, bytes, Sequence[int]] | None:
        """The header, the bytes and the data record offsets of the stored batch holding ``offset``: a range from
        the header when the batch has no gaps, else what decoding it finds (none for a control batch)."""
        batches = self.broker.store.read_batches(partition_id, offset, 1, end_offset=end_offset)
        if not batches:
            return None
        batch = bytes(batches[0])
        header = parse_header(batch)
        if header.is_control:
            return header, batch, ()
        if header.record_count == header.last_offset_delta + 1:
            return header, batch, range(header.base_offset, header.last_offset + 1)
        decoded = self.batch_at(partition_id, offset, end_offset)
        return header, batch, tuple(record.offset for record in decoded[1]) if decoded is not None else ()


def _read_revived(revived: Sequence[int], room: PopBytes, revive: Callable[[int], int]) -> list[int]:
    """The ``revived`` offsets read before ``room`` was spent, each handed to ``revive``, which keeps what it found
    and returns the bytes that cost ``room``: the two forms of a pop differ only in what they keep."""
    read: list[int] = []
    for offset in revived:
        if room.spent:
            break
        read.append(offset)
        room.left -= revive(offset)
    return read


def _holds(offsets: Sequence[int], offset: int) -> bool:
    index = bisect_left(offsets, offset)
    return index < len(offsets) and offsets[index] == offset


def _aborted(aborted: Sequence[tuple[int, int, int]], producer_id: int, last: int) -> bool:
    """Whether the transactional batch of ``producer_id`` ending at ``last`` belongs to an aborted transaction
    (producer id, first offset, marker offset)."""
    return any(aborted_by == producer_id and first <= last <= marker for aborted_by, first, marker in aborted)


def _offset_of(record: Record) -> int:
    return record.offset


def decoded_size(records: Sequence[Record]) -> int:
    """About what ``records`` hold in memory: their keys, values and headers, and `RECORD_OBJECT_BYTES` each."""
    return sum(map(record_size, records))


def record_size(record: Record) -> int:
    """`decoded_size` of one record (counted for each record a v0 pop hands out: 0.05 us, no generator)."""
    size = RECORD_OBJECT_BYTES + len(record.key or b"") + len(record.value or b"")
    if record.headers:
        size += sum(len(name) + len(value or b"") for name, value in record.headers)
    return size
