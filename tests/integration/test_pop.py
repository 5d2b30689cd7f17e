"""Pop consumption (RocketMQ 5) with the bundled client on a manual-clock broker process.

Invisible times, revivals and retry delays run on the broker clock, which only the test moves; every
scenario checks what RocketMQ users hit: duplicates while invisible, stale handles acknowledged as success,
max reconsume times ignored on timeouts, a crash losing or reviving early what was in flight.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import msgpack
import pytest
from confluent_kafka import AcknowledgeType, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from logwright.client import BrokerError, Client
from logwright.client.pop import (
    ForeignReceiptHandle,
    InvalidReceiptHandle,
    PoppedMessage,
    StaleReceiptHandle,
    UnknownReceiptHandle,
    pin_version,
)
from logwright.compat.errors import ErrorCode

from .broker_process import BrokerProcess
from .group_configs import set_group_configs
from .test_dead_letter import headers_of, read_all, release_until_archived
from .test_share_groups import advance_clock, check_consistent, commit, poll_batch, setup_topic
from .test_share_groups import consumer as share_consumer

INVISIBLE_MS = 10_000
POP_VERSION = [1]
"""The pop wire version the client of `run` uses: every test here runs with 0 (a map and a handle per record)
and 1 (stored batches and a checkpoint per partition, acks as offset ranges)."""


@pytest.fixture(autouse=True, params=[0, 1], ids=["pop-v0", "pop-v1"])
def pop_version(request: pytest.FixtureRequest) -> Iterator[int]:
    POP_VERSION[0] = request.param
    yield request.param
    POP_VERSION[0] = 1


def pop_topic(bootstrap: str, group: str, partitions: int, records: int, **configs: str) -> str:
    """A fresh topic with ``records`` records spread round-robin over its partitions, and a pop group that starts
    at the earliest offset."""
    topic = f"pop-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions)])[topic].result(30)
    set_group_configs(bootstrap, group, {"logwright.pop.init.mode": "earliest", **configs})
    produce(bootstrap, topic, partitions, [f"r{i}" for i in range(records)])
    return topic


def produce(bootstrap: str, topic: str, partitions: int, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for number, value in enumerate(values):
        producer.produce(topic, value=value.encode(), partition=number % partitions)
    assert producer.flush(30) == 0


def run(scenario: Callable[[Client], Awaitable[None]], bootstrap: str) -> None:
    async def main() -> None:
        client = await Client.connect(bootstrap)
        pin_version(client._connection, POP_VERSION[0])
        try:
            await scenario(client)
        finally:
            await client.close()

    asyncio.run(asyncio.wait_for(main(), 180))


async def pop_all(client: Client, topic: str, group: str, invisible_ms: int = INVISIBLE_MS) -> list[PoppedMessage]:
    """Pop until a pop comes back empty."""
    taken: list[PoppedMessage] = []
    while batch := await client.pop(topic, group, 32, invisible_ms):
        taken.extend(batch)
    return taken


def test_two_consumers_never_get_the_same_message_while_it_is_invisible(clock_broker: BrokerProcess) -> None:
    topic = pop_topic(clock_broker.bootstrap, "g", 4, 200)

    async def scenario(first: Client) -> None:
        second = await Client.connect(clock_broker.bootstrap)
        seen: list[tuple[int, int]] = []
        partitions_of_first_batches: list[int] = []
        while True:
            a, b = await asyncio.gather(first.pop(topic, "g", 7, INVISIBLE_MS), second.pop(topic, "g", 7, INVISIBLE_MS))
            if not a and not b:
                break
            partitions_of_first_batches.extend(m.partition for m in a[:1] + b[:1])
            seen.extend((m.partition, m.offset) for m in a + b)
        assert len(seen) == 200 and len(set(seen)) == 200
        assert set(partitions_of_first_batches) == {0, 1, 2, 3}  # the start partition rotates
        assert await pop_all(first, topic, "g") == []
        await second.close()

    run(scenario, clock_broker.bootstrap)


def test_a_pop_without_an_invisible_time_hides_its_messages_for_rocketmqs_60_seconds(
        clock_broker: BrokerProcess) -> None:
    """The seeds' F37: a pop of 10 returns at most 10, and no other pop sees them within 60 s (the proxy's
    defaultInvisibleTime, the client's default too); at 60 s they come back."""
    topic = pop_topic(clock_broker.bootstrap, "g", 1, 20)

    async def scenario(client: Client) -> None:
        first = await client.pop(topic, "g", 10)
        assert len(first) == 10
        rest = await client.pop(topic, "g", 32)
        assert {m.offset for m in rest} == set(range(20)) - {m.offset for m in first}
        assert await client.pop(topic, "g", 32) == []
        await client.advance_clock(59_999)
        assert await client.pop(topic, "g", 32) == []
        await client.advance_clock(1)
        back = await client.pop(topic, "g", 32)
        assert sorted(m.offset for m in back) == sorted(m.offset for m in [*first, *rest])

    run(scenario, clock_broker.bootstrap)


