"""Reading delivery headers out of a batch at produce time, without slowing the batches that carry none.

Produce never decodes records. The one exception: a batch whose bytes contain ``logwright.deliver.``
(a substring search, a few microseconds for a 16 KiB batch) is decoded to find its delayed records.
A compressed batch hides its header keys, so finding them means decompressing it; that is done only
when ``logwright.delayed.delivery.compressed.enable`` is on for the topic (measured cost in
docs/share-groups.md). Records that cannot be decoded are delivered at once, never refused here: the
batch already passed its CRC and the consumers, not this index, judge its records.
"""

from __future__ import annotations

from logwright.compat.wire.compression import Compression, CompressionError, decompress
from logwright.compat.wire.record_batch import HEADER_SIZE, BatchHeader
from logwright.compat.wire.records import parse_records
from logwright.core.log.delayed_delivery import HEADER_PREFIX, deliver_at


def delayed_entries(batch: bytes, header: BatchHeader, appended_at_ms: int, compressed: bool
                    ) -> tuple[tuple[int, int], ...]:
    """``(offset, deliver_at_ms)`` of the batch's delayed records (its base offset already patched in).

    ``compressed`` says whether a compressed batch is opened at all; uncompressed ones always are
    when the header prefix is in their bytes.
    """
    if header.compression == Compression.NONE:
        if HEADER_PREFIX not in batch:
            return ()
        data: bytes | memoryview = memoryview(batch)[HEADER_SIZE:header.size]
    elif not compressed:
        return ()
    else:
        try:
            data = decompress(header.compression, memoryview(batch)[HEADER_SIZE:header.size])
        except CompressionError:
            return ()
        if HEADER_PREFIX not in data:
            return ()
    try:
        base_offset = int.from_bytes(batch[:8], "big")  # the patched one, not the producer's 0
        records = parse_records(bytes(data), base_offset, header.base_timestamp, None, header.record_count)
    except ValueError:  # CorruptRecords: malformed records are the consumers' concern, not the index's
        return ()
    entries: list[tuple[int, int]] = []
    for record in records:
        at = deliver_at(record.headers, appended_at_ms)
        if at is not None:
            entries.append((record.offset, at))
    return tuple(entries)
