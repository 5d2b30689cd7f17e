"""How Produce reads a partition's bytes and what its refusals carry, answered as Apache Kafka 4.4 answers
(``--against kafka``).

Raw Produce v9 requests, one partition each: bytes after the one whole batch (dropped when they are not a whole
batch), too few bytes for any batch, a size or magic Kafka's reader calls corrupt, an old magic; the refusals of
Kafka's LogValidator (a base offset other than 0, a control batch, a producer id without a sequence, timestamps out
of bounds, records without a key on a compacted topic), which carry the partition's log start offset and, for the
last two, every refused record in ``record_errors``; a partition named twice (the last batch is appended, answered
once).
"""

from __future__ import annotations

import asyncio
import datetime
import importlib
import socket
import struct
import time
import uuid
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from crc32c import crc32c
from kio.schema.api_versions.v0 import request as api_versions_v0
from kio.schema.delete_records.v2 import request as delete_records
from kio.schema.produce.v9 import request as produce_v9
from logwright.client.connection import Connection
from logwright.compat.appends import LISTED_RECORDS_MAX
from logwright.compat.registry import make
from logwright.compat.wire.compression import Compression
from logwright.compat.wire.framing import encode_frame
from logwright.compat.wire.messages import encode_request
from logwright.compat.wire.record_batch import Record, build_batch

from .test_controller_timeouts import ask
from .test_list_offsets_checks import list_offsets

pytestmark = pytest.mark.differential

UNKNOWN_SERVER_ERROR, NONE, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_TIMESTAMP, INVALID_RECORD = -1, 0, 2, 10, 32, 87
TIMEOUT_S = 30.0
WINDOW_MS = 60_000
"""message.timestamp.before.max.ms and after.max.ms of the strict topic."""


def _now() -> int:
    return int(time.time() * 1000)


def _one(value: bytes = b"a", **options: Any) -> bytes:
    return build_batch([Record(0, _now(), None, value, ())], **options)


def _topic(bootstrap: str, prefix: str, configs: dict[str, str] | None = None, partitions: int = 1) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config=configs or {})])[name].result(TIMEOUT_S)
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:  # a fresh Kafka topic's partitions take a moment to be led by its broker
        answers = list_offsets(bootstrap, name, [(partition, -1, -1) for partition in range(partitions)])
        if all(code == NONE for _, code, *_ in answers):
            break
        time.sleep(0.05)
    return name


Answer = tuple[int, int, int, list[int], str | None]
"""Error, base offset, log start offset, the indexes ``record_errors`` names, the message."""


def produce(bootstrap: str, topic: str, *records: bytes, version: int = 9, partition: int = 0) -> list[Answer]:
    """One Produce naming ``partition`` once for each of ``records``, on a connection of its own."""
    module: Any = importlib.import_module(f"kio.schema.produce.v{version}.request")

    async def exchange() -> Any:
        connection = await Connection.open(bootstrap, "produce-checks")
        try:
            return await connection.request(make(
                module.ProduceRequest, transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=10),
                topic_data=(make(module.TopicProduceData, name=topic, partition_data=tuple(
                    make(module.PartitionProduceData, index=partition, records=data) for data in records)),)))
        finally:
            await connection.close()

    answer = asyncio.run(exchange())
    return [(int(p.error_code), int(p.base_offset), int(getattr(p, "log_start_offset", -1)),
             [int(e.batch_index) for e in getattr(p, "record_errors", ())], getattr(p, "error_message", None))
            for t in answer.responses for p in t.partition_responses]


def codes(answers: list[Answer]) -> list[tuple[int, int, int, list[int]]]:
    return [(code, base, start, indexes) for code, base, start, indexes, _ in answers]


def _recrc(batch: bytearray) -> bytes:
    batch[17:21] = struct.pack(">I", crc32c(bytes(batch[21:])))
    return bytes(batch)


