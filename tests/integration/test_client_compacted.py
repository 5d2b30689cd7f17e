"""The bundled client's shared subscription over a compacted topic: the offsets compaction emptied inside a
returned batch are settled with the records around them, so acknowledging every record it received leaves
nothing in flight and the subscription's position at the log end (they used to stay acquired until archived)."""

from __future__ import annotations

import asyncio

import pytest
from logwright.client import Client, Timeout

from .broker_process import BrokerProcess
from .compacted_topics import close_head, create_compacted, produce
from .test_share_groups import advance_clock, check_consistent

pytestmark = pytest.mark.logwright_only(reason="a private broker on a manual clock and the bundled client")


def test_a_shared_subscription_settles_the_gaps_of_a_compacted_topic(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = create_compacted(bootstrap)
    now = advance_clock(bootstrap, 0)
    records = [(b"key-%d" % (index % 3), b"%d" % index) for index in range(60)]
    assert set(produce(bootstrap, topic, records, now, **{"linger.ms": 1000})) == {None}  # one batch, gaps after
    close_head(bootstrap, topic, now + 10_000)
    advance_clock(bootstrap, 0)
    _read_and_acknowledge_everything(bootstrap, topic)
    check_consistent(clock_broker)


def test_a_shared_subscription_settles_whole_batches_compaction_removed(clock_broker: BrokerProcess) -> None:
    """Two batches, the first one's keys all written again in the second: compaction removes the first batch whole,
    and the offsets it held (0-13), acquired with the second batch, have no batch at all. (CI met this when the test
    above's producer sent its 60 records as two batches: offsets 0-13 stayed in flight.)"""
    bootstrap = clock_broker.bootstrap
    topic = create_compacted(bootstrap)
    now = advance_clock(bootstrap, 0)
    records = [(b"key-%d" % (index % 3), b"%d" % index) for index in range(60)]
    for part in (records[:14], records[14:]):
        assert set(produce(bootstrap, topic, part, now, **{"linger.ms": 1000})) == {None}
    close_head(bootstrap, topic, now + 10_000)
    advance_clock(bootstrap, 0)
    _read_and_acknowledge_everything(bootstrap, topic)
    check_consistent(clock_broker)


def _read_and_acknowledge_everything(bootstrap: str, topic: str) -> None:
    """A shared subscription gets the three latest updates and the head, acknowledges them, and leaves nothing in
    flight, its position at the log end."""

    async def scenario() -> None:
        client = await Client.connect(bootstrap)
        consumer = await client.subscribe(topic, "compacted-sub", mode="shared", initial_position="earliest")
        received = []
        while True:
            try:
                received.append(await consumer.receive(timeout=1.5))
            except Timeout:
                break
        assert [(m.offset, m.key) for m in received] == [(57, b"key-0"), (58, b"key-1"), (59, b"key-2"),
                                                          (60, b"head")]
        for message in received:
            await consumer.acknowledge(message)
        [cursor] = await client.inspect("compacted-sub", topic)
        assert cursor["in_flight"] == [] and cursor["backlog"] == 0, cursor
        assert cursor["mark_delete_position"] == 60, cursor
        await client.close()

    asyncio.run(asyncio.wait_for(scenario(), 120))
