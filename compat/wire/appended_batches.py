"""A stored batch as the index hooks see it (`AppendedBatch`): its header fields, a byte search, its records.

Produce never decodes records. A plugin indexing appends (``logwright_derive_events``) first asks
`AppendedBatch.contains` (a substring search, about 1 us for a 16 KiB batch) or `headers_contain` (the same over
the headers only when the records are large: a 1 MB record's value is not searched) and decodes only the
batches that may matter; a compressed batch hides its bytes, so reading it means decompressing it, which the
plugin asks for only where its topic config says so (the delayed-delivery plugin's measured cost is in
docs/share-groups.md). Records are read by `record_keys` (bounded against hostile input); records that cannot
be read give ``()``, never an error here: the batch already passed its CRC and its consumers judge it.

The search is StringZilla's (SIMD, picked at run time for the CPU), not ``bytes.find``: the delayed-delivery plugin
searches every uncompressed batch a producer sends, and ``bytes.find`` took 190-290 us a MB here (zeros, random
text, JSON), about a tenth of a one-partition produce's CPU; StringZilla takes 60-70 us on the same bytes. It is
handed Python objects only, so it reads within their own lengths.
"""

from __future__ import annotations

from collections.abc import Callable

import stringzilla
from logwright.compat.wire.compression import Compression, inflate
from logwright.compat.wire.record_batch import HEADER_SIZE, CorruptBatch
from logwright.core.log.index_hooks import AppendedBatch
from logwright.core.log.record_keys import KeyedRecord, UnreadableRecords, headers_contain, keyed_records


def appended_batch(data: bytes | memoryview, topic: str, partition_index: int, partition_id: int,
                   topic_config: Callable[[str], str | None]) -> AppendedBatch:
    """The hooks' view of ``data``, a batch as stored (its base offset patched in; its header already checked
    by Produce or written by the broker, so the fixed fields are read in place, not parsed again)."""
    if len(data) < HEADER_SIZE:
        raise CorruptBatch(f"a record batch needs {HEADER_SIZE} header bytes, got {len(data)}")
    attributes = int.from_bytes(data[_ATTRIBUTES_AT:_ATTRIBUTES_AT + 2], "big")
    compressed = attributes & _CODEC_MASK != Compression.NONE

    record_count = int.from_bytes(data[_RECORD_COUNT_AT:_RECORD_COUNT_AT + 4], "big", signed=True)

    def contains(needle: bytes) -> bool:
        return not compressed and _found(data, needle)

    def in_headers(needle: bytes) -> bool:
        if compressed:
            return False
        if record_count <= 0 or len(data) < _HEADERS_WALKED_FROM * record_count:
            return _found(data, needle)
        try:
            return headers_contain(data, needle)
        except UnreadableRecords:
            return False

    def records(open_compressed: bool) -> tuple[KeyedRecord, ...]:
        if compressed and not open_compressed:
            return ()
        try:
            return keyed_records(data, inflate)
        except UnreadableRecords:
            return ()

    return AppendedBatch(topic, partition_index, partition_id, int.from_bytes(data[:8], "big"), record_count,
                         compressed, bool(attributes & _CONTROL_FLAG), topic_config, contains, in_headers, records)


def _found(data: bytes | memoryview, needle: bytes) -> bool:
    """Whether ``needle`` occurs in ``data`` past the batch header."""
    position: int = stringzilla.find(data, needle, HEADER_SIZE)
    return position >= 0


_HEADERS_WALKED_FROM = 128 * 1024
"""Records this large on average have their headers searched record by record (`headers_contain`: 4-7 us a
record), values skipped; smaller ones, the whole batch (65-70 us a MB: 16 records of 64 KiB took 72 us searched
whole, 111 walked)."""
_ATTRIBUTES_AT = 21
_RECORD_COUNT_AT = 57
_CODEC_MASK = 0x07
_CONTROL_FLAG = 0x20
