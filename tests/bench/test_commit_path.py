"""bench/commit_path.py drives real OffsetCommits through the server's `Connection` and checks every answer, so a
broken path stops it rather than reading as a fast one."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import commit_path  # noqa: E402


def test_every_round_answers_each_connection_and_costs_some_cpu(tmp_path: Path) -> None:
    per_commit = asyncio.run(commit_path.measure(tmp_path / "data", groups=5, rounds=3, per_turn=2))
    assert len(per_commit) == 3
    assert all(seconds > 0 for seconds in per_commit)


def test_an_answer_is_read_as_its_correlation_id_and_partition_error() -> None:
    transport = commit_path.KeptTransport()
    name = b"groups"
    body = (b"\x00\x00\x00\x07" + b"\x00\x00\x00\x01" + len(name).to_bytes(2, "big") + name + b"\x00\x00\x00\x01"
            + b"\x00\x00\x00\x00" + b"\x00\x00")
    transport.write(len(body).to_bytes(4, "big") + body)
    assert transport.take_answer() == (7, 0)
    assert transport.written == bytearray()


def test_commits_of_several_partitions_are_answered_for_each() -> None:
    transport = commit_path.KeptTransport()
    name = b"groups"
    partitions = b"".join(index.to_bytes(4, "big") + error.to_bytes(2, "big") for index, error in
                          ((0, 0), (1, 0), (2, 3)))
    body = (b"\x00\x00\x00\x09" + b"\x00\x00\x00\x01" + len(name).to_bytes(2, "big") + name + b"\x00\x00\x00\x03"
            + partitions)
    transport.write(len(body).to_bytes(4, "big") + body)
    assert transport.take_answer() == (9, 3), "the third partition's UNKNOWN_TOPIC_OR_PARTITION is not missed"


def test_a_round_of_three_partition_commits_is_answered(tmp_path: Path) -> None:
    per_commit = asyncio.run(commit_path.measure(tmp_path / "data", groups=4, rounds=2, per_turn=2, partitions=3))
    assert len(per_commit) == 2
