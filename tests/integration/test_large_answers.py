"""A 50 MB Fetch answer to a peer that reads it slowly, over TCP: the broker holds the answer once (its stored
batches, sent in slices straight from them, not copied into the transport's buffer), serves other clients
meanwhile, and the reader gets every byte, in order, with the request behind it answered after."""

from __future__ import annotations

import socket
import struct
import time
import uuid
from collections.abc import Callable

from logwright.compat.wire.framing import encode_frame
from logwright.compat.wire.messages import encode_request

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