def test_a_dead_consumers_messages_come_back_after_the_invisible_time(clock_broker: BrokerProcess) -> None:
    topic = pop_topic(clock_broker.bootstrap, "g", 2, 6)

    async def scenario(client: Client) -> None:
        taken = await client.pop(topic, "g", 4, INVISIBLE_MS)  # this consumer "dies": never acks
        assert len(taken) == 4
        rest = await client.pop(topic, "g", 32, INVISIBLE_MS)
        assert len(rest) == 2
        for message in rest:
            await client.ack(message)
        await client.advance_clock(INVISIBLE_MS - 1)
        assert await client.pop(topic, "g", 32, INVISIBLE_MS) == []
        await client.advance_clock(1)
        back = await client.pop(topic, "g", 32, INVISIBLE_MS)
        assert sorted((m.partition, m.offset) for m in back) == sorted((m.partition, m.offset) for m in taken)
        assert {m.reconsume_times for m in back} == {1} and {m.value for m in back} == {m.value for m in taken}
        for message in back:
            await client.ack(message)
        await client.advance_clock(10 * INVISIBLE_MS)
        assert await client.pop(topic, "g", 32, INVISIBLE_MS) == []
        for partition in (await client.inspect_pop(topic, "g"))["partitions"]:
            assert partition["in_flight"] == partition["revived"] == 0 and partition["consumed_offset"] == 3

    run(scenario, clock_broker.bootstrap)
    check_consistent(clock_broker)


def test_an_ack_with_the_handle_a_change_superseded_is_stale_and_loses_nothing(clock_broker: BrokerProcess) -> None:
    topic = pop_topic(clock_broker.bootstrap, "g", 1, 1)

    async def scenario(client: Client) -> None:
        [message] = await client.pop(topic, "g", 1, INVISIBLE_MS)
        changed = await client.change_invisible_time(message, 30_000)
        assert isinstance(changed, PoppedMessage) and changed.handle != message.handle
        with pytest.raises(StaleReceiptHandle) as stale:
            await client.ack(message)
        assert stale.value.code == ErrorCode.INVALID_RECORD_STATE and "stale receipt handle" in str(stale.value)
        with pytest.raises(StaleReceiptHandle):
            await client.change_invisible_time(message, 30_000)
        [partition] = (await client.inspect_pop(topic, "g"))["partitions"]
        assert partition["in_flight"] == 1  # not lost
        await client.advance_clock(INVISIBLE_MS)  # the first deadline passes: the change holds it
        assert await client.pop(topic, "g", 1, INVISIBLE_MS) == []
        await client.advance_clock(20_000)
        [again] = await client.pop(topic, "g", 1, INVISIBLE_MS)  # the changed deadline passed: revived
        assert (again.offset, again.reconsume_times) == (0, 1)
        with pytest.raises(StaleReceiptHandle, match="popped again|under handle epoch"):
            await client.ack(changed)
        await client.ack(again)
        with pytest.raises(UnknownReceiptHandle, match="acknowledged"):
            await client.ack(again)

    run(scenario, clock_broker.bootstrap)


