"""Classic-group and transaction deadlines on the broker clock: they fire when LogwrightAdvanceClock moves a
manual clock past them, not a millisecond before, and what a restarted broker restored counts from its start.

In-process brokers (`test_group_handlers.Harness`) over a real RocksEventStore; time moves only through the
extension handler, nothing sleeps.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.end_txn.v3.request import EndTxnRequest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka import add_partitions_to_txn, describe_groups, end_txn, init_producer_id
from logwright.core.clock import ManualClock
from logwright.core.transactions.transactions import COMPLETE_ABORT, ONGOING

from tests.compat.test_group_handlers import GROUP, Harness

SESSION_MS = 10_000  # the session timeout `Harness.join` asks for
TRANSACTION_MS = 60_000


def run(tmp_path: Path, clock: ManualClock, scenario: Callable[[Harness], Awaitable[None]]) -> None:
    async def main() -> None:
        harness = Harness(tmp_path, clock)
        try:
            await scenario(harness)
        finally:
            harness.close()

    asyncio.run(main())


async def members(harness: Harness) -> list[str]:
    described = await harness.call(describe_groups.handle, 5, DescribeGroupsRequest(
        groups=(GROUP,), include_authorized_operations=False))
    return [member.member_id for member in described.groups[0].members]


async def stable_member(harness: Harness) -> str:
    member_id = await harness.new_member()
    assert (await harness.join(member_id)).generation_id == 1
    await harness.sync(member_id, 1, {member_id: b"all"})
    return member_id


async def open_transaction(harness: Harness) -> tuple[int, int]:
    """A transaction on partition t-0 started now with a `TRANSACTION_MS` timeout: its producer id and epoch."""
    if harness.broker.topic("t") is None:
        harness.broker.create_topic("t", 1)
        await harness.broker.durable()
    granted = await harness.call(init_producer_id.handle, 4, InitProducerIdRequest(
        transactional_id="tx", producer_id=-1, producer_epoch=-1,
        transaction_timeout=datetime.timedelta(milliseconds=TRANSACTION_MS)))
    pid, epoch = granted.producer_id, granted.producer_epoch
    added = await harness.call(add_partitions_to_txn.handle, 3, AddPartitionsToTxnRequest(
        v3_and_below_transactional_id="tx", v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=(AddPartitionsToTxnTopic(name="t", partitions=(0,)),)))
    assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == ErrorCode.NONE
    return pid, epoch


def transaction_status(harness: Harness) -> str:
    state = harness.broker.transaction("tx")
    assert state is not None
    return state.status


def test_a_silent_members_session_times_out_when_the_clock_passes_it_and_not_before(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        member_id = await stable_member(h)
        await h.advance(SESSION_MS - 1)
        assert await members(h) == [member_id]
        await h.advance(1)
        assert await members(h) == []

    run(tmp_path, ManualClock(), scenario)


def test_a_member_blocked_in_join_outlives_its_session_and_is_answered_when_the_silent_one_expires(
        tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        silent = await stable_member(h)
        start = h.broker.clock.now_ms()
        waiting = await h.new_member()
        joining = asyncio.ensure_future(h.join(waiting))
        await asyncio.sleep(0)
        assert h.broker.coordinators.groups.sessions.next_deadline_ms() == start + SESSION_MS
        await h.advance(SESSION_MS - 1)
        assert not joining.done()
        await h.advance(1)  # the silent member's session ends; the rebalance completes without it
        joined: Any = await asyncio.wait_for(joining, 30)
        assert (joined.error_code, joined.generation_id, joined.leader) == (ErrorCode.NONE, 2, waiting)
        assert await members(h) == [waiting] and silent != waiting
        next_deadline = h.broker.coordinators.groups.sessions.next_deadline_ms()
        assert next_deadline == h.broker.clock.now_ms() + SESSION_MS, "the joined member's session starts now"

    run(tmp_path, ManualClock(), scenario)


def test_a_transaction_is_aborted_when_the_clock_passes_its_timeout_and_not_before(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        pid, epoch = await open_transaction(h)
        await h.advance(TRANSACTION_MS - 1)
        assert transaction_status(h) == ONGOING
        await h.advance(1)
        assert transaction_status(h) == COMPLETE_ABORT
        refused = await h.call(end_txn.handle, 3, EndTxnRequest(
            transactional_id="tx", producer_id=pid, producer_epoch=epoch, committed=True))
        assert refused.error_code == ErrorCode.PRODUCER_FENCED, "the timeout bumped the epoch"

    run(tmp_path, ManualClock(), scenario)


def test_what_a_restarted_broker_restores_times_out_on_its_clock_without_a_client(tmp_path: Path) -> None:
    clock = ManualClock()
    member: dict[str, str] = {}

    async def before(h: Harness) -> None:
        member["id"] = await stable_member(h)
        await open_transaction(h)

    async def after(h: Harness) -> None:
        h.broker.coordinators.start()
        await h.advance(0)
        assert transaction_status(h) == COMPLETE_ABORT, "overdue across the restart: aborted at once"
        await h.advance(SESSION_MS - 1)
        assert await members(h) == [member["id"]], "a restored session counts from the broker's start"
        await h.advance(1)
        assert await members(h) == []

    run(tmp_path, clock, before)
    clock.advance(TRANSACTION_MS + SESSION_MS)  # the broker was down longer than both timeouts
    run(tmp_path, clock, after)
