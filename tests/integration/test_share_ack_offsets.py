"""Acknowledgements naming offsets outside what a member holds, checked on Apache Kafka 4.4 too (``--against
kafka``).

Each scenario joins a fresh share group over the wire, acquires the five records of a fresh topic (offsets 0-4)
and sends ShareAcknowledge requests in turn; the group's lag afterwards says what was applied. A batch reaching
past the last offset handed out names records never acquired: INVALID_REQUEST on both, nothing applied. Offsets
settled above the start offset are INVALID_RECORD_STATE on both. Offsets below the start offset differ on
purpose: Kafka skips them and applies the rest of the batch (NONE); logwright refuses the partition's
acknowledgements (INVALID_RECORD_STATE), so an acknowledgement of records already settled, perhaps by another
consumer after this one's lock ran out, never succeeds silently (docs/share-groups.md).
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from kio.schema.share_acknowledge.v1 import request as acknowledge_v1
from logwright.client.connection import Connection
from logwright.compat.registry import make

from .test_share_close_order import RECORDS, TIMEOUT_S, member_holding_every_record, topic_with_records
from .test_share_group_offsets import describe

pytestmark = pytest.mark.differential

ACCEPT, RELEASE = 1, 2
NONE, INVALID_REQUEST, INVALID_RECORD_STATE = 0, 42, 121
Batch = tuple[int, int, int]
"""(first offset, last offset, acknowledge type)"""


async def _acknowledge(connection: Connection, group: str, member: str, topic_id: uuid.UUID, epoch: int,
                       batches: list[Batch]) -> int:
    """One ShareAcknowledge of partition 0: its partition's error code (the request's own must be NONE)."""
    answer = await connection.request(make(
        acknowledge_v1.ShareAcknowledgeRequest, group_id=group, member_id=member, share_session_epoch=epoch,
        topics=(make(acknowledge_v1.AcknowledgeTopic, topic_id=topic_id, partitions=(
            make(acknowledge_v1.AcknowledgePartition, partition_index=0, acknowledgement_batches=tuple(
                make(acknowledge_v1.AcknowledgementBatch, first_offset=first, last_offset=last,
                     acknowledge_types=(kind,)) for first, last, kind in batches)),)),)))
    assert answer.error_code == NONE, answer.error_message
    [code] = [int(p.error_code) for t in answer.responses for p in t.partitions]
    return code


def _answers_then_lag(bootstrap: str, requests: list[list[Batch]], lag: int) -> tuple[list[int], int]:
    """Acquire 0-4 and send ``requests`` in turn: each one's error code, and the group's lag once it reads ``lag``
    (Kafka's share coordinator persists a moment after the acknowledgement), or what it read last."""
    group = f"ack-offsets-{uuid.uuid4().hex[:8]}"
    topic = topic_with_records(bootstrap, group)

    async def scenario() -> list[int]:
        connection = await Connection.open(bootstrap, "ack-offsets")
        try:
            member, topic_id, epoch = await member_holding_every_record(connection, group, topic)
            return [await _acknowledge(connection, group, member, topic_id, epoch + index, batches)
                    for index, batches in enumerate(requests)]
        finally:
            await connection.close()

    codes = asyncio.run(scenario())
    deadline = time.monotonic() + TIMEOUT_S
    while (found := describe(bootstrap, group).get((topic, 0), (-1, -1))[1]) != lag and time.monotonic() < deadline:
        time.sleep(0.5)
    return codes, found


def test_offsets_below_the_start_offset(bootstrap: str, target: str) -> None:
    """0-1 accepted moves the start offset to 2; a batch 0-4 then: Kafka skips 0-1 and accepts 2-4, logwright
    refuses it whole (2-4 stay held)."""
    expected = ([NONE, NONE], 0) if target == "kafka" else ([NONE, INVALID_RECORD_STATE], RECORDS - 2)
    assert _answers_then_lag(bootstrap, [[(0, 1, ACCEPT)], [(0, 4, ACCEPT)]], expected[1]) == expected


def test_an_acknowledgement_sent_again(bootstrap: str, target: str) -> None:
    expected = [NONE, NONE] if target == "kafka" else [NONE, INVALID_RECORD_STATE]
    assert _answers_then_lag(bootstrap, [[(0, 4, ACCEPT)], [(0, 4, ACCEPT)]], 0) == (expected, 0)


def test_offsets_settled_above_the_start_offset_are_invalid_record_state(bootstrap: str) -> None:
    """2-3 accepted leaves the start offset at 0: accepting them again names records no longer acquired."""
    assert _answers_then_lag(bootstrap, [[(2, 3, ACCEPT)], [(2, 3, ACCEPT)]], RECORDS - 2) == (
        [NONE, INVALID_RECORD_STATE], RECORDS - 2)


@pytest.mark.parametrize("batches", [
    [(5, 7, ACCEPT)],
    [(3, 7, ACCEPT)],
    [(1, 2, ACCEPT), (6, 8, ACCEPT)],
    [(6, 8, ACCEPT), (1, 2, ACCEPT)],
], ids=["past-the-end", "across-the-end", "second-batch-past", "first-batch-past"])
def test_offsets_past_the_last_one_handed_out_are_invalid_request_and_nothing_is_applied(
        bootstrap: str, batches: list[Batch]) -> None:
    assert _answers_then_lag(bootstrap, [batches], RECORDS) == ([INVALID_REQUEST], RECORDS)