def test_a_batch_ack_settles_the_current_handles_and_names_each_refusal(clock_broker: BrokerProcess) -> None:
    topic = pop_topic(clock_broker.bootstrap, "g", 2, 6)

    async def scenario(client: Client) -> None:
        popped = await client.pop(topic, "g", 32, INVISIBLE_MS)
        assert len(popped) == 6
        changed = await client.change_invisible_time(popped[0], 30_000)
        assert isinstance(changed, PoppedMessage)
        results = await client.ack_all(popped)
        assert isinstance(results[0], StaleReceiptHandle) and results[1:] == [None] * 5
        [partition] = [p for p in (await client.inspect_pop(topic, "g"))["partitions"] if p["in_flight"]]
        assert [e["offset"] for e in partition["entries"]] == [popped[0].offset]
        assert await client.ack_all([changed]) == [None]
        assert isinstance((await client.ack_all([changed]))[0], UnknownReceiptHandle)

    run(scenario, clock_broker.bootstrap)


def test_a_deleted_and_recreated_topic_never_revives_the_old_records(clock_broker: BrokerProcess) -> None:
    """RocketMQ #8479: a recreated topic of the same name revived forever or the wrong messages."""
    topic = pop_topic(clock_broker.bootstrap, "g", 1, 3)
    admin = AdminClient({"bootstrap.servers": clock_broker.bootstrap})

    async def scenario(client: Client) -> None:
        old = await client.pop(topic, "g", 32, INVISIBLE_MS)
        assert len(old) == 3
        admin.delete_topics([topic])[topic].result(30)
        await client.advance_clock(1)  # the coordinator drops the deleted partition's table
        admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
        produce(clock_broker.bootstrap, topic, 1, ["new0"])
        with pytest.raises(UnknownReceiptHandle, match="does not exist"):
            await client.ack(old[0])
        await client.advance_clock(INVISIBLE_MS)
        [fresh] = await client.pop(topic, "g", 32, INVISIBLE_MS)
        assert (fresh.offset, fresh.value, fresh.reconsume_times) == (0, b"new0", 0)
        [partition] = (await client.inspect_pop(topic, "g"))["partitions"]
        assert [e["offset"] for e in partition["entries"]] == [0] and partition["next_offset"] == 1
        await client.ack(fresh)

    run(scenario, clock_broker.bootstrap)
    check_consistent(clock_broker)
    types = [event["type"] for event in logged_events(clock_broker) if event["type"].startswith(("Pop", "Revived"))]
    # the old table's entries go with it (its page rows), the new one's page goes once its one record is acked
    assert types == ["PopCursorCreated", "PopEntriesDropped", "PopCursorDeleted", "PopCursorCreated",
                     "PopEntriesDropped"]


def logged_events(broker: BrokerProcess) -> list[dict[str, object]]:
    """Every event of a stopped broker's log, as ``logwright events --json`` prints them."""
    command = [sys.executable, "-m", "logwright", "events", "--data-dir", str(broker.data_dir), "--json"]
    listed = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    return [json.loads(line) for line in listed.stdout.splitlines() if line.strip()]


def test_a_pop_carries_the_acks_of_the_previous_batch(clock_broker: BrokerProcess) -> None:
    topic = pop_topic(clock_broker.bootstrap, "g", 1, 4)

    async def scenario(client: Client) -> None:
        first, none = await client.pop_with_acks(topic, "g", (), 2, INVISIBLE_MS)
        assert [m.offset for m in first] == [0, 1] and none == []
        changed = await client.change_invisible_time(first[1], 30_000)
        second, refusals = await client.pop_with_acks(topic, "g", first, 2, INVISIBLE_MS)
        assert [m.offset for m in second] == [2, 3]
        assert refusals[0] is None and isinstance(refusals[1], StaleReceiptHandle)
        assert isinstance(changed, PoppedMessage)
        third, refusals = await client.pop_with_acks(topic, "g", [*second, changed], 2, INVISIBLE_MS)
        assert third == [] and refusals == [None, None, None]
        await client.advance_clock(10 * INVISIBLE_MS)
        assert await client.pop(topic, "g", 32, INVISIBLE_MS) == []
        [partition] = (await client.inspect_pop(topic, "g"))["partitions"]
        assert (partition["consumed_offset"], partition["in_flight"]) == (4, 0)

    run(scenario, clock_broker.bootstrap)


