"""A share group through the group admin APIs, as Apache Kafka 4.4 answers them (``--against kafka``).

ListGroups lists it with protocol type and type ``share`` and its state; DescribeGroups (classic) calls it
Dead, with GROUP_ID_NOT_FOUND ("not a classic group") in v6; ShareGroupDescribe reports Stable or Empty;
DeleteGroups refuses it while it has members and deletes it when empty, after which it is not found
anywhere. A member joining under the same name then starts a new group: on logwright from
``share.auto.offset.reset`` (still ``earliest``, the config outlives the group as in Kafka), as KIP-932
describes; Kafka 4.4 starts such a recreated group where the deleted group's acquisitions had reached,
whatever that config says (docs/share-groups.md has the measurement), so that last step is checked on
logwright only.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest as DescribeGroupsV5
from kio.schema.describe_groups.v6.request import DescribeGroupsRequest as DescribeGroupsV6
from kio.schema.list_groups.v4.request import ListGroupsRequest as ListGroupsV4
from kio.schema.list_groups.v5.request import ListGroupsRequest as ListGroupsV5
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from logwright.client.connection import Connection
from logwright.compat.registry import make

from .broker_process import BrokerProcess
from .group_configs import set_group_configs
from .test_share_fetch_limits import acquired_records, join, share_fetch
from .test_share_groups import check_consistent, poll_batch, setup_topic
from .test_share_groups import consumer as share_consumer

GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP = 69, 68


@pytest.fixture
def share_setup(bootstrap: str) -> tuple[str, str]:
    """(topic, group): three records and a share group that starts at the earliest offset."""
    topic, group = f"admin-{uuid.uuid4().hex[:8]}", f"admin-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest"})
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(3):
        producer.produce(topic, value=f"r{i}".encode())
    assert producer.flush(30) == 0
    return topic, group


async def listed(connection: Connection, group: str, states: tuple[str, ...] = (), types: tuple[str, ...] = (),
                 version: int = 5) -> list[tuple[str, str, str]]:
    """(protocol type, state, type) of ``group`` in ListGroups (empty if it is not listed)."""
    request = (ListGroupsV5(states_filter=states, types_filter=types) if version == 5
               else ListGroupsV4(states_filter=states))
    answer = await connection.request(request)
    assert answer.error_code == 0
    return [(g.protocol_type, g.group_state, getattr(g, "group_type", "")) for g in answer.groups
            if g.group_id == group]


async def described(connection: Connection, group: str) -> tuple[int, str, int]:
    answer = await connection.request(ShareGroupDescribeRequest(group_ids=(group,),
                                                                include_authorized_operations=False))
    [entry] = answer.groups
    return int(entry.error_code), entry.group_state, int(entry.group_epoch)


async def classic_described(connection: Connection, group: str, version: int) -> tuple[int, str, str]:
    request: Any = (DescribeGroupsV6 if version == 6 else DescribeGroupsV5)(groups=(group,),
                                                                         include_authorized_operations=False)
    [entry] = (await connection.request(request)).groups
    return int(entry.error_code), entry.group_state, getattr(entry, "error_message", None) or ""


async def delete(connection: Connection, group: str) -> int:
    [result] = (await connection.request(DeleteGroupsRequest(groups_names=(group,)))).results
    return int(result.error_code)


def test_a_share_group_is_listed_described_and_deleted_as_kafka_does(bootstrap: str, target: str,
                                                                     share_setup: tuple[str, str]) -> None:
    topic, group = share_setup

    async def scenario() -> None:
        connection = await Connection.open(bootstrap, "admin")
        member, topic_id = await join(connection, group, topic)
        fetched: list[tuple[int, int, int]] = []
        for session in range(30):
            fetched = acquired_records(await share_fetch(connection, group, member, topic_id, session, 500))
            if fetched:
                break
        assert fetched == [(0, 2, 1)]

        assert await listed(connection, group) == [("share", "Stable", "share")]
        assert await listed(connection, group, types=("share",)) == [("share", "Stable", "share")]
        assert await listed(connection, group, types=("classic",)) == []
        assert await listed(connection, group, states=("empty",)) == []
        assert await listed(connection, group, states=("stable",), version=4) == [("share", "Stable", "")]
        code, state, message = await classic_described(connection, group, 6)
        assert (code, state) == (GROUP_ID_NOT_FOUND, "Dead") and "not a classic group" in message
        assert (await classic_described(connection, group, 5))[:2] == (0, "Dead")
        assert (await described(connection, group))[:2] == (0, "Stable")
        assert await delete(connection, group) == NON_EMPTY_GROUP

        left = await connection.request(make(ShareGroupHeartbeatRequest, group_id=group, member_id=member,
                                             member_epoch=-1, rack_id=None, subscribed_topic_names=None))
        assert left.error_code == 0
        assert await listed(connection, group) == [("share", "Empty", "share")]
        assert await listed(connection, group, states=("Empty",)) == [("share", "Empty", "share")]
        assert (await described(connection, group))[:2] == (0, "Empty")

        assert await delete(connection, group) == 0
        assert await listed(connection, group) == []
        assert await described(connection, group) == (GROUP_ID_NOT_FOUND, "", 0)
        assert (await classic_described(connection, group, 6))[:2] == (GROUP_ID_NOT_FOUND, "Dead")
        assert await delete(connection, group) == GROUP_ID_NOT_FOUND
        if target == "kafka":
            await connection.close()
            return

        member, topic_id = await join(connection, group, topic)  # a new group of the same name starts afresh
        for session in range(30):
            fetched = acquired_records(await share_fetch(connection, group, member, topic_id, session, 500))
            if fetched:
                break
        assert fetched == [(0, 2, 1)], "the old delivery state went with the deleted group; the config stayed"
        await connection.close()

    asyncio.run(asyncio.wait_for(scenario(), 180))


@pytest.mark.logwright_only(reason="logwright check on a private broker")
def test_deleting_a_share_group_with_confluent_admin_leaves_a_consistent_log(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        topic = setup_topic(broker.bootstrap, "to-delete", 4)
        share = share_consumer(broker.bootstrap, "to-delete", topic)
        taken = poll_batch(share)
        assert taken
        share.acknowledge(taken[0])
        share.commit_sync(30)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        [busy] = admin.delete_consumer_groups(["to-delete"]).values()
        with pytest.raises(KafkaException) as refused:
            busy.result(30)
        assert refused.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
        share.close()
        [done] = admin.delete_consumer_groups(["to-delete"]).values()
        done.result(30)
        listing = admin.list_consumer_groups().result(30)
        assert "to-delete" not in {group.group_id for group in listing.valid}
        check_consistent(broker)
    finally:
        broker.kill()
