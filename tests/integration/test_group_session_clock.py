"""A classic group member's session on a broker process's manual clock: a member played by hand (JoinGroup,
SyncGroup, then silence) is removed when LogwrightAdvanceClock moves the clock past its session timeout and
not a millisecond before, and the same holds for what a restarted broker restored (counted from its start).
Transaction timeouts on the manual clock are covered in test_transactions.
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.sync_group.v3.request import SyncGroupRequest, SyncGroupRequestAssignment
from logwright.client.connection import Connection

from .broker_process import BrokerProcess
from .test_share_groups import advance_clock

GROUP = "silent-classic"
SESSION_MS = 10_000
MEMBER_ID_REQUIRED = 79


def exchange(bootstrap: str, *messages: Any) -> list[Any]:
    """Send ``messages`` one after another on one connection; their responses."""
    async def run() -> list[Any]:
        connection = await Connection.open(bootstrap, "classic-session-test")
        try:
            return [await connection.request(message) for message in messages]
        finally:
            await connection.close()

    return asyncio.run(run())


def join(member_id: str) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=GROUP, session_timeout=datetime.timedelta(milliseconds=SESSION_MS),
        rebalance_timeout=datetime.timedelta(seconds=30), member_id=member_id, group_instance_id=None,
        protocol_type="consumer", protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),))


def stable_member(bootstrap: str) -> str:
    [required] = exchange(bootstrap, join(""))
    assert required.error_code == MEMBER_ID_REQUIRED
    member_id = str(required.member_id)
    [joined] = exchange(bootstrap, join(member_id))
    assert (joined.error_code, joined.generation_id, joined.leader) == (0, 1, member_id)
    [synced] = exchange(bootstrap, SyncGroupRequest(
        group_id=GROUP, generation_id=1, member_id=member_id, group_instance_id=None,
        assignments=(SyncGroupRequestAssignment(member_id=member_id, assignment=b"all"),)))
    assert synced.error_code == 0
    return member_id


def members(bootstrap: str) -> list[str]:
    [described] = exchange(bootstrap, DescribeGroupsRequest(groups=(GROUP,), include_authorized_operations=False))
    return [member.member_id for member in described.groups[0].members]


def test_a_silent_member_is_removed_when_the_clock_passes_its_session_and_not_before(
        clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    member_id = stable_member(bootstrap)
    advance_clock(bootstrap, SESSION_MS - 1)
    assert members(bootstrap) == [member_id]
    advance_clock(bootstrap, 1)
    assert members(bootstrap) == []


def test_a_restored_session_counts_from_the_restarted_brokers_start(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    member_id = stable_member(bootstrap)
    advance_clock(bootstrap, SESSION_MS - 1)
    clock_broker.stop()
    clock_broker.start()
    assert members(bootstrap) == [member_id]
    advance_clock(bootstrap, SESSION_MS - 1)
    assert members(bootstrap) == [member_id], "the session restarted with the broker"
    advance_clock(bootstrap, 1)
    assert members(bootstrap) == []
