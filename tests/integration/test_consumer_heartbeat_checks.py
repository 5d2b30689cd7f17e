"""ConsumerGroupHeartbeat's checks of a request, answered as Apache Kafka 4.4 answers them (``--against kafka``).

Raw requests, each a join (epoch 0) of a new member unless it says otherwise: v1 needs a client-generated member
id (KIP-1082; v0 gets one), a join its subscription, rebalance timeout and an empty owned-partition list; empty
instance and rack ids, an epoch below -2 and epoch -2 without an instance id are INVALID_REQUEST; an unknown
member is UNKNOWN_MEMBER_ID, an unknown assignor UNSUPPORTED_ASSIGNOR, a bad regex INVALID_REGULAR_EXPRESSION, a
held instance id UNRELEASED_INSTANCE_ID. Member epochs are not compared (docs/consumer-groups.md).
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from typing import Any

import pytest
from kio.schema.consumer_group_heartbeat.v0 import request as heartbeat_v0
from kio.schema.consumer_group_heartbeat.v1 import request as heartbeat_v1
from logwright.client.connection import Connection
from logwright.compat.registry import make

from .coordinator_ready import coordinator_ready
from .test_share_close_order import topic_with_records

pytestmark = pytest.mark.differential

NONE, INVALID_REQUEST, UNKNOWN_MEMBER_ID, UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR = 0, 42, 25, 111, 112
INVALID_REGULAR_EXPRESSION = 128
NOT_A_JOIN = {"subscribed_topic_names": None, "topic_partitions": None}

CASES: dict[str, tuple[dict[str, Any], int]] = {
    "v1, empty member id": ({"member_id": ""}, INVALID_REQUEST),
    "v0, empty member id": ({"version": 0, "member_id": ""}, NONE),
    "no subscription": ({"subscribed_topic_names": None}, INVALID_REQUEST),
    "an empty subscription": ({"subscribed_topic_names": ()}, NONE),
    "no owned partitions": ({"topic_partitions": None}, INVALID_REQUEST),
    "no rebalance timeout": ({"rebalance_timeout": datetime.timedelta(milliseconds=-1)}, INVALID_REQUEST),
    "empty instance id": ({"instance_id": ""}, INVALID_REQUEST),
    "empty rack id": ({"rack_id": ""}, INVALID_REQUEST),
    "epoch -3": ({"member_epoch": -3}, INVALID_REQUEST),
    "epoch 5, unknown member": ({"member_epoch": 5, **NOT_A_JOIN}, UNKNOWN_MEMBER_ID),
    "epoch -1, unknown member": ({"member_epoch": -1, **NOT_A_JOIN}, UNKNOWN_MEMBER_ID),
    "epoch -2 without an instance id": ({"member_epoch": -2, **NOT_A_JOIN}, INVALID_REQUEST),
    "v0, epoch -2 without an instance id": ({"version": 0, "member_epoch": -2, **NOT_A_JOIN}, INVALID_REQUEST),
    "epoch -2, unknown static member": ({"member_epoch": -2, "instance_id": "nobody", **NOT_A_JOIN},
                                        UNKNOWN_MEMBER_ID),
    "epoch -2, empty member id": ({"member_id": "", "member_epoch": -2, "instance_id": "nobody", **NOT_A_JOIN},
                                  INVALID_REQUEST),
    "unknown assignor": ({"server_assignor": "no-such-assignor"}, UNSUPPORTED_ASSIGNOR),
    "range assignor": ({"server_assignor": "range"}, NONE),
    "bad regex": ({"subscribed_topic_names": None, "subscribed_topic_regex": "(["}, INVALID_REGULAR_EXPRESSION),
    "regex only": ({"subscribed_topic_names": None, "subscribed_topic_regex": "heartbeat-checks-.*"}, NONE),
    "a topic that does not exist": ({"subscribed_topic_names": ("no-such-topic",)}, NONE),
    "rack id": ({"rack_id": "rack-1"}, NONE),
    "static member": ({"instance_id": "instance-1"}, NONE),
    "another member, the same instance id": ({"instance_id": "instance-1"}, UNRELEASED_INSTANCE_ID),
}


def test_consumer_group_heartbeat_checks(bootstrap: str) -> None:
    group = f"heartbeat-checks-{uuid.uuid4().hex[:8]}"
    topic = topic_with_records(bootstrap, group)
    answers: dict[str, int] = {}

    async def scenario() -> None:
        connection = await Connection.open(bootstrap, "heartbeat-checks")
        try:
            await coordinator_ready(connection, group)
            for case, (fields, _) in CASES.items():
                request = {"group_id": group, "member_id": str(uuid.uuid4()), "member_epoch": 0, "instance_id": None,
                           "rack_id": None, "rebalance_timeout": datetime.timedelta(seconds=30),
                           "subscribed_topic_names": (topic,), "subscribed_topic_regex": None,
                           "server_assignor": None, "topic_partitions": (), **fields}
                module = heartbeat_v0 if request.pop("version", 1) == 0 else heartbeat_v1
                answer = await connection.request(make(module.ConsumerGroupHeartbeatRequest, **request))
                answers[case] = int(answer.error_code)
        finally:
            await connection.close()

    asyncio.run(scenario())
    assert answers == {case: expected for case, (_, expected) in CASES.items()}
