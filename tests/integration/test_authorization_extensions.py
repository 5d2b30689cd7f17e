"""logwright's own keys under ACLs (`compat/extensions/access.py`): each asks for what a Kafka client needs for the
same work, the group before the topic, refused in the key's own answer with Kafka's authorization codes.

logwright only: Kafka has no such keys. ``alice`` and ``bob`` (PLAIN, SASL listener) have what a test grants; the
PLAINTEXT listener's ``User:ANONYMOUS`` is the super user.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgpack
import pytest
from confluent_kafka import Producer
from kio.schema.share_group_heartbeat.v1 import request as share_heartbeat_v1
from logwright.compat.registry import make

from .authorization_clients import (
    CLUSTER_AUTHORIZATION_FAILED,
    GROUP_AUTHORIZATION_FAILED,
    NONE,
    TOPIC_AUTHORIZATION_FAILED,
    AclOperation,
    ResourceType,
    binding,
    create_topic,
    grant,
    unique,
)
from .sasl_listeners import Listeners, plain_login

pytestmark = pytest.mark.logwright_only(reason="logwright's own API keys")

POP, POP_ACK, POP_NACK, POP_INSPECT, POP_RESET = 32009, 32010, 32012, 32013, 32014
INSPECT_CURSOR, BROKER_STATS, ACKNOWLEDGE_BATCH = 32006, 32007, 32004


def calls(bootstrap: str, user: str, requests: list[tuple[int, dict[str, Any]]],
          joining: Any = None) -> list[dict[str, Any]]:
    """Each extension request's answer (a msgpack map) on one connection authenticated as ``user``; ``joining``, a
    ShareGroupHeartbeat sent first on the same connection, must be answered without error."""

    async def run() -> list[dict[str, Any]]:
        connection = await plain_login(bootstrap, user, f"extensions-{user}")
        try:
            if joining is not None:
                joined = await connection.request(joining, timeout_s=15)
                assert int(joined.error_code) == NONE, joined
            return [msgpack.unpackb(await connection.raw(key, msgpack.packb(body), 15.0), raw=False)
                    for key, body in requests]
        finally:
            await connection.close()

    return asyncio.run(run())


def codes(answers: list[dict[str, Any]]) -> list[int]:
    return [int(answer["error_code"]) for answer in answers]


def produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for n in range(count):
        producer.produce(topic, f"v{n}".encode(), partition=0)
    assert producer.flush(30) == 0


def test_pop_needs_read_on_its_group_then_its_topic_and_acks_need_the_handles_topic(
        authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    prefix = unique("authz-pop")
    topic, group = f"{prefix}-topic", f"{prefix}-group"
    create_topic(plain, topic)
    pop = (POP, {"group_id": group, "topic": topic, "max_messages": 3, "invisible_time_ms": 60_000})
    missing = (POP, {"group_id": group, "topic": f"{prefix}-missing"})
    inspect = (POP_INSPECT, {"group_id": group, "topic": topic})

    refused = calls(sasl, "alice", [pop, inspect])
    assert codes(refused) == [GROUP_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED]
    assert "READ on group" in refused[0]["error_message"] and "DESCRIBE on group" in refused[1]["error_message"]

    grant(plain, binding(ResourceType.GROUP, group, "User:alice", AclOperation.READ),
          binding(ResourceType.GROUP, group, "User:bob", AclOperation.READ))
    # a topic refused whether it exists or not: the refusal tells no topic names
    assert codes(calls(sasl, "alice", [pop, missing, inspect])) == [TOPIC_AUTHORIZATION_FAILED] * 3

    grant(plain, binding(ResourceType.TOPIC, topic, "User:alice", AclOperation.READ))
    assert codes(calls(sasl, "alice", [pop])) == [NONE]  # the group's first pop starts it at the log end
    produce(plain, topic, 3)
    popped, described = calls(sasl, "alice", [pop, inspect])  # READ implies DESCRIBE
    assert (int(popped["error_code"]), int(described["error_code"])) == (NONE, NONE)
    handles = [message["handle"] for message in popped["messages"]]
    assert len(handles) == 3

    # bob may READ the group, not the topic: alice's handles are not his to settle, nor to reset the group's offsets
    assert codes(calls(sasl, "bob", [(POP_ACK, {"group_id": group, "handle": handles[0]}),
                                     (POP_ACK, {"group_id": group, "handles": handles[1:]}),
                                     (POP_NACK, {"group_id": group, "handle": handles[1], "delay_ms": 0}),
                                     (POP_RESET, {"group_id": group, "topic": topic, "to": "earliest"})])) == [
        TOPIC_AUTHORIZATION_FAILED] * 4
    assert codes(calls(sasl, "alice", [(POP_ACK, {"group_id": group, "handles": handles})])) == [NONE]


def test_cursor_inspection_and_broker_stats_need_describe(
        authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    prefix = unique("authz-inspect")
    topic, group = f"{prefix}-topic", f"{prefix}-group"
    create_topic(plain, topic)
    inspect = (INSPECT_CURSOR, {"group_id": group, "topic": topic})
    stats = (BROKER_STATS, {})
    assert codes(calls(sasl, "bob", [inspect, stats])) == [GROUP_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED]

    grant(plain, binding(ResourceType.GROUP, group, "User:bob", AclOperation.DESCRIBE),
          binding(ResourceType.BROKER, "kafka-cluster", "User:bob", AclOperation.DESCRIBE))
    inspected, counted = calls(sasl, "bob", [inspect, stats])
    assert int(inspected["error_code"]) == TOPIC_AUTHORIZATION_FAILED
    assert int(counted["error_code"]) == NONE and counted["connections"] >= 1

    grant(plain, binding(ResourceType.TOPIC, topic, "User:bob", AclOperation.DESCRIBE))
    inspected = calls(sasl, "bob", [inspect])[0]
    assert int(inspected["error_code"]) == NONE
    assert [partition["exists"] for partition in inspected["partitions"]] == [False]  # looked at, none created


def test_a_batch_acknowledgement_refuses_only_the_entries_of_topics_the_member_may_not_read(
        authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    prefix = unique("authz-ackbatch")
    readable, other, group = f"{prefix}-readable", f"{prefix}-other", f"{prefix}-group"
    create_topic(plain, readable)
    create_topic(plain, other)
    grant(plain, binding(ResourceType.GROUP, group, "User:alice", AclOperation.READ),
          binding(ResourceType.TOPIC, readable, "User:alice", AclOperation.READ))
    member = "member-authz-ackbatch"
    join = make(share_heartbeat_v1.ShareGroupHeartbeatRequest, group_id=group, member_id=member, member_epoch=0,
                rack_id=None, subscribed_topic_names=(readable,))
    acks = [{"topic": name, "partition": 0, "ranges": [[0, 0]]} for name in (readable, other, f"{prefix}-missing")]
    answer = calls(sasl, "alice", [(ACKNOWLEDGE_BATCH, {"group_id": group, "member_id": member, "acks": acks})],
                   joining=join)[0]
    assert int(answer["error_code"]) == NONE
    results = [(result["topic"], int(result["error_code"])) for result in answer["results"]]
    # the readable topic's entry gets past the authorizer (nothing was delivered: its own refusal), the others not
    assert results[1:] == [(other, TOPIC_AUTHORIZATION_FAILED), (f"{prefix}-missing", TOPIC_AUTHORIZATION_FAILED)]
    assert results[0][0] == readable and results[0][1] != TOPIC_AUTHORIZATION_FAILED