def test_bytes_after_the_batch_and_bytes_that_hold_no_batch(bootstrap: str) -> None:
    topic = _topic(bootstrap, "produce-checks-bytes")
    size_100 = struct.pack(">qi", 0, 100)
    assert codes(produce(bootstrap, topic, _one() + b"\x00\x01\x02\x03\x04")) == [(NONE, 0, 0, [])]
    assert codes(produce(bootstrap, topic, _one() + size_100 + bytes(18))) == [(NONE, 1, 0, [])]  # incomplete: dropped
    assert codes(produce(bootstrap, topic, _one() + bytes(12))) == [(CORRUPT_MESSAGE, -1, -1, [])]  # size 0 < 14
    assert codes(produce(bootstrap, topic, _one() + _one())) == [(INVALID_RECORD, -1, -1, [])]
    for nothing in (bytes(11), size_100 + bytes(18), struct.pack(">qi", 0, 2**30) + bytes(60)):
        assert codes(produce(bootstrap, topic, nothing)) == [(INVALID_RECORD, -1, -1, [])]
    assert codes(produce(bootstrap, topic, struct.pack(">qi", 0, 5) + bytes(5))) == [(CORRUPT_MESSAGE, -1, -1, [])]
    for magic, code in ((1, INVALID_RECORD), (0, INVALID_RECORD), (3, CORRUPT_MESSAGE)):
        batch = bytearray(_one())
        batch[16] = magic
        assert codes(produce(bootstrap, topic, bytes(batch))) == [(code, -1, -1, [])], magic
    assert codes(produce(bootstrap, topic, _one())) == [(NONE, 2, 0, [])]  # what was dropped took no offset


def test_the_log_validators_refusals_carry_the_log_start_offset(bootstrap: str) -> None:
    topic = _topic(bootstrap, "produce-checks-start")
    assert codes(produce(bootstrap, topic, _one(), )) == [(NONE, 0, 0, [])]
    assert codes(produce(bootstrap, topic, _one())) == [(NONE, 1, 0, [])]
    ask(bootstrap, make(delete_records.DeleteRecordsRequest, timeout=datetime.timedelta(seconds=5), topics=(
        make(delete_records.DeleteRecordsTopic, name=topic, partitions=(
            make(delete_records.DeleteRecordsPartition, partition_index=0, offset=1),)),)))
    unreadable = bytearray(build_batch([Record(i, _now(), None, b"v%d" % i, ()) for i in range(3)]))
    unreadable[61] = 0x7E  # the first record's length runs past the batch
    for refused in (_one(base_offset=7), _one(is_control=True), _one(producer_id=777, producer_epoch=0),
                    _recrc(unreadable)):
        assert codes(produce(bootstrap, topic, refused)) == [(INVALID_RECORD, -1, 1, [])]
    bad_crc = bytearray(_one())
    bad_crc[-1] ^= 0xFF
    assert codes(produce(bootstrap, topic, bytes(bad_crc))) == [(CORRUPT_MESSAGE, -1, -1, [])]
    assert codes(produce(bootstrap, topic, _one(bytes(1_100_000)))) == [(MESSAGE_TOO_LARGE, -1, -1, [])]
    assert codes(produce(bootstrap, topic, _one())) == [(NONE, 2, 1, [])]


def test_every_record_out_of_the_time_window_is_named(bootstrap: str) -> None:
    topic = _topic(bootstrap, "produce-checks-time", {"message.timestamp.before.max.ms": str(WINDOW_MS),
                                                      "message.timestamp.after.max.ms": str(WINDOW_MS)})
    now = _now()
    times = (now, now - 5 * WINDOW_MS, now + 5 * WINDOW_MS, now, now - 6 * WINDOW_MS)
    for compression in (Compression.NONE, Compression.GZIP):
        batch = build_batch([Record(i, at, None, b"v", ()) for i, at in enumerate(times)], compression=compression)
        ((code, base, start, indexes, message),) = produce(bootstrap, topic, batch)
        assert (code, base, start, indexes, message) == (
            INVALID_TIMESTAMP, -1, 0, [1, 2, 4], "One or more records have been rejected due to invalid timestamp")
    assert codes(produce(bootstrap, topic, _one())) == [(NONE, 0, 0, [])]


def test_every_record_without_a_key_on_a_compacted_topic_is_named(bootstrap: str) -> None:
    topic = _topic(bootstrap, "produce-checks-keys", {"cleanup.policy": "compact"})
    keys = (b"k", None, None, b"k", None, None)
    batch = build_batch([Record(i, _now(), key, b"v", ()) for i, key in enumerate(keys)])
    ((code, base, start, indexes, message),) = produce(bootstrap, topic, batch)
    assert (code, base, start, indexes) == (INVALID_RECORD, -1, 0, [1, 2, 4, 5])
    why = f"Compacted topic cannot accept message without key in topic partition {topic}-0"
    shown = ", ".join(f"RecordError(batchIndex={index}, message='{why}')" for index in (1, 2, 4))
    assert message == (f"One or more records have been rejected due to 4 record errors in total, and only showing "
                       f"the first three errors at most: [{shown}]")


