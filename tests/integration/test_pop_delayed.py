"""Pop and delayed delivery (``logwright.deliver.after.ms``): a pop never hands out a record before its time on
the broker clock, passes over it to the records behind, keeps it parked across a broker kill, and a long poll
wakes when it falls due."""

from __future__ import annotations

import asyncio

from logwright.client import Client

from .broker_process import BrokerProcess
from .test_delayed_delivery import _produce
from .test_pop import INVISIBLE_MS, pop_topic, run
from .test_share_groups import check_consistent


def test_a_delayed_record_is_popped_at_its_time_after_a_kill_and_wakes_a_long_poll(clock_broker: BrokerProcess) -> None:
    topic = pop_topic(clock_broker.bootstrap, "g", 1, 0)
    _produce(clock_broker.bootstrap, topic, [("now-0", []), ("later", [("logwright.deliver.after.ms", b"3000")]),
                                             ("now-2", [])])

    async def scenario(client: Client) -> None:
        first = await client.pop(topic, "g", 32, INVISIBLE_MS)
        assert [(m.offset, m.value) for m in first] == [(0, b"now-0"), (2, b"now-2")], "behind a delayed record"
        for message in first:
            await client.ack(message)
        assert await client.pop(topic, "g", 32, INVISIBLE_MS) == []
        [partition] = (await client.inspect_pop(topic, "g"))["partitions"]
        assert (partition["delayed"], partition["in_flight"], partition["consumed_offset"]) == (1, 0, 1)

    async def after_restart(client: Client) -> None:
        assert await client.pop(topic, "g", 32, INVISIBLE_MS) == [], "the delay was lost in the restart"
        other = await Client.connect(clock_broker.bootstrap)  # a connection answers its requests in order
        try:
            waiting = asyncio.ensure_future(other.pop(topic, "g", 32, INVISIBLE_MS, long_poll_ms=15_000))
            await asyncio.sleep(0.3)
            await client.advance_clock(2_999)
            await asyncio.sleep(0.3)
            assert not waiting.done(), "handed out before its delivery time"
            await client.advance_clock(1)
            [later] = await asyncio.wait_for(waiting, 5)  # the revive timer wakes the long poll at the due time
        finally:
            await other.close()
        assert (later.offset, later.value, later.reconsume_times) == (1, b"later", 0)
        await client.ack(later)
        await client.advance_clock(10 * INVISIBLE_MS)
        assert await client.pop(topic, "g", 32, INVISIBLE_MS) == []
        [partition] = (await client.inspect_pop(topic, "g"))["partitions"]
        assert (partition["delayed"], partition["in_flight"], partition["consumed_offset"]) == (0, 0, 3)

    run(scenario, clock_broker.bootstrap)
    clock_broker.kill()
    clock_broker.start()
    run(after_restart, clock_broker.bootstrap)
    check_consistent(clock_broker)
