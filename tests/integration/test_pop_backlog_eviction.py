"""Issue 15 for pop groups: under ``consumer_backlog_eviction`` a pop group over the quota is evicted as other
subscriptions are, on a broker process: the `BacklogEvicted` and the pop events that skip its records (in-flight
entries below the eviction dropped, the pop position moved up when it was below) go into one WriteBatch with the
append; the dropped records' handles are refused, those above keep working."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import Producer
from logwright.client import Client
from logwright.client.pop import UnknownReceiptHandle

from .broker_process import BrokerProcess
from .group_configs import set_group_configs
from .test_backlog_quota import _backlog_of, _producer, _quota_state, _send, _topic
from .test_pop import INVISIBLE_MS, logged_events, run
from .test_share_groups import check_consistent

REASON = "backlog quota logwright.backlog.quota.records=10 exceeded; evicted to 90%"


def test_a_pop_group_over_an_eviction_quota_is_evicted_with_the_append(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = _topic(bootstrap, {"logwright.backlog.quota.records": "10",
                               "logwright.backlog.quota.policy": "consumer_backlog_eviction"})
    set_group_configs(bootstrap, "pg", {"logwright.pop.init.mode": "earliest"})
    producer: Producer = _producer(bootstrap)
    assert _send(producer, topic, 10) == [None] * 10

    async def hold_some(client: Client) -> None:
        popped = list(await client.pop(topic, "pg", 4, INVISIBLE_MS))
        assert [m.offset for m in popped] == [0, 1, 2, 3]
        await client.ack(popped[1])
        held.extend(popped)

    held: list[object] = []
    run(hold_some, bootstrap)
    assert _backlog_of(_quota_state(bootstrap, "pg", topic), "pg")["records"] == 9, "0, 2, 3 held; 4-9 not popped"
    assert _send(producer, topic, 1) == [None], "10 records of backlog: at the quota, nothing evicted"
    assert _send(producer, topic, 1) == [None], "11: evicted to 9, the append admitted"

    async def after_eviction(client: Client) -> None:
        [partition] = (await client.inspect_pop(topic, "pg"))["partitions"]
        assert ([e["offset"] for e in partition["entries"]], partition["consumed_offset"],
                partition["next_offset"]) == ([3], 3, 4), "0 and 2 skipped, 3 still in flight, the position kept"
        for dropped in (held[0], held[2]):
            with pytest.raises(UnknownReceiptHandle, match="eviction"):
                await client.ack(dropped)  # type: ignore[arg-type]
        await client.ack(held[3])  # type: ignore[arg-type]

    run(after_eviction, bootstrap)
    state = _quota_state(bootstrap, "pg", topic)
    entry = _backlog_of(state, "pg")
    assert (entry["kind"], entry["records"]) == ("pop", 8)
    assert (entry["evicted"]["last_from_offset"], entry["evicted"]["last_to_offset"]) == (0, 3)
    assert _send(producer, topic, 3) == [None] * 3, "4-14: 11 records, evicted to 9 past the pop position"

    async def moved(client: Client) -> None:
        first = list(await client.pop(topic, "pg", 32, INVISIBLE_MS))
        assert [m.offset for m in first] == list(range(6, 15))

    run(moved, bootstrap)
    check_consistent(clock_broker)
    events = [(e["type"], e.get("from_offset", e.get("ranges", e.get("offset"))), e.get("reason"))
              for e in logged_events(clock_broker)
              if e["type"] in ("BacklogEvicted", "PopEntriesDropped", "PopPositionMoved")]
    assert events == [("BacklogEvicted", 0, REASON),
                      ("PopEntriesDropped", [[0, 2]], f"backlog eviction: {REASON}"),
                      ("PopEntriesDropped", [[0, 255]], "pages emptied"),  # the ack of 3 emptied page 0
                      ("BacklogEvicted", 4, REASON),
                      ("PopPositionMoved", 6, f"backlog eviction: {REASON}")]


def test_an_age_quota_evicts_a_pop_group_on_the_broker_clock(clock_broker: BrokerProcess) -> None:
    """The backlog plugin's timer (no produce) evicts a pop group too: the derived pop events go with it."""
    bootstrap = clock_broker.bootstrap
    topic = _topic(bootstrap, {"logwright.backlog.quota.age.ms": "10000", "message.timestamp.type": "LogAppendTime",
                               "logwright.backlog.quota.policy": "consumer_backlog_eviction"})
    set_group_configs(bootstrap, "aged", {"logwright.pop.init.mode": "earliest"})
    producer = _producer(bootstrap)
    assert _send(producer, topic, 1) == [None]

    async def scenario(client: Client) -> None:
        [old] = await client.pop(topic, "aged", 1, 60_000)
        await client.advance_clock(8_000)
        await asyncio.to_thread(_send, producer, topic, 1)
        await client.advance_clock(2_001)  # the first record is 10,001 ms old: over, evicted to 90% of the age
        with pytest.raises(UnknownReceiptHandle, match="eviction"):
            await client.ack(old)
        [partition] = (await client.inspect_pop(topic, "aged"))["partitions"]
        assert (partition["consumed_offset"], partition["next_offset"], partition["entries"]) == (1, 1, [])
        [young] = await client.pop(topic, "aged", 32, 60_000)
        assert young.offset == 1

    run(scenario, bootstrap)
