"""Bad input over a raw socket: the offending connection gets an error or is closed, the broker carries on."""

from __future__ import annotations

import datetime
import socket
import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record

from .broker_process import BrokerProcess

NOT_LED_YET = (3, 6)
"""UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER: Kafka answers a produce with these until the broker has
applied the controller's record of a topic it has just created (CreateTopics returns before): clients retry."""


def _connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


def _request(api_key: int, version: int, correlation_id: int, body: bytes, flexible: bool = False) -> bytes:
    """A framed request; ``flexible`` writes request header v2 (the client id then an empty tagged-field set)."""
    client = b"bad-input-test"
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client)) + client
    if flexible:
        header += b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _read_response(sock: socket.socket) -> bytes:
    size_bytes = sock.recv(4, socket.MSG_WAITALL)
    assert len(size_bytes) == 4, "the connection was closed"
    (size,) = struct.unpack(">i", size_bytes)
    return sock.recv(size, socket.MSG_WAITALL)


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def _broker_still_serves(bootstrap: str) -> None:
    topic = f"alive-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, value=b"still here")
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 60
    try:
        while True:
            assert time.monotonic() < deadline, "no record came back"
            message = consumer.poll(0.3)
            if message is not None and not message.error():
                assert message.value() == b"still here"
                return
    finally:
        consumer.close()


def test_garbage_bytes_close_only_that_connection(bootstrap: str) -> None:
    with _connect(bootstrap) as sock:
        sock.sendall(struct.pack(">i", 6) + b"\xff\xff\x00")
        sock.sendall(b"\x00\x00\x00")
        assert _closed(sock)
    _broker_still_serves(bootstrap)


def test_oversized_frame_is_refused_at_its_length_prefix(bootstrap: str) -> None:
    with _connect(bootstrap) as sock:
        sock.sendall(struct.pack(">i", 200 * 1024 * 1024))
        assert _closed(sock)
    _broker_still_serves(bootstrap)


@pytest.mark.differential
def test_unsupported_api_versions_version_gets_v0_error_with_the_api_list(bootstrap: str) -> None:
    # As a client newer than the broker sends it: header v2 and a v3+ body (empty compact software name/version).
    with _connect(bootstrap) as sock:
        sock.sendall(_request(18, 99, 7, b"\x01\x01\x00", flexible=True))
        response = _read_response(sock)
        correlation_id, error_code, count = struct.unpack_from(">ihi", response)
        assert (correlation_id, error_code) == (7, 35)
        # Kafka lists at least ApiVersions itself (KIP-511), enough for the client to retry with a version it has.
        ranges = {key: (low, high) for key, low, high in struct.iter_unpack(">hhh", response[10:10 + 6 * count])}
        assert ranges[18][0] == 0 and ranges[18][1] >= 3


@pytest.mark.differential
def test_old_produce_version_closes_the_connection_as_kafka_4_does(bootstrap: str) -> None:
    """Kafka 4.x no longer serves Produce v0-v2 (KIP-896) and closes the connection; so does logwright."""
    topic = b"old-format"
    message_set = b"\x00" * 30
    body = struct.pack(">hii", 1, 1000, 1) + struct.pack(">h", len(topic)) + topic
    body += struct.pack(">iii", 1, 0, len(message_set)) + message_set
    with _connect(bootstrap) as sock:
        sock.sendall(_request(0, 2, 11, body))
        assert _closed(sock)
    _answers_within_a_second(bootstrap)


def _answers_within_a_second(bootstrap: str) -> None:
    """A well-behaved client on a new connection gets its ApiVersions answer within a second."""
    started = time.monotonic()
    with _connect(bootstrap) as sock:
        sock.settimeout(1.0)
        sock.sendall(_request(18, 0, 99, b""))
        correlation_id, error_code = struct.unpack_from(">ih", _read_response(sock))
    assert (correlation_id, error_code) == (99, 0)
    assert time.monotonic() - started < 1.0


