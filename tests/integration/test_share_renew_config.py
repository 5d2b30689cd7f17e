"""``share.renew.acknowledge.enable`` (KIP-1222), as Apache Kafka 4.4 applies it (``--against kafka``): while true
(the default) a member renews the locks it holds with a RENEW acknowledgement (ShareAcknowledge v2); set false, the
partition answers INVALID_RECORD_STATE and nothing changes."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from kio.schema.share_acknowledge.v2 import request as acknowledge_v2
from logwright.client.connection import Connection
from logwright.compat.registry import make

from .group_configs import set_group_configs
from .test_share_close_order import member_holding_every_record, topic_with_records

pytestmark = pytest.mark.differential

NONE, INVALID_RECORD_STATE, RENEW = 0, 121, 4


@pytest.mark.parametrize(("enabled", "expected"), [("true", NONE), ("false", INVALID_RECORD_STATE)])
def test_a_renew_follows_the_groups_config(bootstrap: str, enabled: str, expected: int) -> None:
    group = f"renew-{enabled}-{uuid.uuid4().hex[:8]}"
    topic = topic_with_records(bootstrap, group)
    set_group_configs(bootstrap, group, {"share.renew.acknowledge.enable": enabled})

    async def scenario() -> tuple[int, list[int]]:
        connection = await Connection.open(bootstrap, "renew-config")
        try:
            member, topic_id, session = await member_holding_every_record(connection, group, topic)
            answer = await connection.request(make(
                acknowledge_v2.ShareAcknowledgeRequest, group_id=group, member_id=member,
                share_session_epoch=session, is_renew_ack=True, topics=(make(
                    acknowledge_v2.AcknowledgeTopic, topic_id=topic_id, partitions=(make(
                        acknowledge_v2.AcknowledgePartition, partition_index=0, acknowledgement_batches=(make(
                            acknowledge_v2.AcknowledgementBatch, first_offset=0, last_offset=1,
                            acknowledge_types=(RENEW,)),)),)),)))
            return int(answer.error_code), [int(p.error_code) for t in answer.responses for p in t.partitions]
        finally:
            await connection.close()

    assert asyncio.run(scenario()) == (NONE, [expected])