def test_a_partition_named_twice_appends_the_last_batch_once(bootstrap: str) -> None:
    topic = _topic(bootstrap, "produce-checks-twice")
    first, last = _one(b"first"), build_batch([Record(i, _now(), None, b"last", ()) for i in range(2)])
    assert codes(produce(bootstrap, topic, first, last)) == [(NONE, 0, 0, [])]
    assert codes(produce(bootstrap, topic, _one())) == [(NONE, 2, 0, [])]  # the two records of the last batch only


@pytest.mark.parametrize("version", [3, 4, 7, 8])
def test_versions_before_record_errors_answer_the_refusal_alone(bootstrap: str, version: int) -> None:
    """Produce v3-7 carry no record_errors (a v3 refusal of a timestamp failed the handler: fuzzing, seed 238)."""
    topic = _topic(bootstrap, "produce-checks-old", {"message.timestamp.before.max.ms": str(WINDOW_MS)})
    batch = build_batch([Record(i, _now() - 5 * WINDOW_MS, None, b"v", ()) for i in range(2)])
    ((code, base, start, indexes, _),) = produce(bootstrap, topic, batch, version=version)
    assert (code, base, start if version >= 5 else -1, indexes) == (
        INVALID_TIMESTAMP, -1, 0 if version >= 5 else -1, [0, 1] if version >= 8 else [])
    assert codes(produce(bootstrap, topic, _one(), version=version))[0][:2] == (NONE, 0)


def _after_acks_0(bootstrap: str, topic: str, batch: bytes) -> str:
    """Send an ``acks=0`` Produce of ``batch`` and then an ApiVersions on the same connection: what became of it."""
    host, _, port = bootstrap.rpartition(":")
    produce_frame = encode_request(make(
        produce_v9.ProduceRequest, transactional_id=None, acks=0, timeout=datetime.timedelta(seconds=5),
        topic_data=(make(produce_v9.TopicProduceData, name=topic, partition_data=(
            make(produce_v9.PartitionProduceData, index=0, records=batch),)),)), 1, "produce-checks")
    versions_frame = encode_request(api_versions_v0.ApiVersionsRequest(), 2, "produce-checks")
    with socket.create_connection((host, int(port)), timeout=5) as connection:
        try:
            connection.sendall(encode_frame(produce_frame))
            time.sleep(0.3)
            connection.sendall(encode_frame(versions_frame))
            return "answered" if connection.recv(4) else "closed"
        except (ConnectionError, TimeoutError):
            return "closed"


def test_a_failed_acks_0_produce_closes_its_connection(bootstrap: str) -> None:
    """The producer has no answer to read: Kafka closes the connection to tell it, and so does logwright."""
    topic = _topic(bootstrap, "produce-checks-acks0")
    assert _after_acks_0(bootstrap, topic, _one()) == "answered"
    assert _after_acks_0(bootstrap, f"produce-checks-none-{uuid.uuid4().hex[:8]}", _one()) == "closed"
    assert _after_acks_0(bootstrap, topic, _one(base_offset=7)) == "closed"
    assert codes(produce(bootstrap, topic, _one())) == [(NONE, 1, 0, [])]  # the first was written, only the first


@pytest.mark.logwright_only
def test_a_refused_batch_past_the_listing_bound_names_its_first_record(bootstrap: str) -> None:
    """Past `LISTED_RECORDS_MAX` records only the first refused record is named (Kafka names every one): reading a
    forged batch of millions of tiny records into objects would take seconds and hundreds of MiB."""
    topic = _topic(bootstrap, "produce-checks-listing", {"message.timestamp.before.max.ms": str(WINDOW_MS),
                                                         "cleanup.policy": "compact"})
    now = _now()
    records = [Record(i, now if i != 3 else now - 5 * WINDOW_MS, b"k", b"", ()) for i in range(LISTED_RECORDS_MAX + 1)]
    ((code, _, _, indexes, message),) = produce(bootstrap, topic, build_batch(records, compression=Compression.GZIP))
    assert (code, indexes, message) == (
        INVALID_TIMESTAMP, [3], "One or more records have been rejected due to invalid timestamp")
    keyless = [Record(i, now, None if i % 2 else b"k", b"", ()) for i in range(LISTED_RECORDS_MAX + 1)]
    ((code, _, _, indexes, message),) = produce(bootstrap, topic, build_batch(keyless, compression=Compression.GZIP))
    assert (code, indexes) == (INVALID_RECORD, [1])
    assert message is not None and message.startswith(
        f"One or more records have been rejected due to {LISTED_RECORDS_MAX // 2} record errors in total")
