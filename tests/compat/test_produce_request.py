"""The hand-written ProduceRequest reader against kio's: same values, records as views of the frame."""

from __future__ import annotations

import datetime
import struct
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.serial import entity_reader
from logwright.compat.wire.messages import (
    MalformedRequest,
    decode_request,
    encode_request,
    parse_request_header,
    request_type,
)
from logwright.compat.wire.produce_request import (
    FIRST_VERSION,
    LAST_VERSION,
    VIEW_FROM_BYTES,
    TruncatedProduceRequest,
    read_produce_request,
)


def _request(version: int, transactional_id: str | None, acks: int, timeout_ms: int,
             topics: list[tuple[str, list[tuple[int, bytes | None]]]]) -> Any:
    """v13 names each topic by an id made from its name (the empty name: all zeros, kio's None)."""
    cls = request_type(0, version)
    module = __import__(cls.__module__, fromlist=["TopicProduceData"])

    def topic(name: str, partitions: tuple[Any, ...]) -> Any:
        if version >= 13:
            return module.TopicProduceData(topic_id=uuid.uuid5(uuid.NAMESPACE_OID, name) if name else None,
                                           partition_data=partitions)
        return module.TopicProduceData(name=name, partition_data=partitions)

    return cls(transactional_id=transactional_id, acks=acks, timeout=datetime.timedelta(milliseconds=timeout_ms),
               topic_data=tuple(topic(name, tuple(module.PartitionProduceData(index=index, records=records)
                                                  for index, records in partitions))
                                for name, partitions in topics))


def _plain(request: Any) -> Any:
    """The request with every records view turned into bytes, to compare with kio's."""
    return (request.transactional_id, request.acks, request.timeout, tuple(
        (getattr(topic, "name", None) or getattr(topic, "topic_id", None),
         tuple((partition.index, None if partition.records is None else bytes(partition.records))
               for partition in topic.partition_data))
        for topic in request.topic_data))


_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_topics = st.lists(st.tuples(_names, st.lists(st.tuples(st.integers(-2**31, 2**31 - 1),
                                                        st.none() | st.binary(max_size=300)), max_size=3)),
                   max_size=3)


@settings(max_examples=150, deadline=None)
@given(version=st.integers(FIRST_VERSION, LAST_VERSION), transactional_id=st.none() | _names,
       acks=st.sampled_from([-1, 0, 1, 2]), timeout_ms=st.integers(0, 2**31 - 1), topics=_topics)
def test_reads_what_kio_reads(version: int, transactional_id: str | None, acks: int, timeout_ms: int,
                              topics: list[tuple[str, list[tuple[int, bytes | None]]]]) -> None:
    frame = encode_request(_request(version, transactional_id, acks, timeout_ms, topics), 7, "client")
    header = parse_request_header(frame)
    ours = read_produce_request(frame, header.header_length, version)
    kio_request, _ = entity_reader(request_type(0, version))(frame, header.header_length)
    assert type(ours) is type(kio_request)
    assert _plain(ours) == _plain(kio_request)
    for topic in ours.topic_data:
        for partition in topic.partition_data:
            assert partition.records is None or isinstance(partition.records, memoryview)


@pytest.mark.parametrize("version", [3, 8, 9, 12, 13])
def test_every_truncation_raises(version: int) -> None:
    frame = encode_request(_request(version, "tx", -1, 30_000, [("t", [(0, b"x" * 70), (1, None)])]), 3, "c")
    header = parse_request_header(frame)
    for cut in range(header.header_length, len(frame)):
        with pytest.raises((TruncatedProduceRequest, IndexError, struct.error)):
            read_produce_request(frame[:cut], header.header_length, version)


def test_large_requests_are_read_here_and_truncated_ones_are_malformed() -> None:
    records = b"r" * VIEW_FROM_BYTES
    frame = encode_request(_request(9, None, -1, 30_000, [("t", [(0, records)])]), 3, "c")
    _, request = decode_request(frame)
    assert isinstance(request.topic_data[0].partition_data[0].records, memoryview)
    assert request.topic_data[0].partition_data[0].records == records
    with pytest.raises(MalformedRequest, match=r"produce v9 request \(correlation id 3\) is unreadable"):
        decode_request(frame[:-2])


def test_unknown_tagged_fields_are_skipped() -> None:
    """As Kafka skips them (KIP-482); kio's reader raises KeyError on a tag it does not know."""
    frame = encode_request(_request(9, None, 1, 5, [("t", [(0, b"abc")])]), 1, None)
    assert frame.endswith(b"\x00\x00\x00")  # partition, topic and request tagged fields: none
    tagged = frame[:-3] + b"\x01\x05\x02zz" + b"\x00" + b"\x02\x00\x01q\x07\x00"
    ours = read_produce_request(tagged, parse_request_header(tagged).header_length, 9)
    assert _plain(ours) == (None, 1, datetime.timedelta(milliseconds=5), (("t", ((0, b"abc"),)),))


def test_only_its_versions() -> None:
    with pytest.raises(ValueError, match="v14"):
        read_produce_request(b"", 0, 14)
