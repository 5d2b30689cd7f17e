"""The classic group protocol's checks of a request, answered as Apache Kafka 4.4 answers them (``--against kafka``).

Raw JoinGroup, SyncGroup, LeaveGroup and Heartbeat requests: session timeouts outside 6 s - 30 min
(INVALID_SESSION_TIMEOUT), an empty protocol type or no protocol, an empty group id, a member id the group does
not know, a join that shares no protocol type or name with the group (INCONSISTENT_GROUP_PROTOCOL); SyncGroup v5
with a null protocol type or name (INCONSISTENT_GROUP_PROTOCOL: mandatory from v5), or naming other ones; leaves of
unknown members, one member named twice; DeleteGroups naming one group twice (one answer).
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from typing import Any

import pytest
from kio.schema.delete_groups.v2 import request as delete_groups
from kio.schema.heartbeat.v4 import request as heartbeat
from kio.schema.join_group.v3 import request as join_group_v3
from kio.schema.join_group.v9 import request as join_group
from kio.schema.leave_group.v2 import request as leave_group_v2
from kio.schema.leave_group.v5 import request as leave_group
from kio.schema.sync_group.v5 import request as sync_group
from logwright.client.connection import Connection
from logwright.compat.registry import make

from .coordinator_ready import coordinator_ready

pytestmark = pytest.mark.differential

NONE, INCONSISTENT_GROUP_PROTOCOL, INVALID_GROUP_ID, UNKNOWN_MEMBER_ID, INVALID_SESSION_TIMEOUT = 0, 23, 24, 25, 26
MEMBER_ID_REQUIRED = 79
TEN_SECONDS = datetime.timedelta(seconds=10)


def _protocol(name: str = "range", module: Any = join_group) -> Any:
    return module.JoinGroupRequestProtocol(name=name, metadata=bytes(10))


def _join(group: str, module: Any = join_group, **fields: Any) -> Any:
    request = {"group_id": group, "session_timeout": TEN_SECONDS, "rebalance_timeout": TEN_SECONDS, "member_id": "",
               "group_instance_id": None, "protocol_type": "consumer", "protocols": (_protocol(module=module),),
               "reason": None, **fields}
    return make(module.JoinGroupRequest, **request)


JOINS: dict[str, tuple[dict[str, Any], int]] = {
    "session timeout 5,999 ms": ({"session_timeout": datetime.timedelta(milliseconds=5999)}, INVALID_SESSION_TIMEOUT),
    "session timeout 6,000 ms": ({"session_timeout": datetime.timedelta(milliseconds=6000)}, MEMBER_ID_REQUIRED),
    "session timeout 30 min + 1 ms": ({"session_timeout": datetime.timedelta(minutes=30, milliseconds=1)},
                                      INVALID_SESSION_TIMEOUT),
    "session timeout 30 min": ({"session_timeout": datetime.timedelta(minutes=30)}, MEMBER_ID_REQUIRED),
    "empty protocol type": ({"protocol_type": ""}, INCONSISTENT_GROUP_PROTOCOL),
    "no protocols": ({"protocols": ()}, INCONSISTENT_GROUP_PROTOCOL),
    "rebalance timeout below the session timeout": ({"rebalance_timeout": datetime.timedelta(seconds=1)},
                                                    MEMBER_ID_REQUIRED),
    "one protocol named twice": ({"protocols": (_protocol(), _protocol())}, MEMBER_ID_REQUIRED),
    "an empty protocol name": ({"protocols": (_protocol(""),)}, MEMBER_ID_REQUIRED),
    "a member id the group does not know": ({"member_id": "nobody"}, UNKNOWN_MEMBER_ID),
    "a static member naming an unknown member id": ({"member_id": "nobody", "group_instance_id": "instance-1"},
                                                    UNKNOWN_MEMBER_ID),
}


def test_classic_group_request_checks(bootstrap: str) -> None:
    tag = uuid.uuid4().hex[:8]
    answers: dict[str, Any] = {}

    async def scenario() -> None:
        connection = await Connection.open(bootstrap, "classic-checks")
        try:
            for index, (case, (fields, _)) in enumerate(JOINS.items()):
                group = f"classic-checks-{index}-{tag}"
                await coordinator_ready(connection, group)
                answers[case] = int((await connection.request(_join(group, **fields))).error_code)
            answers["an empty group id"] = int((await connection.request(_join(""))).error_code)
            old = f"classic-checks-v3-{tag}"
            await coordinator_ready(connection, old)
            answers["v3, no member id"] = int((await connection.request(_join(old, join_group_v3))).error_code)

            group = f"classic-checks-group-{tag}"
            await coordinator_ready(connection, group)
            first = await connection.request(_join(group))
            joined = await connection.request(_join(group, member_id=first.member_id))
            member, generation = joined.member_id, int(joined.generation_id)
            answers["another protocol type"] = int((await connection.request(_join(
                group, protocol_type="connect", protocols=(_protocol("default"),)))).error_code)
            answers["no protocol in common"] = int((await connection.request(_join(
                group, protocols=(_protocol("roundrobin"),)))).error_code)

            async def sync(protocol_type: str | None, protocol_name: str | None, *owners: str) -> int:
                answer = await connection.request(make(
                    sync_group.SyncGroupRequest, group_id=group, generation_id=generation, member_id=member,
                    group_instance_id=None, protocol_type=protocol_type, protocol_name=protocol_name,
                    assignments=tuple(sync_group.SyncGroupRequestAssignment(member_id=owner, assignment=b"x")
                                      for owner in owners)))
                return int(answer.error_code)

            answers["SyncGroup v5, null protocol type and name"] = await sync(None, None, member)
            answers["SyncGroup v5, null protocol name"] = await sync("consumer", None, member)
            answers["SyncGroup, another protocol type"] = await sync("connect", "range", member)
            answers["SyncGroup, another protocol name"] = await sync("consumer", "roundrobin", member)
            answers["SyncGroup, an assignment for an unknown member too"] = await sync("consumer", "range", member,
                                                                                        "nobody")
            answers["Heartbeat, empty group id"] = int((await connection.request(make(
                heartbeat.HeartbeatRequest, group_id="", generation_id=1, member_id="x",
                group_instance_id=None))).error_code)
            missing = f"classic-checks-missing-{tag}"
            left = await connection.request(make(leave_group.LeaveGroupRequest, group_id=missing, members=(
                leave_group.MemberIdentity(member_id="x", group_instance_id=None, reason=None),)))
            answers["LeaveGroup, unknown group"] = (int(left.error_code), [int(m.error_code) for m in left.members])
            answers["LeaveGroup v2, unknown group"] = int((await connection.request(make(
                leave_group_v2.LeaveGroupRequest, group_id=missing, member_id="x"))).error_code)
            twice = await connection.request(make(leave_group.LeaveGroupRequest, group_id=group, members=(
                leave_group.MemberIdentity(member_id=member, group_instance_id=None, reason=None),) * 2))
            answers["LeaveGroup, one member twice"] = (int(twice.error_code),
                                                       [int(entry.error_code) for entry in twice.members])
        finally:
            await connection.close()

    asyncio.run(scenario())
    assert answers == {
        **{case: expected for case, (_, expected) in JOINS.items()},
        "an empty group id": INVALID_GROUP_ID,
        "v3, no member id": NONE,
        "another protocol type": INCONSISTENT_GROUP_PROTOCOL,
        "no protocol in common": INCONSISTENT_GROUP_PROTOCOL,
        "SyncGroup v5, null protocol type and name": INCONSISTENT_GROUP_PROTOCOL,
        "SyncGroup v5, null protocol name": INCONSISTENT_GROUP_PROTOCOL,
        "SyncGroup, another protocol type": INCONSISTENT_GROUP_PROTOCOL,
        "SyncGroup, another protocol name": INCONSISTENT_GROUP_PROTOCOL,
        "SyncGroup, an assignment for an unknown member too": NONE,
        "Heartbeat, empty group id": INVALID_GROUP_ID,
        "LeaveGroup, unknown group": (NONE, [UNKNOWN_MEMBER_ID]),
        "LeaveGroup v2, unknown group": UNKNOWN_MEMBER_ID,
        "LeaveGroup, one member twice": (NONE, [NONE, UNKNOWN_MEMBER_ID]),
    }


def test_delete_groups_answers_a_group_named_twice_once(bootstrap: str) -> None:
    group = f"classic-checks-delete-{uuid.uuid4().hex[:8]}"

    async def scenario() -> list[tuple[str, int]]:
        connection = await Connection.open(bootstrap, "classic-checks")
        try:
            await coordinator_ready(connection, group)
            first = await connection.request(_join(group))
            joined = await connection.request(_join(group, member_id=first.member_id))
            await connection.request(make(leave_group.LeaveGroupRequest, group_id=group, members=(
                leave_group.MemberIdentity(member_id=joined.member_id, group_instance_id=None, reason=None),)))
            answer = await connection.request(make(delete_groups.DeleteGroupsRequest, groups_names=(group, group)))
            return [(result.group_id, int(result.error_code)) for result in answer.results]
        finally:
            await connection.close()

    assert asyncio.run(scenario()) == [(group, NONE)]
