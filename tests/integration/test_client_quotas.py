"""Client quotas (DescribeClientQuotas 48, AlterClientQuotas 49) and the byte-rate quotas they set, over the wire.

The differential tests run on Apache Kafka 4.4 with ``--against kafka``: the answers written here are the ones
Kafka 4.4 gave (words, error codes, the order of an answer's entries and of an entity's parts), and a producer
over its ``producer_byte_rate`` is throttled on both as Kafka's sampled rate says. The manual-clock test is
logwright's own: a throttled connection reads nothing until the broker clock has moved past its throttle.
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.alter_client_quotas.v1 import request as alter_v1
from kio.schema.api_versions.v3 import request as api_versions_v3
from kio.schema.create_partitions.v3 import request as create_partitions_v3
from kio.schema.create_topics.v5 import request as create_topics_v5
from kio.schema.create_topics.v7 import request as create_topics_v7
from kio.schema.delete_topics.v6 import request as delete_topics_v6
from kio.schema.describe_client_quotas.v1 import request as describe_v1
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.produce.v9 import request as produce_v9
from logwright.client.connection import Connection, ConnectionClosed
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record
from logwright.testing.clients import advance_clock, one_request

from .authorization_clients import list_offsets, listed_offsets
from .broker_process import BrokerProcess
from .raw_batches import RETRIABLE

NONE, UNSUPPORTED_VERSION, INVALID_REQUEST, POLICY_VIOLATION, THROTTLING_QUOTA_EXCEEDED = 0, 35, 42, 44, 89

Parts = tuple[tuple[str, str | None], ...]


def alter(bootstrap: str, entries: list[tuple[Parts, list[tuple[str, float | None]]]],
          validate_only: bool = False) -> list[tuple[int, str | None, Parts]]:
    answer = one_request(bootstrap, make(alter_v1.AlterClientQuotasRequest, validate_only=validate_only, entries=tuple(
        make(alter_v1.EntryData,
             entity=tuple(make(alter_v1.EntityData, entity_type=kind, entity_name=name) for kind, name in parts),
             ops=tuple(make(alter_v1.OpData, key=key, value=0.0 if value is None else value, remove=value is None)
                       for key, value in ops))
        for parts, ops in entries)), "quota-admin")
    return [(int(entry.error_code), entry.error_message,
             tuple((part.entity_type, part.entity_name) for part in entry.entity)) for entry in answer.entries]


def describe(bootstrap: str, components: list[tuple[str, int, str | None]], strict: bool = False) -> tuple[
        int, str | None, list[tuple[Parts, dict[str, float]]] | None]:
    answer = one_request(bootstrap, make(describe_v1.DescribeClientQuotasRequest, strict=strict, components=tuple(
        make(describe_v1.ComponentData, entity_type=kind, match_type=match_type, match=match)
        for kind, match_type, match in components)), "quota-admin")
    entries = None if answer.entries is None else sorted(
        (tuple((part.entity_type, part.entity_name) for part in entry.entity),
         {value.key: value.value for value in entry.values}) for entry in answer.entries)
    return int(answer.error_code), answer.error_message, entries


def described(bootstrap: str, components: list[tuple[str, int, str | None]], strict: bool = False,
              expected: Any = None) -> Any:
    """`describe`, asked again for up to 10 s until it answers ``expected``: Kafka answers an alteration once its
    controller has it, and its broker's metadata shows it a moment later (logwright's answer is durable)."""
    deadline = time.monotonic() + 10
    while True:
        answer = describe(bootstrap, components, strict)
        if answer == expected or time.monotonic() > deadline:
            return answer
        time.sleep(0.1)


@pytest.mark.differential
def test_quotas_are_set_described_and_removed_as_on_kafka(bootstrap: str) -> None:
    alice, client = f"alice-{uuid.uuid4().hex[:8]}", f"c-{uuid.uuid4().hex[:8]}"
    pair = (("user", alice), ("client-id", client))
    assert alter(bootstrap, [(pair, [("producer_byte_rate", 1000.0), ("request_percentage", 12.5)]),
                             ((("user", alice),), [("consumer_byte_rate", 2000.0)])]) in (
        [(NONE, None, (("client-id", client), ("user", alice))), (NONE, None, (("user", alice),))],
        [(NONE, None, (("user", alice),)), (NONE, None, (("client-id", client), ("user", alice)))])
    expected = (NONE, "", [
        ((("client-id", client), ("user", alice)), {"producer_byte_rate": 1000.0, "request_percentage": 12.5}),
        ((("user", alice),), {"consumer_byte_rate": 2000.0})])
    assert described(bootstrap, [("user", 0, alice)], expected=expected) == expected
    expected = (NONE, "", [
        ((("user", alice),), {"consumer_byte_rate": 2000.0})])
    assert described(bootstrap, [("user", 0, alice)], strict=True, expected=expected) == expected
    expected = (NONE, "", [
        ((("client-id", client), ("user", alice)), {"producer_byte_rate": 1000.0, "request_percentage": 12.5})])
    assert described(bootstrap, [("user", 0, alice), ("client-id", 2, None)], expected=expected) == expected
    # validate-only changes nothing; removing a key the entity lacks is no error; an emptied entity is gone
    assert alter(bootstrap, [((("user", alice),), [("consumer_byte_rate", 5.0)])], validate_only=True) == [
        (NONE, None, (("user", alice),))]
    assert alter(bootstrap, [((("user", alice),), [("consumer_byte_rate", None), ("producer_byte_rate", None)]),
                             (pair, [("request_percentage", None)])]) in (
        [(NONE, None, (("client-id", client), ("user", alice))), (NONE, None, (("user", alice),))],
        [(NONE, None, (("user", alice),)), (NONE, None, (("client-id", client), ("user", alice)))])
    expected = (NONE, "", [
        ((("client-id", client), ("user", alice)), {"producer_byte_rate": 1000.0})])
    assert described(bootstrap, [("user", 0, alice)], expected=expected) == expected


@pytest.mark.differential
def test_refusals_and_their_order_as_on_kafka(bootstrap: str) -> None:
    tag = uuid.uuid4().hex[:8]
    dup, dan = f"dup-{tag}", f"dan-{tag}"
    asked: list[tuple[Parts, list[tuple[str, float | None]]]] = [
        ((("user", dup),), [("producer_byte_rate", 1000.0)]),
        ((("user", dup),), [("consumer_byte_rate", 7.0)]),
        ((), [("producer_byte_rate", 1.0)]),
        ((("group", "g"),), [("producer_byte_rate", 1.0)]),
        ((("user", ""),), [("producer_byte_rate", 1.0)]),
        ((("user", "u"), ("ip", "10.0.0.1")), [("producer_byte_rate", 1.0)]),
        ((("ip", "not an ip!"),), [("connection_creation_rate", 1.0)]),
        ((("user", dan),), [("foo", 1.0)]),
        ((("user", dan), ("client-id", "x")), [("producer_byte_rate", 1.5)]),
        ((("client-id", dan),), [("producer_byte_rate", float("nan"))]),
        ((("ip", "127.1"),), [("connection_creation_rate", 3e9)]),
    ]
    checked = alter(bootstrap, asked, validate_only=True)  # the same checks and answer, nothing made
    assert describe(bootstrap, [("user", 0, dup)])[2] == []
    answered = alter(bootstrap, asked)
    assert checked == answered
    assert sorted(answered, key=repr) == sorted([
        (INVALID_REQUEST, f"Ignoring duplicate entity ClientQuotaEntity(entries={{user={dup}}})", (("user", dup),)),
        (INVALID_REQUEST, "Invalid empty client quota entity", ()),
        (INVALID_REQUEST, "Unhandled client quota entity type: group", (("group", "g"),)),
        (INVALID_REQUEST, "Empty user not supported", (("user", ""),)),
        (INVALID_REQUEST, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
         (("user", "u"), ("ip", "10.0.0.1"))),
        (INVALID_REQUEST, "not an ip! is not a valid IP or resolvable host.", (("ip", "not an ip!"),)),
        (INVALID_REQUEST, "Invalid configuration key foo", (("user", dan),)),
        (INVALID_REQUEST, "producer_byte_rate cannot be a fractional value.", (("client-id", "x"), ("user", dan))),
        (INVALID_REQUEST, "Quota producer_byte_rate must be a finite number", (("client-id", dan),)),
        (INVALID_REQUEST, "Proposed value for connection_creation_rate is too large for an INT.", (("ip", "127.1"),)),
    ], key=repr)
    # Kafka's controller made the first alteration of the entity named twice, though it answered an error
    expected = (NONE, "", [((("user", dup),), {"producer_byte_rate": 1000.0})])
    assert described(bootstrap, [("user", 0, dup)], expected=expected) == expected
    assert describe(bootstrap, [("user", 0, dan)])[2] == []
    # the answer's order is Kafka's map order (a hash of each entity), not the request's
    ordered = alter(bootstrap, [((("client-id", "m"),), [("producer_byte_rate", 100.0)]),
                                ((("user", "a"), ("client-id", "b")), [("producer_byte_rate", 100.0)]),
                                ((("ip", "1.1.1.1"),), [("producer_byte_rate", 100.0)]),
                                ((("user", "zz"),), [("bad", 100.0)])], validate_only=True)
    assert ordered == [(NONE, None, (("client-id", "b"), ("user", "a"))),
                       (INVALID_REQUEST, "Invalid configuration key producer_byte_rate", (("ip", "1.1.1.1"),)),
                       (INVALID_REQUEST, "Invalid configuration key bad", (("user", "zz"),)),
                       (NONE, None, (("client-id", "m"),))]


@pytest.mark.differential
def test_more_than_ten_thousand_keys_are_refused_whole(bootstrap: str) -> None:
    tag = uuid.uuid4().hex[:8]
    entries: list[tuple[Parts, list[tuple[str, float | None]]]] = [
        ((("user", f"big{i}-{tag}"),), [("producer_byte_rate", 1000.0)]) for i in range(10_001)]
    answered = alter(bootstrap, entries)
    assert len(answered) == 10_001 and answered[0] == (
        POLICY_VIOLATION, "Request parameters do not satisfy the configured policy.", (("user", f"big0-{tag}"),))
    assert {code for code, _, _ in answered} == {POLICY_VIOLATION}
    assert describe(bootstrap, [("user", 0, f"big5-{tag}")])[2] == []
    assert {code for code, _, _ in alter(bootstrap, entries[:10_000], validate_only=True)} == {NONE}


@pytest.mark.differential
@pytest.mark.parametrize(("components", "answer"), [
    ([("user", 0, None)], (INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but set match string to null.")),
    ([("user", 1, "x")], (INVALID_REQUEST, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")),
    ([("user", 2, "x")],
     (INVALID_REQUEST, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")),
    ([("user", 5, None)], (INVALID_REQUEST, "Unknown match type 5")),
    ([("group", 2, None)], (UNSUPPORTED_VERSION, "Unsupported entity type group")),
    ([("", 2, None)], (INVALID_REQUEST, "Invalid empty entity type.")),
    ([("user", 2, None), ("user", 0, "a")], (INVALID_REQUEST, "Entity type user cannot appear more than once in the "
                                                               "filter.")),
    ([("ip", 2, None), ("client-id", 2, None)], (
        INVALID_REQUEST, "Invalid entity filter component combination. IP filter component should not be used with "
                         "user or clientId filter component.")),
])
def test_bad_filters_as_on_kafka(bootstrap: str, components: list[tuple[str, int, str | None]],
                                 answer: tuple[int, str]) -> None:
    assert describe(bootstrap, components) == (*answer, None)


def _topic(bootstrap: str) -> str:
    """A fresh one-partition topic, once the broker leads its partition: Kafka answers a Produce right after
    CreateTopics NOT_LEADER_OR_FOLLOWER until it has applied the controller's record, and these tests count the
    batches they store, so they wait rather than retry a produce."""
    name = f"quota-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1)])[name].result(30)
    deadline = time.monotonic() + 30
    while listed_offsets(one_request(bootstrap, list_offsets(name)))[0][1] in RETRIABLE:
        assert time.monotonic() < deadline, f"{name} was never led"
        time.sleep(0.1)
    return name


def _produce(topic: str, size: int) -> Any:
    batch = build_batch([Record(0, int(time.time() * 1000), None, b"x" * size)])
    return make(produce_v9.ProduceRequest, transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=30),
                topic_data=(make(produce_v9.TopicProduceData, name=topic, partition_data=(
                    make(produce_v9.PartitionProduceData, index=0, records=batch),)),))


def _ip_quota(value: float | None) -> Any:
    """AlterClientQuotas of ``connection_creation_rate`` on 127.0.0.1 (None: removed)."""
    return make(alter_v1.AlterClientQuotasRequest, validate_only=False, entries=(make(
        alter_v1.EntryData, entity=(make(alter_v1.EntityData, entity_type="ip", entity_name="127.0.0.1"),),
        ops=(make(alter_v1.OpData, key="connection_creation_rate", value=value or 0.0, remove=value is None),)),))


IP_FILTER = make(describe_v1.DescribeClientQuotasRequest, strict=True, components=(
    make(describe_v1.ComponentData, entity_type="ip", match_type=0, match="127.0.0.1"),))


@pytest.mark.differential
def test_connections_over_an_ip_connection_creation_rate_are_closed_unserved(bootstrap: str) -> None:
    """connection_creation_rate 5 on 127.0.0.1 (KIP-612). Kafka's rate counts at least ten seconds, so about fifty
    connections opened at once are served; each one after is held unanswered and closed within the throttle time
    (at most one quota window, a second), and not counted, so the next is throttled too. The quota is set and removed
    over a connection opened before: a new one would be throttled."""

    async def run() -> tuple[int, list[float]]:
        admin = await Connection.open(bootstrap, "quota-admin")
        served, closed_after = 0, []
        try:
            assert [int(entry.error_code) for entry in (await admin.request(_ip_quota(5.0))).entries] == [NONE]
            for _ in range(100):  # Kafka's broker applies the quota a moment after its controller stored it
                if (await admin.request(IP_FILTER)).entries:
                    break
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.5)
            for _ in range(70):
                started = time.monotonic()
                connection = await Connection.open(bootstrap, "connection-flood")
                try:
                    await connection.request(make(api_versions_v3.ApiVersionsRequest, client_software_name="flood",
                                                  client_software_version="1"), timeout_s=5)
                    served += 1
                except ConnectionClosed:
                    closed_after.append(time.monotonic() - started)
                finally:
                    await connection.close()
        finally:
            assert [int(entry.error_code) for entry in (await admin.request(_ip_quota(None))).entries] == [NONE]
            for _ in range(100):
                if not (await admin.request(IP_FILTER)).entries:
                    break
                await asyncio.sleep(0.1)
            await admin.close()
        return served, closed_after

    served, closed_after = asyncio.run(run())
    assert 45 <= served <= 60, (served, closed_after)
    assert len(closed_after) == 70 - served
    # held, then closed: for the throttle time left, which near the end of the rate's window is short (42 ms once
    # under the whole suite); a connection closed unheld goes in about a millisecond
    assert all(0.01 <= seconds <= 1.5 for seconds in closed_after), closed_after


@pytest.mark.differential
def test_a_producer_over_its_byte_rate_is_throttled_and_muted(bootstrap: str) -> None:
    """50,000 B/s on the client id; requests of ~50 KB. Kafka's rate counts at least ten seconds, so the first ten
    (~500 KB) pass unthrottled; the eleventh takes it over and is answered with the time that brings the rate back
    (about 1 s per 50 KB over), and the connection reads nothing more for that long."""
    client_id = f"quota-client-{uuid.uuid4().hex[:8]}"
    topic = _topic(bootstrap)
    assert alter(bootstrap, [((("client-id", client_id),), [("producer_byte_rate", 50_000.0)])]) == [
        (NONE, None, (("client-id", client_id),))]

    async def run() -> tuple[list[int], float]:
        connection = await Connection.open(bootstrap, client_id)
        try:
            throttles = []
            for _ in range(11):
                answer = await connection.request(_produce(topic, 49_000))
                assert int(answer.responses[0].partition_responses[0].error_code) == NONE
                throttles.append(int(answer.throttle_time.total_seconds() * 1000))
            started = time.monotonic()
            answer = await connection.request(_produce(topic, 100))
            throttles.append(int(answer.throttle_time.total_seconds() * 1000))
            return throttles, time.monotonic() - started
        finally:
            await connection.close()

    try:
        throttles, held_s = asyncio.run(run())
    finally:
        alter(bootstrap, [((("client-id", client_id),), [("producer_byte_rate", None)])])
    assert throttles[:10] == [0] * 10
    assert 500 <= throttles[10] <= 1_500, throttles
    assert held_s >= throttles[10] / 1000 * 0.8, (held_s, throttles)  # muted: the next request waited
    assert throttles[11] <= throttles[10]


def _fetch(topic: str, offset: int) -> Any:
    """A sessionless Fetch of one batch (every limit 1 byte: the first batch goes whole) from ``offset``."""
    return make(fetch_v12.FetchRequest, max_wait=datetime.timedelta(milliseconds=100), min_bytes=1, max_bytes=1,
                isolation_level=0, session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=(),
                topics=(make(fetch_v12.FetchTopic, topic=topic, partitions=(make(
                    fetch_v12.FetchPartition, partition=0, fetch_offset=offset, partition_max_bytes=1),)),))


@pytest.mark.differential
def test_a_consumer_over_its_byte_rate_is_answered_empty_and_muted(bootstrap: str) -> None:
    """50,000 B/s on the client id; twelve stored batches of ~49 KB read one a Fetch. The first ten pass; the
    eleventh would take the rate over: it is answered as Kafka answers it, with no records and the throttle time, and
    the connection's next Fetch waits that long, then reads the same batch, now within the quota."""
    client_id = f"quota-reader-{uuid.uuid4().hex[:8]}"
    topic = _topic(bootstrap)

    async def fill() -> None:
        connection = await Connection.open(bootstrap, "quota-filler")
        try:
            for _ in range(12):
                answer = await connection.request(_produce(topic, 49_000))
                assert int(answer.responses[0].partition_responses[0].error_code) == NONE
        finally:
            await connection.close()

    asyncio.run(fill())
    assert alter(bootstrap, [((("client-id", client_id),), [("consumer_byte_rate", 50_000.0)])]) == [
        (NONE, None, (("client-id", client_id),))]
    described(bootstrap, [("client-id", 0, client_id)], expected=(NONE, "", [
        ((("client-id", client_id),), {"consumer_byte_rate": 50_000.0})]))

    async def run() -> tuple[list[tuple[int, int, int]], float]:
        connection = await Connection.open(bootstrap, client_id)
        try:
            seen, offset = [], 0
            for _ in range(11):
                answer = await connection.request(_fetch(topic, offset))
                partitions = [partition for entry in answer.responses for partition in entry.partitions]
                records = bytes(partitions[0].records or b"") if partitions else b""
                seen.append((int(answer.throttle_time.total_seconds() * 1000), len(partitions), len(records)))
                offset += 1 if records else 0
            started = time.monotonic()
            answer = await connection.request(_fetch(topic, offset))
            partitions = [partition for entry in answer.responses for partition in entry.partitions]
            seen.append((int(answer.throttle_time.total_seconds() * 1000), len(partitions),
                         len(bytes(partitions[0].records or b"")) if partitions else 0))
            return seen, time.monotonic() - started
        finally:
            await connection.close()

    try:
        seen, held_s = asyncio.run(run())
    finally:
        alter(bootstrap, [((("client-id", client_id),), [("consumer_byte_rate", None)])])
    assert [(throttle, partitions) for throttle, partitions, _ in seen[:10]] == [(0, 1)] * 10
    assert all(49_000 < size < 50_000 for _, _, size in seen[:10])
    throttle_ms, partitions, size = seen[10]
    assert (partitions, size) == (0, 0) and 500 <= throttle_ms <= 1_500, seen
    assert held_s >= throttle_ms / 1000 * 0.8, (held_s, seen)  # muted: the next request waited
    # then the same batch, or (Kafka's window counts ten seconds plus the current second's part, so the rate can
    # still be over) another empty answer with its own throttle
    assert seen[11] == (0, 1, seen[0][2]) or (seen[11][1:] == (0, 0) and seen[11][0] > 0), seen