def test_pops_read_committed_records_only(clock_broker: BrokerProcess) -> None:
    """Aborted transactions are never popped, an open one not before it commits (RocketMQ hands out a
    transactional message once committed)."""
    topic = pop_topic(clock_broker.bootstrap, "g", 1, 0)
    producer = Producer({"bootstrap.servers": clock_broker.bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(30)
    for value, outcome in ((b"aborted", producer.abort_transaction), (b"committed", producer.commit_transaction)):
        producer.begin_transaction()
        producer.produce(topic, value=value)
        outcome(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"open")
    assert producer.flush(30) == 0

    async def scenario(client: Client) -> None:
        assert [m.value for m in await client.pop(topic, "g", 32, INVISIBLE_MS)] == [b"committed"]
        assert await client.pop(topic, "g", 32, INVISIBLE_MS) == []
        await asyncio.to_thread(producer.commit_transaction, 30)
        assert [m.value for m in await client.pop(topic, "g", 32, INVISIBLE_MS)] == [b"open"]

    run(scenario, clock_broker.bootstrap)


def test_a_partition_at_its_in_flight_limit_gives_no_new_records(clock_broker: BrokerProcess) -> None:
    """``logwright.pop.max.in.flight.per.partition`` bounds the table a group keeps per partition (it is written
    with every event): new records wait for acks, revived ones still come."""
    topic = pop_topic(clock_broker.bootstrap, "g", 1, 5, **{"logwright.pop.max.in.flight.per.partition": "3"})

    async def scenario(client: Client) -> None:
        held = await client.pop(topic, "g", 32, INVISIBLE_MS)
        assert [m.offset for m in held] == [0, 1, 2]
        assert await client.pop(topic, "g", 32, INVISIBLE_MS) == []
        await client.ack(held[0])
        assert [m.offset for m in await client.pop(topic, "g", 32, INVISIBLE_MS)] == [3]
        await client.advance_clock(INVISIBLE_MS)
        assert sorted(m.offset for m in await client.pop(topic, "g", 32, INVISIBLE_MS)) == [1, 2, 3]

    run(scenario, clock_broker.bootstrap)


def test_a_revived_record_the_log_no_longer_holds_is_settled(clock_broker: BrokerProcess) -> None:
    topic = pop_topic(clock_broker.bootstrap, "g", 1, 3)
    admin = AdminClient({"bootstrap.servers": clock_broker.bootstrap})

    async def scenario(client: Client) -> None:
        assert len(await client.pop(topic, "g", 32, INVISIBLE_MS)) == 3
        [deleted] = admin.delete_records([TopicPartition(topic, 0, 2)]).values()
        deleted.result(30)
        await client.advance_clock(INVISIBLE_MS)
        [back] = await client.pop(topic, "g", 32, INVISIBLE_MS)
        assert (back.offset, back.reconsume_times) == (2, 1)
        [partition] = (await client.inspect_pop(topic, "g"))["partitions"]
        assert ([e["offset"] for e in partition["entries"]], partition["consumed_offset"]) == ([2], 2)

    run(scenario, clock_broker.bootstrap)


def test_the_seventeenth_failure_goes_to_the_dead_letter_topic(clock_broker: BrokerProcess) -> None:
    topic = pop_topic(clock_broker.bootstrap, "g", 1, 1)

    async def scenario(client: Client) -> None:
        attempts: list[int] = []
        for _ in range(17):
            [message] = await client.pop(topic, "g", 1, INVISIBLE_MS)
            attempts.append(message.reconsume_times)
            dead = await client.nack(message, delay_ms=1_000)
            assert dead == (len(attempts) == 17)
            await client.advance_clock(1_000)
        assert attempts == list(range(17))
        assert await client.pop(topic, "g", 1, INVISIBLE_MS) == []
        inspected = await client.inspect_pop(topic, "g")
        assert inspected["retry_topic"] == f"%RETRY%g_{topic}" and inspected["dead_letter_topic"] == "DLQ.g"
        assert inspected["rocketmq_dead_letter_topic"] == "%DLQ%g"
        assert inspected["partitions"][0]["consumed_offset"] == 1
        set_group_configs(clock_broker.bootstrap, "reader", {"logwright.pop.init.mode": "earliest"})
        [copy] = await client.pop("DLQ.g", "reader", 32, INVISIBLE_MS)
        headers = dict(copy.headers)
        assert copy.value == b"r0" and headers["RECONSUME_TIMES"] == b"17"
        assert (headers["REAL_TOPIC"], headers["ORIGIN_MESSAGE_ID"]) == (topic.encode(), f"{topic}-0@0".encode())

    run(scenario, clock_broker.bootstrap)


def test_timeouts_count_toward_max_reconsume_times(clock_broker: BrokerProcess) -> None:
    """RocketMQ #8332: a consumer slower than the invisible time must still reach the dead-letter topic (one the
    group names exists: only the default ``DLQ.<group>`` is created on first use)."""
    dead_letters = f"slow-dlq-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": clock_broker.bootstrap})
    admin.create_topics([NewTopic(dead_letters, 1)])[dead_letters].result(30)
    topic = pop_topic(clock_broker.bootstrap, "g", 1, 1, **{"logwright.pop.max.reconsume.times": "1",
                                                            "logwright.pop.dead.letter.topic": dead_letters})

    async def scenario(client: Client) -> None:
        for attempt in range(2):
            [message] = await client.pop(topic, "g", 1, INVISIBLE_MS)
            assert message.reconsume_times == attempt
            await client.advance_clock(INVISIBLE_MS)
        assert await client.pop(topic, "g", 1, INVISIBLE_MS) == []
        set_group_configs(clock_broker.bootstrap, "reader", {"logwright.pop.init.mode": "earliest"})
        [copy] = await client.pop(dead_letters, "reader", 32, INVISIBLE_MS)
        assert dict(copy.headers)["RECONSUME_TIMES"] == b"2"

    run(scenario, clock_broker.bootstrap)


