"""The bundled asyncio client (`logwright.client`) against a real broker process on a manual clock.

Time-dependent behaviour (negative-ack delays, ack timeouts) is driven by advancing the broker's
clock, never by sleeping; restarts are SIGKILLs; every restart scenario ends with ``logwright check``.
Topics are created and filled with confluent-kafka, consumed only through the bundled client.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import msgpack
import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from logwright.client import (
    BrokerError,
    Client,
    Consumer,
    ConsumerBusy,
    InvalidConfiguration,
    Message,
    MultiplierBackoff,
    Timeout,
)

from .broker_process import BrokerProcess
from .test_share_groups import check_consistent, setup_topic

LOCK_MS = 15_000


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), 240))


def new_topic(broker: BrokerProcess, records: int, partitions: int = 1) -> str:
    """A topic with ``records`` values ``r0, r1, ...`` (round-robin over partitions without keys)."""
    return setup_topic(broker.bootstrap, "unused-group", records, partitions)


async def receive_all(consumer: Consumer, idle_s: float = 1.5) -> list[Message]:
    """Everything the consumer gets until nothing arrives for ``idle_s`` seconds."""
    got = []
    while True:
        try:
            got.append(await consumer.receive(timeout=idle_s))
        except Timeout:
            return got


def test_individual_acks_with_holes_survive_a_kill(clock_broker: BrokerProcess) -> None:
    topic = new_topic(clock_broker, 10)

    async def before() -> None:
        client = await Client.connect(clock_broker.bootstrap)
        consumer = await client.subscribe(topic, "holes", initial_position="earliest")
        messages = await receive_all(consumer)
        assert [m.offset for m in messages] == list(range(10))
        assert [m.value for m in messages] == [f"r{i}".encode() for i in range(10)]
        for message in messages:
            if message.offset not in (3, 7):
                await consumer.acknowledge(message)
        [cursor] = await client.inspect("holes", topic)
        assert cursor["mark_delete_position"] == 2 and cursor["settled"] == [[4, 6], [8, 9]]
        assert cursor["backlog"] == 2

    run(before)
    clock_broker.kill()
    clock_broker.start()

    async def after() -> None:
        client = await Client.connect(clock_broker.bootstrap)
        consumer = await client.subscribe(topic, "holes", initial_position="earliest")
        [cursor] = await client.inspect("holes", topic)
        assert [(d["first"], d["last"]) for d in cursor["in_flight"]] == [(3, 3), (7, 7)]
        await client.advance_clock(LOCK_MS * 2 + 1)  # the dead consumer's locks run out
        again = await receive_all(consumer)
        assert [(m.offset, m.redelivery_count) for m in again] == [(3, 1), (7, 1)]
        for message in again:
            await consumer.acknowledge(message)
        [cursor] = await client.inspect("holes", topic)
        assert cursor["mark_delete_position"] == 9 and cursor["backlog"] == 0
        await client.close()

    run(after)
    check_consistent(clock_broker)


def test_cumulative_ack_on_exclusive_and_a_clear_error_on_shared(clock_broker: BrokerProcess) -> None:
    topic = new_topic(clock_broker, 10)

    async def scenario() -> None:
        client = await Client.connect(clock_broker.bootstrap)
        exclusive = await client.subscribe(topic, "excl", mode="exclusive", initial_position="earliest")
        messages = await receive_all(exclusive)
        await exclusive.acknowledge_cumulative(messages[5])
        [cursor] = await client.inspect("excl", topic)
        assert cursor["mark_delete_position"] == 5 and cursor["settled"] == []
        await exclusive.close()
        exclusive = await client.subscribe(topic, "excl", mode="exclusive", initial_position="earliest")
        assert [m.offset for m in await receive_all(exclusive)] == [6, 7, 8, 9]

        shared = await client.subscribe(topic, "shr", initial_position="earliest")
        held = await receive_all(shared)
        with pytest.raises(InvalidConfiguration, match="only allowed on exclusive and failover"):
            await shared.acknowledge_cumulative(held[5])
        # The broker refuses it too, whatever a client believes the mode is.
        with pytest.raises(BrokerError, match="cumulative acknowledgement is only allowed") as refused:
            await shared._connection.extension(32005, {"group_id": "shr", "member_id": shared.member_id,
                                                       "topic": topic, "partition": 0, "offset": 5}, "cumulative")
        assert refused.value.code == 42
        [cursor] = await client.inspect("shr", topic)
        assert cursor["mark_delete_position"] == -1 and cursor["settled"] == [] and len(cursor["in_flight"]) == 1
        await client.close()

    run(scenario)
    check_consistent(clock_broker)


def test_negative_ack_delay_and_ack_timeout_follow_the_broker_clock(clock_broker: BrokerProcess) -> None:
    topic = new_topic(clock_broker, 2)

    async def scenario() -> None:
        client = await Client.connect(clock_broker.bootstrap)
        consumer = await client.subscribe(topic, "timing", initial_position="earliest", ack_timeout_ms=LOCK_MS,
                                          negative_ack_redelivery_delay_ms=10_000)
        first, second = await receive_all(consumer)
        await consumer.negative_acknowledge(first)  # back in 10 s of broker time
        assert await receive_all(consumer, 1.0) == []
        await client.advance_clock(9_000)
        assert await receive_all(consumer, 1.0) == []
        await client.advance_clock(1_000)
        [again] = await receive_all(consumer)
        assert (again.offset, again.redelivery_count) == (0, 1)
        await consumer.acknowledge(again)
        # ``second`` is never acknowledged: its ack timeout (the lock) runs out after 15 s.
        await client.advance_clock(LOCK_MS - 10_000 + 1)
        [late] = await receive_all(consumer)
        assert (late.offset, late.redelivery_count) == (1, 1)
        await consumer.acknowledge(late)
        await client.close()

    run(scenario)
    check_consistent(clock_broker)


def test_multiplier_backoff_grows_with_the_persisted_count_across_a_kill(clock_broker: BrokerProcess) -> None:
    topic = new_topic(clock_broker, 1)
    backoff = MultiplierBackoff(min_delay_ms=1_000, max_delay_ms=60_000, multiplier=2.0)

    async def nack_three_times() -> None:
        client = await Client.connect(clock_broker.bootstrap)
        consumer = await client.subscribe(topic, "backoff", initial_position="earliest", redelivery_backoff=backoff)
        for count in range(3):
            [message] = await receive_all(consumer)
            assert message.redelivery_count == count
            now = await client.advance_clock(0)
            await consumer.negative_acknowledge(message)
            [cursor] = await client.inspect("backoff", topic)
            [waiting] = cursor["redeliveries"]
            assert waiting["available_at_ms"] - now == 1_000 * 2**count
            assert waiting["delivery_count"] == count + 1
            await client.advance_clock(1_000 * 2**count)

    run(nack_three_times)
    clock_broker.kill()
    clock_broker.start()

    async def after() -> None:
        client = await Client.connect(clock_broker.bootstrap)
        [cursor] = await client.inspect("backoff", topic)
        [waiting] = cursor["redeliveries"]
        assert waiting["delivery_count"] == 3
        assert waiting["available_at_ms"] == await client.advance_clock(0), "the clock did not resume at the due time"
        consumer = await client.subscribe(topic, "backoff", initial_position="earliest", redelivery_backoff=backoff)
        [message] = await receive_all(consumer)
        assert message.redelivery_count == 3, "the count of 3 deliveries was not kept across the kill"
        now = await client.advance_clock(0)
        await consumer.negative_acknowledge(message)
        [cursor] = await client.inspect("backoff", topic)
        assert cursor["redeliveries"][0]["available_at_ms"] - now == 8_000
        await client.close()

    run(after)
    check_consistent(clock_broker)


def test_the_manual_clock_resumes_where_it_was_after_a_stop_and_a_kill(clock_broker: BrokerProcess) -> None:
    async def now_after(advance_ms: int) -> int:
        client = await Client.connect(clock_broker.bootstrap)
        try:
            return await client.advance_clock(advance_ms)
        finally:
            await client.close()

    started = asyncio.run(now_after(0))
    assert clock_broker.stop() == 0
    clock_broker.start()
    assert asyncio.run(now_after(0)) == started, "a restart before any advance moved the clock"
    advanced = asyncio.run(now_after(3_600_000))
    assert advanced == started + 3_600_000
    clock_broker.kill()
    clock_broker.start()
    assert asyncio.run(now_after(0)) == advanced, "the clock did not resume after a kill"
    assert asyncio.run(now_after(1)) == advanced + 1
    check_consistent(clock_broker)


def test_a_second_exclusive_consumer_gets_a_clear_error(clock_broker: BrokerProcess) -> None:
    topic = new_topic(clock_broker, 1)

    async def scenario() -> None:
        client = await Client.connect(clock_broker.bootstrap)
        await client.subscribe(topic, "solo", mode="exclusive")
        with pytest.raises(ConsumerBusy) as busy:
            await client.subscribe(topic, "solo", mode="exclusive")
        assert busy.value.code == 81 and "exclusive" in str(busy.value)
        await client.close()

    run(scenario)


def test_failover_switch_over_keeps_acks_and_redelivers_the_rest(clock_broker: BrokerProcess) -> None:
    topic = new_topic(clock_broker, 0, partitions=6)

    async def scenario() -> None:
        client = await Client.connect(clock_broker.bootstrap)

        async def join(name: str, priority: int = 0) -> Consumer:
            return await client.subscribe(topic, "fo", mode="failover", consumer_name=name, priority=priority,
                                          initial_position="earliest", heartbeat_interval_ms=100)

        # Joined in an order unlike the name order; "0-standby" sorts first by name but has a lower priority.
        c, standby, a, b = await join("c"), await join("0-standby", priority=1), await join("a"), await join("b")
        await client.advance_clock(1000)  # the switch delay of the partitions that moved from c to a and b
        await asyncio.sleep(0.5)  # a few heartbeats: everyone has learnt its final assignment
        expected = {a: {0, 3}, b: {1, 4}, c: {2, 5}, standby: set()}
        assert {consumer: set(consumer.assignment) for consumer in expected} == expected
        await asyncio.to_thread(produce_everywhere, clock_broker.bootstrap, topic, 6, 4)
        received = {consumer: await receive_all(consumer) for consumer in expected}
        for consumer, partitions in expected.items():
            assert {m.partition for m in received[consumer]} == partitions
        assert sum(len(got) for got in received.values()) == 24
        for consumer in (b, c):
            for message in received[consumer]:
                await consumer.acknowledge(message)
        acked_by_a = [m for m in received[a] if m.offset % 2 == 0]
        for message in acked_by_a:
            await a.acknowledge(message)
        unacked = {(m.partition, m.offset) for m in received[a]} - {(m.partition, m.offset) for m in acked_by_a}
        await a.close()
        await client.advance_clock(1000)
        await asyncio.sleep(0.5)
        # [b, c] remain at the top priority: partition i goes to [b, c][i % 2]
        assert (set(b.assignment), set(c.assignment), set(standby.assignment)) == ({0, 2, 4}, {1, 3, 5}, set())
        after = {consumer: await receive_all(consumer) for consumer in (b, c, standby)}
        redelivered = {(m.partition, m.offset) for got in after.values() for m in got}
        assert redelivered == unacked, "exactly the records a had not acknowledged come back"
        assert {m.partition for m in after[b]} <= {0} and {m.partition for m in after[c]} <= {3}
        assert after[standby] == []
        for consumer in (b, c):
            for message in after[consumer]:
                await consumer.acknowledge_cumulative(message)
        assert all(p["backlog"] == 0 for p in await client.inspect("fo", topic))
        await client.close()

    run(scenario)
    check_consistent(clock_broker)


def test_failover_switch_waits_for_the_delay_and_a_quick_reconnect_does_not_flap(clock_broker: BrokerProcess) -> None:
    """Pulsar's activeConsumerFailoverDelayTimeMillis (1 s by default) on the broker clock."""
    topic = new_topic(clock_broker, 4)

    async def scenario() -> None:
        client = await Client.connect(clock_broker.bootstrap)

        async def join(name: str) -> Consumer:
            return await client.subscribe(topic, "delayed", mode="failover", consumer_name=name,
                                          initial_position="earliest", heartbeat_interval_ms=100)

        a = await join("a")
        first = await receive_all(a)  # the first consumer starts at once: nobody was active before
        assert [m.offset for m in first] == [0, 1, 2, 3]
        b = await join("b")  # a stays active, so nothing waits
        for message in first[:2]:
            await a.acknowledge(message)
        await a.close()  # 2 and 3 are released; b is active from now on, after the delay
        assert await receive_all(b, 1.0) == []
        await client.advance_clock(999)
        assert await receive_all(b, 1.0) == []
        await client.advance_clock(1)
        again = await receive_all(b)
        assert [(m.offset, m.redelivery_count) for m in again] == [(2, 0), (3, 0)]
        for message in again:
            await b.acknowledge(message)
        c = await join("c")  # standby
        await asyncio.to_thread(produce_everywhere, clock_broker.bootstrap, topic, 1, 2)
        held = await receive_all(b)
        assert [m.offset for m in held] == [4, 5]
        await b.close()  # c would take over after the delay ...
        b_again = await join("b")  # ... but b is back first: no flap
        await client.advance_clock(1000)
        assert await receive_all(c, 1.0) == [], "the standby never received anything"
        back = await receive_all(b_again)
        assert [m.offset for m in back] == [4, 5]
        for message in back:
            await b_again.acknowledge(message)
        assert all(p["backlog"] == 0 for p in await client.inspect("delayed", topic))
        await client.close()

    run(scenario)
    check_consistent(clock_broker)