def _create_topics(bootstrap: str, client_id: str, topics: list[tuple[str, int]], module: Any = create_topics_v7,
                   validate_only: bool = False) -> tuple[int, list[tuple[int, str | None]]]:
    answer = one_request(bootstrap, make(
        module.CreateTopicsRequest, timeout=datetime.timedelta(seconds=30), validate_only=validate_only,
        topics=tuple(make(module.CreatableTopic, name=name, num_partitions=count, replication_factor=1,
                          assignments=(), configs=()) for name, count in topics)), client_id)
    return (int(answer.throttle_time.total_seconds() * 1000),
            [(int(topic.error_code), topic.error_message) for topic in answer.topics])


@pytest.mark.differential
def test_topic_mutations_over_the_controller_mutation_rate_as_on_kafka(bootstrap: str) -> None:
    """KIP-599 at 1 partition a second: the bucket holds eleven (eleven one-second windows). A validate-only creation
    of 6 takes 6, as on Kafka; 10 more go (the bucket may go below zero), and what follows is refused
    THROTTLING_QUOTA_EXCEEDED, without a message, with the time until the bucket is back at zero, by CreateTopics
    v7, CreatePartitions v3 and DeleteTopics v6, while CreateTopics v5 (before the error existed) goes and is
    answered the throttle time."""
    tag = uuid.uuid4().hex[:8]
    client_id = f"quota-admin-{tag}"
    assert alter(bootstrap, [((("client-id", client_id),), [("controller_mutation_rate", 1.0)])])[0][0] == NONE
    described(bootstrap, [("client-id", 0, client_id)], expected=(NONE, "", [
        ((("client-id", client_id),), {"controller_mutation_rate": 1.0})]))
    try:
        assert _create_topics(bootstrap, client_id, [(f"mut-a-{tag}", 6)], validate_only=True) == (0, [(NONE, None)])
        throttle, results = _create_topics(bootstrap, client_id, [(f"mut-b-{tag}", 10), (f"mut-c-{tag}", 5),
                                                                  (f"mut-d-{tag}", 1)])
        assert results == [(NONE, None), (THROTTLING_QUOTA_EXCEEDED, None), (THROTTLING_QUOTA_EXCEEDED, None)]
        assert 3_000 <= throttle <= 5_000, throttle  # 11 - 6 - 10 = -5 tokens, refilled a little since
        throttle, results = _create_topics(bootstrap, client_id, [(f"mut-e-{tag}", 1)], module=create_topics_v5)
        assert results == [(NONE, None)] and 3_000 <= throttle <= 6_000, throttle
        answer = one_request(bootstrap, make(
            create_partitions_v3.CreatePartitionsRequest, timeout=datetime.timedelta(seconds=30), validate_only=False,
            topics=(make(create_partitions_v3.CreatePartitionsTopic, name=f"mut-b-{tag}", count=12,
                         assignments=None),)), client_id)
        assert [(int(result.error_code), result.error_message) for result in answer.results] == [
            (THROTTLING_QUOTA_EXCEEDED, None)]
        assert 3_000 <= answer.throttle_time.total_seconds() * 1000 <= 6_000
        answer = one_request(bootstrap, make(
            delete_topics_v6.DeleteTopicsRequest, timeout=datetime.timedelta(seconds=30), topics=(
                make(delete_topics_v6.DeleteTopicState, name=f"mut-b-{tag}", topic_id=uuid.UUID(int=0)),)), client_id)
        assert [(int(result.error_code), result.error_message) for result in answer.responses] == [
            (THROTTLING_QUOTA_EXCEEDED, None)]
        # another client, no quota of its own, is not held by this one's
        assert _create_topics(bootstrap, f"other-{tag}", [(f"mut-f-{tag}", 3)]) == (0, [(NONE, None)])
    finally:
        alter(bootstrap, [((("client-id", client_id),), [("controller_mutation_rate", None)])])