def test_sigkill_with_a_thousand_in_flight_loses_nothing_and_revives_nothing_early(clock_broker: BrokerProcess) -> None:
    topic = pop_topic(clock_broker.bootstrap, "g", 4, 1_000)
    popped: list[PoppedMessage] = []

    async def pop_them(client: Client) -> None:
        popped.extend(await pop_all(client, topic, "g", 60_000))

    run(pop_them, clock_broker.bootstrap)
    assert len(popped) == 1_000 and len({(m.partition, m.offset) for m in popped}) == 1_000
    clock_broker.kill()
    clock_broker.start()

    async def after_restart(client: Client) -> None:
        assert await client.pop(topic, "g", 32, INVISIBLE_MS) == []
        with pytest.raises(StaleReceiptHandle):  # handles survive the restart; a change supersedes one
            changed = await client.change_invisible_time(popped[0], 120_000)
            await client.ack(popped[0])
        inspected = (await client.inspect_pop(topic, "g"))["partitions"]
        assert sum(p["in_flight"] for p in inspected) == 1_000
        await client.advance_clock(59_999)
        assert await client.pop(topic, "g", 32, INVISIBLE_MS) == []
        await client.advance_clock(1)
        back = await pop_all(client, topic, "g")
        assert sorted((m.partition, m.offset) for m in back) == sorted(
            (m.partition, m.offset) for m in popped[1:])
        assert {m.reconsume_times for m in back} == {1}
        for message in [*back, changed]:
            await client.ack(message)
        inspected = (await client.inspect_pop(topic, "g"))["partitions"]
        assert [p["consumed_offset"] for p in inspected] == [250] * 4

    run(after_restart, clock_broker.bootstrap)
    check_consistent(clock_broker)


def test_orderly_pop_keeps_partition_order_under_nacks(clock_broker: BrokerProcess) -> None:
    topic = pop_topic(clock_broker.bootstrap, "g", 2, 10)

    async def scenario(client: Client) -> None:
        processed: dict[int, list[int]] = {0: [], 1: []}
        first = await client.pop(topic, "g", 32, INVISIBLE_MS, orderly=True)
        assert sorted((m.partition, m.offset) for m in first) == [(p, o) for p in (0, 1) for o in range(5)]
        for message in first:  # partition 0 fails at offset 2: that and everything after it go back
            if message.partition == 0 and message.offset >= 2:
                await client.nack(message, delay_ms=1_000)
            else:
                processed[message.partition].append(message.offset)
                await client.ack(message)
        produce(clock_broker.bootstrap, topic, 2, ["late0", "late1"])
        blocked = await client.pop(topic, "g", 32, INVISIBLE_MS, orderly=True)
        assert [(m.partition, m.offset) for m in blocked] == [(1, 5)]  # partition 0 waits for its retries
        await client.ack(blocked[0])
        processed[1].append(5)
        await client.advance_clock(1_000)
        again = await client.pop(topic, "g", 32, INVISIBLE_MS, orderly=True)
        assert [(m.partition, m.offset, m.reconsume_times) for m in again] == [
            (0, 2, 1), (0, 3, 1), (0, 4, 1), (0, 5, 0)]
        for message in again:
            processed[0].append(message.offset)
            await client.ack(message)
        assert processed == {0: [0, 1, 2, 3, 4, 5], 1: [0, 1, 2, 3, 4, 5]}

    run(scenario, clock_broker.bootstrap)


