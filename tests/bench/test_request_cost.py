"""bench/request_cost.py reads every answer of its pipelined Produce requests and refuses a refused one, so a broken
path stops it rather than reading as a cheap one."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import brokers  # noqa: E402
import request_cost  # noqa: E402


def test_frames_are_split_off_the_buffer_whole_and_a_partial_one_waits() -> None:
    buffer = bytearray(struct.pack(">i", 3) + b"abc" + struct.pack(">i", 0) + struct.pack(">i", 5) + b"de")
    assert list(request_cost.split_frames(buffer)) == [b"abc", b""]
    assert buffer == struct.pack(">i", 5) + b"de"
    buffer += b"fgh"
    assert list(request_cost.split_frames(buffer)) == [b"defgh"]
    assert buffer == bytearray()


def test_a_real_broker_answers_every_pipelined_produce_and_fetch_and_costs_some_cpu(tmp_path: Path) -> None:
    peer = brokers.start("logwright", tmp_path / "broker")
    try:
        for api in request_cost.APIS:
            measured = request_cost.measure(peer, "logwright", size=100, count=3, depth=4, requests=50, api=api)
            assert measured.cpu_us > 0 and measured.per_second > 0 and measured.api == api
        with pytest.raises(RuntimeError, match="refused the request: error 3"):  # UNKNOWN_TOPIC_OR_PARTITION
            request_cost.send_pipelined(peer.bootstrap, [request_cost.produce_frame("nowhere", 0, 1, 10)], 2, 1)
        empty = request_cost.create_topic(peer.bootstrap, "empty")
        with pytest.raises(RuntimeError, match="refused the request: error -1"):  # a Fetch answered without records
            request_cost.send_pipelined(peer.bootstrap, [request_cost.fetch_frame(empty, 0, 0)], 1, 1,
                                        request_cost.fetch_error)
    finally:
        peer.stop()
