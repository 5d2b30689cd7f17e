"""ProduceRequest v3-v13 read by hand, so that each partition's records stay a view of the request frame.

kio's compiled reader copies every ``records`` field out of the frame: one more copy of the whole payload
per request (a megabyte with librdkafka's default ``batch.size``), and the broker makes the one copy it
needs later, when it patches the base offset into the stored batch. This reader returns the same kio
classes with the same field values, except that ``records`` is a `memoryview` of the frame (read-only,
and it keeps the frame alive). `tests/compat/test_produce_request.py` checks it against kio's reader.
"""

from __future__ import annotations

import datetime
import importlib
import struct
import uuid
from functools import cache
from typing import Any

from kio.index import load_request_schema
from logwright.compat.wire.varints import read_uvarint

MAX_ELEMENTS = 100_000
"""Topics, partitions and tagged fields one Produce may hold in all, read here one by one in Python (about 1 us each:
a 6 MB Produce of a million null partitions held the event loop a second). Clients cap a request near 1 MB
(librdkafka's ``message.max.bytes``, Java's ``max.request.size``), so one of a few hundred bytes per partition has a
few thousand. logwright's limit (`bounds.MAX_ELEMENTS` for the other keys); Kafka has none."""

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")
FIRST_VERSION, LAST_VERSION, FIRST_FLEXIBLE, FIRST_BY_ID = 3, 13, 9, 13
VIEW_FROM_BYTES = 128 * 1024
"""Frames this large are read here, the size from which the server reads a frame into its own buffer: the reader
costs ~5 us more than kio's per request (7.3 against 1.8 us for a 1 KiB frame) and saves ~25 us per MB copied
(7.4 against 27-32 us for a 1 MB frame, warm caches); at 64-128 KiB the two were even."""


class TruncatedProduceRequest(ValueError):
    """A length or count in the request points past the end of the frame, or is negative where it may not be."""


@cache
def _classes(version: int) -> tuple[Any, Any, Any]:
    request = load_request_schema(0, version)
    module = importlib.import_module(request.__module__)
    return request, module.TopicProduceData, module.PartitionProduceData


def read_produce_request(frame: bytes | bytearray | memoryview, position: int, version: int) -> Any:
    """kio's ``ProduceRequest`` of ``version`` from the body starting at ``position``; bytes after it are ignored.

    Raises `TruncatedProduceRequest`, `IndexError`, `struct.error` or `UnicodeDecodeError` on a malformed
    body (the caller turns any of them into its own error). Pure Python, and every length and count is checked
    against the bytes left before it is used, so a forged one costs at most a pass over the frame (`bounds`
    is not needed here), and arrays and tagged fields hold at most `MAX_ELEMENTS` items in all.
    """
    if not FIRST_VERSION <= version <= LAST_VERSION:
        raise ValueError(f"Produce v{version} is not read here")
    request_cls, topic_cls, partition_cls = _classes(version)
    view = memoryview(frame)
    end = len(frame)
    flexible = version >= FIRST_FLEXIBLE
    left = MAX_ELEMENTS

    def spend(items: int) -> None:
        nonlocal left
        left -= items
        if left < 0:
            raise TruncatedProduceRequest(f"the request holds more than {MAX_ELEMENTS:,} elements and tagged fields")

    def length(nullable: bool, wide: bool) -> int:
        """A string's or bytes' length (-1 for null), moving past it."""
        nonlocal position
        if flexible:
            value, position = read_uvarint(frame, position)
            value -= 1
        elif wide:
            (value,) = _I32.unpack_from(frame, position)
            position += 4
        else:
            (value,) = _I16.unpack_from(frame, position)
            position += 2
        if value < -1 or (value == -1 and not nullable) or position + value > end:
            raise TruncatedProduceRequest(f"a length of {value} at byte {position} does not fit the frame")
        return value

    def string(nullable: bool) -> str | None:
        nonlocal position
        size = length(nullable, wide=False)
        if size < 0:
            return None
        position += size
        return str(view[position - size : position], "utf-8")

    def count() -> int:
        nonlocal position
        if flexible:
            value, position = read_uvarint(frame, position)
            value -= 1
        else:
            (value,) = _I32.unpack_from(frame, position)
            position += 4
        if value < 0 or value > end - position:
            raise TruncatedProduceRequest(f"an array count of {value} before byte {position} does not fit the frame")
        spend(value)
        return value

    def skip_tagged_fields() -> None:
        nonlocal position
        if flexible:
            tags, position = read_uvarint(frame, position)
            if tags > end - position:
                raise TruncatedProduceRequest(f"{tags} tagged fields before byte {position} do not fit the frame")
            spend(tags)
            for _ in range(tags):
                _tag, position = read_uvarint(frame, position)
                size, position = read_uvarint(frame, position)
                position += size
            if position > end:
                raise TruncatedProduceRequest("tagged fields run past the end of the frame")

    transactional_id = string(nullable=True)
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(frame, position)
    position += _ACKS_TIMEOUT.size
    topics = []
    by_id = version >= FIRST_BY_ID
    for _ in range(count()):
        if by_id:  # v13 (KIP-516) names the topic by its id; all zeros is kio's None
            if position + 16 > end:
                raise TruncatedProduceRequest(f"a topic id at byte {position} does not fit the frame")
            raw = bytes(view[position : position + 16])
            position += 16
            topic_id = uuid.UUID(bytes=raw) if any(raw) else None
        else:
            name = string(nullable=False)
        partitions = []
        for _ in range(count()):
            (index,) = _I32.unpack_from(frame, position)
            position += 4
            size = length(nullable=True, wide=True)
            records = None if size < 0 else view[position : position + size]
            position += max(size, 0)
            if flexible and position < end and frame[position] == 0:  # no tagged fields: the common case, inline
                position += 1
            else:
                skip_tagged_fields()
            partitions.append(partition_cls(index=index, records=records))
        skip_tagged_fields()
        topics.append(topic_cls(topic_id=topic_id, partition_data=tuple(partitions)) if by_id
                      else topic_cls(name=name, partition_data=tuple(partitions)))
    skip_tagged_fields()
    return request_cls(transactional_id=transactional_id, acks=acks,
                       timeout=datetime.timedelta(milliseconds=timeout_ms), topic_data=tuple(topics))