FORGED_COUNT = b"\xff\xff\xff\xff\x0f"
"""An unsigned varint of 2^32 - 1 where a compact array length is read: kio's native reader allocated
2^31 - 1 x 16 bytes from it and the process aborted (issue 12)."""


def _produce_v10_frame(topic: str) -> tuple[bytes, int]:
    """A Produce v10 request as librdkafka writes one (acks -1, one partition, one batch) and where its compact
    topic-array count is."""
    from kio.schema.produce.v10 import request as produce_v10
    from logwright.compat.wire.messages import encode_request, parse_request_header

    batch = build_batch([Record(0, 1_700_000_000_000, None, b"x" * 150)])
    partition = produce_v10.PartitionProduceData(index=0, records=batch)
    request = produce_v10.ProduceRequest(transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=30),
                                         topic_data=(produce_v10.TopicProduceData(name=topic,
                                                                                  partition_data=(partition,)),))
    payload = encode_request(request, 3, "rdkafka")
    topic_count_at = parse_request_header(payload).header_length + 1 + 2 + 4  # null txn id, acks, timeout
    return struct.pack(">i", len(payload)) + payload, 4 + topic_count_at


def _closes_only_that_connection(broker: BrokerProcess, frame: bytes) -> None:
    """``frame`` closes its connection; the broker lives on and answers new ones at once."""
    with _connect(broker.bootstrap) as sock:
        sock.sendall(frame)
        assert _closed(sock)
    assert broker.alive()
    _answers_within_a_second(broker.bootstrap)
    _broker_still_serves(broker.bootstrap)


@pytest.mark.logwright_only(reason="a regression test of logwright's decoder, on a private process")
def test_forged_compact_array_count_in_produce_v10_does_not_kill_the_broker(broker: BrokerProcess) -> None:
    frame, at = _produce_v10_frame("forged")
    payload = frame[4:at] + FORGED_COUNT + frame[at + 1:]
    forged = struct.pack(">i", len(payload)) + payload
    assert len(forged) < 300
    _closes_only_that_connection(broker, forged)


@pytest.mark.logwright_only(reason="a regression test of logwright's decoder, on a private process")
def test_negative_topic_name_length_in_produce_v0_does_not_freeze_the_broker(broker: BrokerProcess) -> None:
    """A first topic of no partitions, then a name length of -6: the old fallback parser stepped back onto the
    zero count and looped 2^31 - 1 times on the event loop."""
    body = struct.pack(">hii", 1, 1000, 2) + struct.pack(">h", 1) + b"t" + struct.pack(">i", 0)
    body += struct.pack(">h", -6) + b"\x00\x00\x00\x00"
    _closes_only_that_connection(broker, _request(0, 0, 1, body))


def test_unknown_api_key_closes_only_that_connection(bootstrap: str) -> None:
    with _connect(bootstrap) as sock:
        sock.sendall(_request(31999, 0, 1, b""))
        assert _closed(sock)
    _broker_still_serves(bootstrap)


@pytest.mark.differential
def test_wrong_crc_gets_corrupt_message(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"crc-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(20)
    batch = bytearray(build_batch([Record(0, 1_700_000_000_000, None, b"payload")]))
    batch[-1] ^= 0xFF
    name = topic.encode()
    body = struct.pack(">hhi", -1, 1, 1000)  # transactional id null, acks, timeout (Produce v3)
    body += struct.pack(">i", 1) + struct.pack(">h", len(name)) + name
    body += struct.pack(">iii", 1, 0, len(batch)) + bytes(batch)
    deadline = time.monotonic() + 30
    with _connect(bootstrap) as sock:
        while True:
            sock.sendall(_request(0, 3, 5, body))
            response = _read_response(sock)
            offset = 4 + 4 + 2 + len(name) + 4
            partition, error_code = struct.unpack_from(">ih", response, offset)
            if error_code not in NOT_LED_YET or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert (partition, error_code) == (0, 2)
    _broker_still_serves(bootstrap)