def test_a_throttled_connection_waits_for_the_broker_clock(clock_broker: BrokerProcess) -> None:
    """On a manual clock the muted connection's next request is answered only once the clock has moved past the
    throttle, however long that takes in real time; another client of no quota is served meanwhile."""
    bootstrap = clock_broker.bootstrap
    topic = _topic(bootstrap)
    assert alter(bootstrap, [((("client-id", "slow"),), [("producer_byte_rate", 1_000.0)])])[0][0] == NONE

    async def run() -> None:
        slow = await Connection.open(bootstrap, "slow")
        other = await Connection.open(bootstrap, "other")
        try:
            answer = await slow.request(_produce(topic, 20_000))
            throttle_ms = int(answer.throttle_time.total_seconds() * 1000)
            assert 10_000 <= throttle_ms <= 11_000  # ~20 KB over ten seconds at 1 KB/s: ten seconds more
            held = asyncio.ensure_future(slow.request(_produce(topic, 10)))
            await asyncio.sleep(1.0)
            assert not held.done()
            answer = await other.request(_produce(topic, 20_000))
            assert int(answer.throttle_time.total_seconds() * 1000) == 0
            await asyncio.to_thread(advance_clock, bootstrap, throttle_ms - 1)
            await asyncio.sleep(0.5)
            assert not held.done()
            await asyncio.to_thread(advance_clock, bootstrap, 1)
            answer = await asyncio.wait_for(held, 10)
            assert int(answer.responses[0].partition_responses[0].error_code) == NONE
        finally:
            await slow.close()
            await other.close()

    asyncio.run(run())
