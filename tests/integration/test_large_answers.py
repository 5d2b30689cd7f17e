"""A 50 MB Fetch answer to a peer that reads it slowly, over TCP: the broker holds the answer once (its stored
batches, sent in slices straight from them, not copied into the transport's buffer), serves other clients
meanwhile, and the reader gets every byte, in order, with the request behind it answered after; a reader that
resets the connection under a sendfile ends that connection alone."""

from __future__ import annotations

import socket
import struct
import time
import uuid
from collections.abc import Callable

from confluent_kafka import Consumer
from logwright.compat.wire.framing import encode_frame
from logwright.compat.wire.messages import decode_response, encode_request
from logwright.compat.wire.record_batch import iter_batches, verify_crc

from .broker_process import BrokerProcess
from .raw_batches import fill_topic
from .test_bad_input import _broker_still_serves, _connect
from .test_client_limits import API_VERSIONS, fetch_request, fetched_bytes, read_exactly, start_broker

__all__ = ["start_broker"]

ANSWER_BYTES = 50 * 1024 * 1024


def test_a_50_mb_answer_to_a_slow_reader_is_held_once_and_others_are_served(
        start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker({"fetch.max.bytes": str(ANSWER_BYTES)})
    topic = f"large-{uuid.uuid4().hex[:8]}"
    fill_topic(broker.bootstrap, topic, batches=50, records=1000, record_bytes=1000)  # 50 batches of ~1 MB
    broker.stop()
    broker.start()  # answers are then read from RocksDB, one copy each, not shared from the tail cache
    answer = fetched_bytes(broker.bootstrap, topic, ANSWER_BYTES, ANSWER_BYTES)
    assert answer > 45 * 1024 * 1024
    before = broker.resident_bytes()
    with _connect(broker.bootstrap) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.sendall(encode_frame(encode_request(fetch_request(topic, ANSWER_BYTES, ANSWER_BYTES), 1, "slow")))
        sock.sendall(API_VERSIONS)
        (size,) = struct.unpack(">i", read_exactly(sock, 4))
        received = len(read_exactly(sock, 1024 * 1024))
        _broker_still_serves(broker.bootstrap)  # while the slow reader holds its answer
        for _ in range(4):
            received += len(read_exactly(sock, 256 * 1024))
            time.sleep(0.05)
        grown = broker.resident_bytes() - before
        assert grown < 1.5 * answer, f"the broker grew by {grown >> 20} MiB for a {answer >> 20} MiB answer"
        while received < size:
            received += len(read_exactly(sock, min(size - received, 4 * 1024 * 1024)))
        (size,) = struct.unpack(">i", read_exactly(sock, 4))
        assert struct.unpack(">i", read_exactly(sock, size)[:4])[0] == 7, "the request behind it was not answered"


def test_batches_sent_from_their_files_reach_a_slow_reader_whole_and_in_order(
        start_broker: Callable[..., BrokerProcess]) -> None:
    """Runs of batches in a batch file go to the socket with sendfile; a reader that takes them slowly gets the
    rest from the loop's sendfile: every batch arrives with its CRC valid and its offsets in order, the request
    behind the answer is answered after it, and a librdkafka consumer reads every record."""
    broker = start_broker({})
    topic = f"sendfile-{uuid.uuid4().hex[:8]}"
    fill_topic(broker.bootstrap, topic, batches=100, records=100, record_bytes=1000)  # 10 MB: more than a send takes
    broker.stop()
    broker.start()  # read from the batch files, not from the tail cache
    with _connect(broker.bootstrap) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        request = fetch_request(topic, 16 * 1024 * 1024, 16 * 1024 * 1024)
        sock.sendall(encode_frame(encode_request(request, 1, "slow")))
        sock.sendall(API_VERSIONS)
        (size,) = struct.unpack(">i", read_exactly(sock, 4))
        frame = bytearray()
        while len(frame) < size:
            frame += read_exactly(sock, min(size - len(frame), 256 * 1024))
            time.sleep(0.01)
        (next_size,) = struct.unpack(">i", read_exactly(sock, 4))
        assert struct.unpack(">i", read_exactly(sock, next_size)[:4])[0] == 7, "the request behind it was lost"
    correlation_id, answer = decode_response(1, 12, bytes(frame))
    assert correlation_id == 1
    batches = list(iter_batches(answer.responses[0].partitions[0].records))
    assert len(batches) == 100 and all(verify_crc(batch) for batch in batches)
    assert [int.from_bytes(batch[:8], "big") for batch in batches] == list(range(0, 10_000, 100))
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(values) < 10_000 and time.monotonic() < deadline:
        values += [message.value() for message in consumer.consume(1000, 1.0) if message.error() is None]
    consumer.close()
    assert values == [b"x" * 1000] * 10_000


def test_a_reader_reset_while_a_batch_file_is_sent_closes_its_connection_alone(
        start_broker: Callable[..., BrokerProcess]) -> None:
    """A client pipelines two Fetches answered from a batch file, reads none of either and resets the connection.
    The first answer's rest is sent by the loop's sendfile meanwhile; the second, answered behind it, once started
    the requests after it, which resumed reading under that sendfile, and asyncio's transport raised
    InvalidStateError on the reset (logged as an error). The broker logs no error and serves on."""
    broker = start_broker({})
    topic = f"reset-{uuid.uuid4().hex[:8]}"
    fill_topic(broker.bootstrap, topic, batches=20, records=100, record_bytes=1000)  # 2 MB: more than a send takes
    broker.stop()
    broker.start()  # read from the batch files, not from the tail cache
    request = fetch_request(topic, 1536 * 1024, 1536 * 1024)
    for _ in range(3):
        with _connect(broker.bootstrap) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
            sock.sendall(encode_frame(encode_request(request, 1, "reset"))
                         + encode_frame(encode_request(request, 2, "reset")))
            time.sleep(0.3)  # the first answer part sent, the second queued behind it
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        time.sleep(0.2)
        _broker_still_serves(broker.bootstrap)
    log = broker.log_path.read_text(errors="replace")
    errors = [line for line in log.splitlines() if " ERROR " in line or line.startswith("Traceback")]
    assert not errors, f"the broker logged errors: {errors[:3]}"