def test_bad_input_gets_clear_errors(clock_broker: BrokerProcess) -> None:
    topic = pop_topic(clock_broker.bootstrap, "g", 1, 2)

    async def scenario(client: Client) -> None:
        bound = 32 if POP_VERSION[0] == 0 else 1_024
        for kwargs, words in (({"max_messages": bound + 1}, f"1 to {bound}"), ({"invisible_time_ms": 5_000}, "10 s"),
                              ({"invisible_time_ms": 13 * 3_600_000}, "12 h"), ({"long_poll_ms": 30_000}, "20 s")):
            with pytest.raises(BrokerError) as refused:
                await client.pop(topic, "g", **kwargs)
            assert refused.value.code == ErrorCode.INVALID_REQUEST and words in str(refused.value)
        with pytest.raises(BrokerError) as missing:
            await client.pop("no-such-topic", "g")
        assert missing.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        [message] = await client.pop(topic, "g", 1)
        with pytest.raises(ForeignReceiptHandle, match="used by group 'other'"):
            await client.ack(message.handle, group="other")
        for garbage in ("nonsense", "1 1 0 0 zz g", "x" * 600):
            with pytest.raises(InvalidReceiptHandle):
                await client.ack(garbage, group="g")
        forged = message.handle.replace(f" 0 {message.offset} ", " 0 1 ", 1)
        with pytest.raises(UnknownReceiptHandle, match="never popped"):
            await client.ack(forged, group="g")
        with pytest.raises(BrokerError) as out_of_range:
            await client.change_invisible_time(message, 13 * 3_600_000)
        assert out_of_range.value.code == ErrorCode.INVALID_REQUEST
        answer = msgpack.unpackb(await client._connection.raw(32009, b"\xc1not msgpack"), raw=False)
        assert answer["error_code"] == ErrorCode.INVALID_REQUEST and "msgpack" in answer["error_message"]
        await client.ack(message)  # the record was untouched by all of it

    run(scenario, clock_broker.bootstrap)


def test_a_long_poll_wakes_on_the_first_append(clock_broker: BrokerProcess) -> None:
    topic = pop_topic(clock_broker.bootstrap, "g", 2, 0)

    async def scenario(client: Client) -> None:
        started = time.monotonic()
        assert await client.pop(topic, "g", 32, INVISIBLE_MS, long_poll_ms=500) == []
        assert time.monotonic() - started >= 0.45
        waiting = asyncio.ensure_future(client.pop(topic, "g", 32, INVISIBLE_MS, long_poll_ms=15_000))
        await asyncio.sleep(0.3)
        assert not waiting.done()
        started = time.monotonic()
        await asyncio.to_thread(produce, clock_broker.bootstrap, topic, 2, ["first"])
        [message] = await waiting
        assert message.value == b"first" and time.monotonic() - started < 5

    run(scenario, clock_broker.bootstrap)


def test_a_share_group_in_pop_mode_dead_letters_to_its_pop_topic(clock_broker: BrokerProcess) -> None:
    """Unmodified Kafka share consumers (librdkafka) on a group with ``logwright.subscription.mode=pop``: a record
    past the max reconsume times (0 here: the first RELEASE) lands once on ``DLQ.<group>`` with RocketMQ's
    properties."""
    bootstrap, group = clock_broker.bootstrap, f"pop-share-{uuid.uuid4().hex[:6]}"
    topic = setup_topic(bootstrap, group, 1, **{"logwright.subscription.mode": "pop",
                                                 "logwright.pop.max.reconsume.times": "0"})
    assert release_until_archived(bootstrap, group, topic, 1) == [1]
    [copy] = read_all(bootstrap, f"DLQ.{group}", 1)
    headers = headers_of(copy)
    assert copy.value() == b"r0" and headers["RECONSUME_TIMES"] == b"1"
    assert (headers["REAL_TOPIC"], headers["RETRY_TOPIC"], headers["ORIGIN_MESSAGE_ID"]) == (
        topic.encode(), f"%RETRY%{group}_{topic}".encode(), f"{topic}-0@0".encode())