def produce_everywhere(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for partition in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, value=f"p{partition}-{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


def test_key_shared_keeps_per_key_order_across_joins_and_leaves(clock_broker: BrokerProcess) -> None:
    topic = new_topic(clock_broker, 0)
    keys = [f"key-{k}" for k in range(12)]
    values = [(keys[i % len(keys)], i) for i in range(120)]

    async def scenario() -> None:
        await asyncio.to_thread(produce_keyed, clock_broker.bootstrap, topic, values)
        client = await Client.connect(clock_broker.bootstrap)

        async def join(name: str) -> Consumer:
            return await client.subscribe(topic, "ks", mode="key_shared", consumer_name=name,
                                          initial_position="earliest", receiver_queue_size=5)

        holders: dict[str, dict[Consumer, set[int]]] = {key: {} for key in keys}
        acked: dict[str, list[int]] = {key: [] for key in keys}
        first_seen: dict[str, list[int]] = {key: [] for key in keys}
        held_back: dict[tuple[Consumer, str], list[Message]] = {}

        async def step(consumer: Consumer, hold_back: bool) -> bool:
            """Receive one record; check that no other consumer holds its key; ack it (or keep it)."""
            try:
                message = await consumer.receive(timeout=0.3)
            except Timeout:
                return False
            key = message.key.decode() if message.key else ""
            others = {c for c, held in holders[key].items() if held and c is not consumer}
            assert not others, f"{key} delivered to two consumers at once"
            if message.offset not in first_seen[key]:
                first_seen[key].append(message.offset)
            if hold_back:
                holders[key].setdefault(consumer, set()).add(message.offset)
                held_back.setdefault((consumer, key), []).append(message)
                return True
            for held in held_back.pop((consumer, key), []):  # lower offsets of the same key, first
                await consumer.acknowledge(held)
                acked[key].append(held.offset)
            holders[key].pop(consumer, None)
            await consumer.acknowledge(message)
            acked[key].append(message.offset)
            return True

        async def leave(consumer: Consumer) -> None:
            await consumer.close()
            for held in holders.values():
                held.pop(consumer, None)
            for key in keys:
                held_back.pop((consumer, key), None)

        a, b = await join("a"), await join("b")
        for round_ in range(20):
            await step(a, hold_back=round_ % 3 == 0)
            await step(b, hold_back=round_ % 4 == 0)
        c = await join("c")
        for round_ in range(20):
            for consumer in (a, b, c):
                await step(consumer, hold_back=round_ % 5 == 0)
        await leave(a)
        d = await join("d")
        for round_ in range(15):
            for consumer in (b, c, d):
                await step(consumer, hold_back=round_ % 4 == 1)
        await leave(b)
        idle = 0
        while idle < 6:
            progressed = False
            for consumer in (c, d):
                progressed |= await step(consumer, hold_back=False)
            idle = 0 if progressed else idle + 1
        for (consumer, key), held_messages in sorted(held_back.items(), key=lambda item: item[0][1]):
            for held in held_messages:  # the last records of a key: nothing came after them to ack them with
                await consumer.acknowledge(held)
                acked[key].append(held.offset)
        for key in keys:
            mine = [offset for k, offset in values if k == key]
            assert acked[key] == mine, f"{key}: acknowledged {acked[key]}, expected {mine} in order"
            assert first_seen[key] == mine, f"{key}: first deliveries out of offset order: {first_seen[key]}"
        assert all(p["backlog"] == 0 for p in await client.inspect("ks", topic))
        await client.close()

    run(scenario)
    check_consistent(clock_broker)


def produce_keyed(bootstrap: str, topic: str, values: list[tuple[str, int]]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for key, i in values:
        producer.produce(topic, key=key.encode(), value=str(i).encode(), partition=0)
    assert producer.flush(30) == 0


def test_extension_keys_answer_bad_input_with_kafka_errors(clock_broker: BrokerProcess) -> None:
    topic = new_topic(clock_broker, 1)

    async def scenario() -> None:
        client = await Client.connect(clock_broker.bootstrap)
        connection = client._connection
        versions = await connection.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
        advertised = {int(entry.api_key): (entry.min_version, entry.max_version) for entry in versions.api_keys}
        assert all(advertised.get(key) == (0, 0) for key in range(32002, 32007)), advertised
        bad = [
            (32003, b"\xc1", 42, "not msgpack"),
            (32004, b"\x93\x01\x02\x03", 42, "must be a msgpack map"),
        ]
        for key, body, code, text in bad:
            answer = msgpack.unpackb(await connection.raw(key, body))
            assert answer["error_code"] == code and text in answer["error_message"]
        cases = [
            (32002, {"group_id": "g", "member_id": "m", "hash_ranges": [[5, 70000]]}, 42, "within 0..65535"),
            (32003, {"group_id": "g", "member_id": "m", "topic": topic, "partition": 0, "ranges": [[0, 0]],
                     "delay_ms": 10}, 25, "not in share group"),
            (32003, {"group_id": "g", "member_id": "m", "topic": topic, "partition": 9, "ranges": [[0, 0]],
                     "delay_ms": 10}, 3, "no partition 9"),
            (32004, {"group_id": "g", "member_id": "m", "acks": []}, 42, "'acks'"),
            (32005, {"group_id": "g", "member_id": "m", "topic": "nope", "partition": 0, "offset": 1}, 3, "nope"),
            (32006, {"group_id": "g"}, 42, "'topic'"),
            (32004, {"group_id": "g", "member_id": "m", "acks": [{"topic": topic, "partition": 0,
                                                                   "ranges": [[3, 1]]}]}, 25, "not in share group"),
        ]
        for key, body, code, text in cases:
            with pytest.raises(BrokerError) as refused:
                await connection.extension(key, body, "bad input")
            assert refused.value.code == code and text in str(refused.value), (key, body, str(refused.value))
        consumer = await client.subscribe(topic, "g2", initial_position="earliest")
        [message] = await receive_all(consumer)
        answer = await connection.extension(32004, {"group_id": "g2", "member_id": consumer.member_id, "acks": [
            {"topic": topic, "partition": 0, "ranges": [[0, 0]]},
            {"topic": topic, "partition": 0, "ranges": [[0, 0]]},
            {"topic": topic, "partition": 4, "ranges": [[0, 0]]}]}, "batch")
        assert [r["error_code"] for r in answer["results"]] == [0, 121, 3]
        assert message.offset == 0
        await client.close()

    run(scenario)


def test_subscription_options_conflict_clearly_and_consumer_options_stay_per_consumer(
        clock_broker: BrokerProcess) -> None:
    """The mode is the subscription's, the initial position applies where it starts, the ack timeout is a consumer's."""
    topic = new_topic(clock_broker, 4)

    async def scenario() -> None:
        client = await Client.connect(clock_broker.bootstrap)
        quick = await client.subscribe(topic, "opts", initial_position="earliest", ack_timeout_ms=15_000,
                                       receiver_queue_size=1)
        with pytest.raises(InvalidConfiguration, match="is 'shared' and it has 1 members: it cannot become 'failover'"):
            await client.subscribe(topic, "opts", mode="failover")
        with pytest.raises(InvalidConfiguration, match="share.record.lock.duration.ms"):
            await client.subscribe(topic, "opts", ack_timeout_ms=1_000)
        # "latest" is ignored: the subscription exists and starts at the earliest offset.
        slow = await client.subscribe(topic, "opts", initial_position="latest", ack_timeout_ms=40_000,
                                      receiver_queue_size=1)
        now = await client.advance_clock(0)
        first, second = await quick.receive(timeout=30), await slow.receive(timeout=30)
        assert (first.offset, second.offset) == (0, 1)
        [cursor] = await client.inspect("opts", topic)
        deadlines = {d["consumer"]: d["lock_deadline_ms"] - now for d in cursor["in_flight"]}
        assert deadlines == {quick.member_id: 15_000, slow.member_id: 40_000}
        await client.advance_clock(15_000)  # only the quick consumer's lock runs out
        [cursor] = await client.inspect("opts", topic)
        assert [(d["first"], d["consumer"]) for d in cursor["in_flight"]] == [(1, slow.member_id)]
        await client.close()

    run(scenario)
    check_consistent(clock_broker)


def test_acknowledgements_are_grouped_into_few_requests_and_events(clock_broker: BrokerProcess) -> None:
    topic = new_topic(clock_broker, 25)

    async def scenario() -> None:
        client = await Client.connect(clock_broker.bootstrap)
        consumer = await client.subscribe(topic, "grouped", initial_position="earliest", ack_group_size=10,
                                          ack_group_time_ms=600_000)
        messages = await receive_all(consumer)
        assert len(messages) == 25
        receipts = [consumer.acknowledge(message) for message in messages]  # not awaited: grouped
        assert sum(receipt.done() for receipt in receipts) <= 20, "the last five wait for the group"
        await consumer.flush_acknowledgements()
        assert all(receipt.done() for receipt in receipts)
        [cursor] = await client.inspect("grouped", topic)
        assert cursor["mark_delete_position"] == 24 and cursor["backlog"] == 0

        timed = await client.subscribe(topic, "timed", initial_position="earliest", ack_group_time_ms=50)
        [first, *_] = await receive_all(timed)
        await asyncio.wait_for(timed.acknowledge(first).settled(), 30)  # sent by the group's timer
        await client.close()

    run(scenario)
    check_consistent(clock_broker)
    acked = [event for event in logged_events(clock_broker) if event["type"] == "RecordsAcked"
             and event["subscription"] == "grouped"]
    assert [event["ranges"] for event in acked] == [[[0, 9]], [[10, 19]], [[20, 24]]]


def test_one_refused_acknowledgement_does_not_fail_the_rest_of_its_group(clock_broker: BrokerProcess) -> None:
    topic = new_topic(clock_broker, 4)

    async def scenario() -> None:
        client = await Client.connect(clock_broker.bootstrap)
        mine = await client.subscribe(topic, "isolated", initial_position="earliest", receiver_queue_size=2,
                                      ack_group_time_ms=600_000)
        other = await client.subscribe(topic, "isolated", receiver_queue_size=2)
        held = [await mine.receive(timeout=30), await mine.receive(timeout=30)]
        theirs = await other.receive(timeout=30)
        assert [m.offset for m in held] == [0, 1] and theirs.offset == 2
        forged = dataclasses.replace(theirs)  # a record the other consumer holds
        receipts = [mine.acknowledge(message) for message in (*held, forged)]
        await mine.flush_acknowledgements()
        await receipts[0]
        await receipts[1]
        with pytest.raises(BrokerError) as refused:
            await receipts[2]
        assert refused.value.code == 121
        [cursor] = await client.inspect("isolated", topic)
        assert cursor["mark_delete_position"] == 1
        await client.close()

    run(scenario)
    check_consistent(clock_broker)


def logged_events(broker: BrokerProcess) -> list[dict[str, Any]]:
    output = subprocess.run([sys.executable, "-m", "logwright", "events", "--data-dir", str(broker.data_dir),
                             "--json"], capture_output=True, text=True, check=True, timeout=120).stdout
    return [json.loads(line) for line in output.splitlines()]
