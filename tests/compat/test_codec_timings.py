"""Timings of the hot-path codec calls; ``pytest tests/compat -k timing -s`` prints the table quoted in
``compat/wire/messages.py``. Only a loose check is asserted (faster than kio's writer) so that a loaded
machine does not fail the suite."""

from __future__ import annotations

import dataclasses
import datetime
import io
import timeit
from collections.abc import Callable
from typing import Any

from kio.schema.fetch.v11 import response as fetch_v11
from kio.schema.fetch.v12 import response as fetch_v12
from kio.schema.produce.v7 import request as produce_request_v7
from kio.schema.produce.v7 import response as produce_v7
from kio.schema.produce.v9 import request as produce_request_v9
from kio.schema.produce.v9 import response as produce_v9
from kio.serial import entity_writer
from logwright.compat.errors import ErrorCode
from logwright.compat.wire.framing import FrameDecoder, encode_frame
from logwright.compat.wire.messages import decode_request, encode_request, encode_response, parse_request_header
from logwright.compat.wire.record_batch import Record, build_batch, parse_header, verify_crc, with_base_offset


def per_call_us(call: Callable[[], Any], number: int = 2000) -> float:
    return min(timeit.repeat(call, number=number, repeat=3)) / number * 1e6


def kio_us(entity: Any) -> float:
    writer = entity_writer(type(entity))

    def write() -> bytes:
        buffer = io.BytesIO()
        writer(buffer, entity)
        return buffer.getvalue()

    return per_call_us(write)


def make(cls: type[Any], **values: Any) -> Any:
    names = {field.name for field in dataclasses.fields(cls)}
    return cls(**{name: value for name, value in values.items() if name in names})


def produce_response(module: Any) -> Any:
    partition = make(module.PartitionProduceResponse, index=0, error_code=ErrorCode.NONE, base_offset=1234,
                                                log_start_offset=0, record_errors=())
    return module.ProduceResponse(responses=(module.TopicProduceResponse(name="orders", partition_responses=(
        partition,)),), throttle_time=datetime.timedelta(0))


def fetch_response(module: Any, records: bytes, partitions: int = 4) -> Any:
    data = tuple(module.PartitionData(partition_index=index, error_code=ErrorCode.NONE, high_watermark=100,
                                      last_stable_offset=100, log_start_offset=0, aborted_transactions=None,
                                      records=records) for index in range(partitions))
    return module.FetchResponse(throttle_time=datetime.timedelta(0), error_code=ErrorCode.NONE, session_id=0,
                                responses=(module.FetchableTopicResponse(topic="orders", partitions=data),))


def produce_request(module: Any, batch: bytes) -> Any:
    return module.ProduceRequest(transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=30),
                                 topic_data=(module.TopicProduceData(name="orders", partition_data=(
                                     module.PartitionProduceData(index=0, records=batch),)),))


def test_timing_table() -> None:
    batch = build_batch([Record(0, 1_700_000_000_000, b"key", b"v" * 1000)])
    rows: list[tuple[str, float, float | None]] = []
    for label, version, response in [
        ("ProduceResponse v9, 1 partition", 9, produce_response(produce_v9)),
        ("ProduceResponse v7, 1 partition", 7, produce_response(produce_v7)),
        ("FetchResponse v12, 4 x 16 KiB", 12, fetch_response(fetch_v12, b"x" * 16384)),
        ("FetchResponse v12, 4 x 100 B", 12, fetch_response(fetch_v12, b"x" * 100)),
        ("FetchResponse v11, 4 x 16 KiB", 11, fetch_response(fetch_v11, b"x" * 16384)),
    ]:
        api_key = type(response).__api_key__
        ours = per_call_us(lambda r=response, k=api_key, v=version: encode_response(k, v, 1, r))
        rows.append((f"encode_response {label}", ours, kio_us(response)))
        assert ours < kio_us(response)
    for version, module in ((9, produce_request_v9), (7, produce_request_v7)):
        frame = encode_request(produce_request(module, batch), 1, "bench")
        rows.append((f"decode_request ProduceRequest v{version}, 1 KiB batch", per_call_us(
            lambda f=frame: decode_request(f)), None))
        rows.append((f"parse_request_header (v{version})", per_call_us(lambda f=frame: parse_request_header(f)), None))
    rows.append(("parse_header (61-byte batch header)", per_call_us(lambda: parse_header(batch)), None))
    rows.append((f"verify_crc ({len(batch)}-byte batch)", per_call_us(lambda: verify_crc(batch)), None))
    rows.append(("with_base_offset", per_call_us(lambda: with_base_offset(batch, 99)), None))
    stream = encode_frame(b"r" * 200) * 100
    rows.append(("FrameDecoder.feed, per 200-byte frame", per_call_us(lambda: FrameDecoder().feed(stream), 200) / 100,
                 None))
    print()
    for label, ours, kio in rows:
        print(f"{label:<55} {ours:8.2f} us" + (f"   (kio writer {kio:6.1f} us)" if kio is not None else ""))
