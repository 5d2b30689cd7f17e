"""The record lock limit of a share-partition (``share.partition.max.record.locks``), checked against Kafka 4.4.

A topic holds 50 stored batches of five records (offsets 0-249). A group sets its limit to 100, the smallest
Kafka accepts (the broker's ``group.share.min.partition.max.record.locks``). Two members fetch everything they
may: together they hold at most 100 records, and further fetches return no records for the partition and no
error. Acknowledging the first batches moves the window's start: as many new records come. Releasing records inside the
window lets them be acquired again without the window growing. ``--against kafka`` runs the same scenario.
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource
from confluent_kafka.error import KafkaException
from kio.schema.share_fetch.v1 import request as fetch_v1
from kio.schema.share_fetch.v2 import request as fetch_v2
from logwright.client.connection import Connection
from logwright.compat.registry import make

from .group_configs import set_group_configs
from .raw_batches import fill_topic
from .test_share_fetch_limits import acquired_records, join, share_fetch

LIMIT = 100
ACCEPT, RELEASE = 1, 2


async def fetch_acking(connection: Connection, group: str, member: str, topic_id: uuid.UUID, session: int,
                       acks: list[tuple[int, int, int]], record_limit: bool) -> Any:
    """A ShareFetch of partition 0 in an open session, acknowledging ``acks`` (first, last, type) on the way."""
    module = fetch_v2 if record_limit else fetch_v1
    topics = (make(module.FetchTopic, topic_id=topic_id, partitions=(make(
        module.FetchPartition, partition_index=0, acknowledgement_batches=tuple(
            make(module.AcknowledgementBatch, first_offset=first, last_offset=last, acknowledge_types=(kind,))
            for first, last, kind in acks)),)),)
    answer = await connection.request(make(
        module.ShareFetchRequest, group_id=group, member_id=member, share_session_epoch=session,
        max_wait=datetime.timedelta(milliseconds=200), min_bytes=1, max_bytes=10**7, max_records=500,
        batch_size=500, share_acquire_mode=int(record_limit), is_renew_ack=False, topics=topics,
        forgotten_topics_data=()))
    assert answer.error_code == 0, answer.error_message
    for topic in answer.responses:
        for partition in topic.partitions:
            assert partition.error_code == 0, partition.error_message
            assert partition.acknowledge_error_code == 0, partition.acknowledge_error_message
    return answer


def offsets(acquired: list[tuple[int, int, int]]) -> list[int]:
    return [offset for first, last, _ in acquired for offset in range(first, last + 1)]


async def scenario(bootstrap: str, topic: str, group: str, per_batch: int, record_limit: bool) -> None:
    mode = {"version": 2, "acquire_mode": 1} if record_limit else {}
    whole = per_batch  # Kafka completes the stored batch the limit falls in, in both acquire modes
    one = await Connection.open(bootstrap, "locks-1")
    two = await Connection.open(bootstrap, "locks-2")
    try:
        member_one, topic_id = await join(one, group, topic)
        member_two, _ = await join(two, group, topic)
        held: dict[str, list[int]] = {member_one: [], member_two: []}
        sessions = {member_one: 0, member_two: 0}
        # Kafka's share coordinator and its assignment take a few rounds: fetch until both stop getting records.
        quiet = 0
        for _ in range(60):
            got_any = False
            for connection, member in ((one, member_one), (two, member_two)):
                answer = await share_fetch(connection, group, member, topic_id, sessions[member], 200, **mode)
                sessions[member] += 1
                got = offsets(acquired_records(answer))
                held[member].extend(got)
                got_any = got_any or bool(got)
            everything = sorted(held[member_one] + held[member_two])
            if everything and not got_any:
                quiet += 1
                if quiet >= 3:
                    break
            else:
                quiet = 0
        everything = sorted(held[member_one] + held[member_two])
        # In batch-optimized mode Kafka completes the stored batch the limit falls in.
        reached = -(-LIMIT // whole) * whole
        assert everything == list(range(reached)), everything[:5] + everything[-5:]

        # Acknowledging the first three batches moves the window's start: that much room (less what the
        # completed batch took beyond the limit) comes, completed to whole batches again.
        acked = 3 * per_batch
        owner = member_one if 0 in held[member_one] else member_two
        connection = one if owner == member_one else two
        assert sorted(offset for offset in held[owner] if offset < acked) == list(range(acked)), "one fetch took all"
        answer = await fetch_acking(connection, group, owner, topic_id, sessions[owner], [(0, acked - 1, ACCEPT)],
                                    record_limit)
        sessions[owner] += 1
        room = LIMIT - (reached - acked)
        expected = list(range(reached, reached + -(-room // whole) * whole))
        more = offsets(acquired_records(answer))
        for _ in range(10):
            if len(more) >= len(expected):
                break
            answer = await share_fetch(connection, group, owner, topic_id, sessions[owner], 200, **mode)
            sessions[owner] += 1
            more += offsets(acquired_records(answer))
        assert sorted(more) == expected, more

        # Releasing five records inside the window gives them back (delivery count 2), and nothing new.
        last_batch = sorted(more)[-5:]
        answer = await fetch_acking(connection, group, owner, topic_id, sessions[owner],
                                    [(last_batch[0], last_batch[-1], RELEASE)], record_limit)
        sessions[owner] += 1
        again = acquired_records(answer)
        for _ in range(10):
            if again:
                break
            answer = await share_fetch(connection, group, owner, topic_id, sessions[owner], 200, **mode)
            sessions[owner] += 1
            again = acquired_records(answer)
        assert again == [(last_batch[0], last_batch[-1], 2)]
    finally:
        await one.close()
        await two.close()


@pytest.mark.differential
@pytest.mark.parametrize(("per_batch", "record_limit"), [(5, False), (7, False), (7, True)])
def test_a_share_partition_holds_at_most_its_record_lock_limit(bootstrap: str, per_batch: int,
                                                               record_limit: bool) -> None:
    """With 7-record batches the limit falls inside a stored batch (98-104): Kafka acquires all of it (105 in
    flight), then nothing new until the window's start moves; in record-limit mode (v2) too."""
    topic = f"locks-{uuid.uuid4().hex[:8]}"
    group = f"locks-{uuid.uuid4().hex[:8]}"
    fill_topic(bootstrap, topic, 250 // per_batch + 1, per_batch, record_bytes=10)
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest",
                                         "share.partition.max.record.locks": str(LIMIT)})
    asyncio.run(asyncio.wait_for(scenario(bootstrap, topic, group, per_batch, record_limit), 180))


@pytest.mark.differential
def test_the_group_limit_is_refused_outside_the_brokers_bounds(bootstrap: str) -> None:
    """Kafka's words: the group's limit must lie within the broker's min and max (100 and 4000 by default)."""
    group = f"locks-{uuid.uuid4().hex[:8]}"
    for value in ("99", "4001"):
        with pytest.raises(KafkaException) as refused:
            set_group_configs(bootstrap, group, {"share.partition.max.record.locks": value})
        assert refused.value.args[0].name() == "INVALID_CONFIG"
        if value == "4001":
            assert "must be in the range 100 to 4000 inclusive" in refused.value.args[0].str()
    set_group_configs(bootstrap, group, {"share.partition.max.record.locks": "4000"})
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.GROUP, group)
    described = admin.describe_configs([resource])[resource].result(30)
    assert described["share.partition.max.record.locks"].value == "4000"
    broker = ConfigResource(ConfigResource.Type.BROKER, "1")
    broker_configs = admin.describe_configs([broker])[broker].result(30)
    assert broker_configs["group.share.partition.max.record.locks"].value == "2000"
    assert broker_configs["group.share.max.partition.max.record.locks"].value == "4000"
    assert broker_configs["group.share.min.partition.max.record.locks"].value == "100"