def test_without_the_plugin_pop_is_unsupported_and_the_log_stays_readable(clock_broker: BrokerProcess,
                                                                          tmp_path: Path) -> None:
    """Popped with the plugin, restarted with ``plugins.disabled=pop``: the keys answer UNSUPPORTED_VERSION,
    the pop events already logged stay readable (``logwright check``), and re-enabling finds them in flight."""
    topic = pop_topic(clock_broker.bootstrap, "g", 1, 2)

    async def pop_one(client: Client) -> None:
        assert len(await client.pop(topic, "g", 1, INVISIBLE_MS)) == 1

    run(pop_one, clock_broker.bootstrap)
    clock_broker.stop()
    without = BrokerProcess(clock_broker.data_dir, manual_clock=True, disabled=("pop",)).start()
    try:
        async def refused(client: Client) -> None:
            with pytest.raises(BrokerError) as unsupported:
                await client.pop(topic, "g", 1, INVISIBLE_MS)
            assert unsupported.value.code == ErrorCode.UNSUPPORTED_VERSION and "'pop'" in str(unsupported.value)

        run(refused, without.bootstrap)
        check_consistent(without)
    finally:
        without.kill()
    clock_broker.start()

    async def still_in_flight(client: Client) -> None:
        [partition] = (await client.inspect_pop(topic, "g"))["partitions"]
        assert (partition["in_flight"], partition["next_offset"]) == (1, 1)

    run(still_in_flight, clock_broker.bootstrap)


def test_on_the_system_clock_the_revive_timer_wakes_a_long_poll(broker: BrokerProcess) -> None:
    """No manual clock: an invisible time changed to 0 runs out at once, the timer revives the record, and a
    waiting long poll gets it back (reconsume 1) without any append."""
    topic = pop_topic(broker.bootstrap, "g", 1, 1)

    async def scenario(client: Client) -> None:
        [message] = await client.pop(topic, "g", 1, INVISIBLE_MS)
        waiting = asyncio.ensure_future(client.pop(topic, "g", 1, INVISIBLE_MS, long_poll_ms=15_000))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        started = time.monotonic()
        await client.change_invisible_time(message, 0)
        [again] = await waiting
        assert (again.offset, again.reconsume_times) == (0, 1) and time.monotonic() - started < 5
        await client.ack(again)

    run(scenario, broker.bootstrap)


def test_a_pop_mode_share_group_retries_on_rocketmqs_table_past_kafkas_delivery_limit(
        clock_broker: BrokerProcess) -> None:
    """A librdkafka ShareConsumer RELEASEs one record every time: it comes back after 1 s, 5 s, 10 s (RocketMQ's
    levels, not at once), four deliveries although ``share.delivery.count.limit`` is 2, then goes to DLQ.<group>
    (``logwright.pop.max.reconsume.times`` 3)."""
    bootstrap, group = clock_broker.bootstrap, f"pop-retry-{uuid.uuid4().hex[:6]}"
    topic = setup_topic(bootstrap, group, 1, **{"logwright.subscription.mode": "pop", "share.delivery.count.limit": "2",
                                                 "logwright.pop.max.reconsume.times": "3"})
    share = share_consumer(bootstrap, group, topic)
    counts: list[int] = []
    try:
        for level_ms in (1_000, 5_000, 10_000, 0):
            [message] = poll_batch(share)
            counts.append(message.delivery_count())
            share.acknowledge(message, AcknowledgeType.RELEASE)
            assert commit(share) == {(topic, 0): None}
            if level_ms:
                advance_clock(bootstrap, level_ms - 1)
                assert poll_batch(share, 1.0) == []
                advance_clock(bootstrap, 1)
    finally:
        share.close()
    assert counts == [1, 2, 3, 4]
    [copy] = read_all(bootstrap, f"DLQ.{group}", 1)
    assert headers_of(copy)["RECONSUME_TIMES"] == b"4"
