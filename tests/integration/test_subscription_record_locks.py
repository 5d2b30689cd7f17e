"""The record lock limit holds for logwright's own Shared subscriptions (the bundled client) too.

As in Kafka, the stored batch the limit falls in is completed; here the limit falls between batches."""

from __future__ import annotations

import uuid

from logwright.client import Client

from .broker_process import BrokerProcess
from .group_configs import set_group_configs
from .raw_batches import fill_topic
from .test_client import receive_all, run
from .test_share_groups import check_consistent


def test_a_subscription_holds_at_most_its_record_lock_limit(clock_broker: BrokerProcess) -> None:
    topic = f"locks-{uuid.uuid4().hex[:8]}"
    fill_topic(clock_broker.bootstrap, topic, 50, 5, record_bytes=10)  # the limit falls between stored batches
    set_group_configs(clock_broker.bootstrap, "locks", {"share.partition.max.record.locks": "100"})

    async def scenario() -> None:
        client = await Client.connect(clock_broker.bootstrap)
        one = await client.subscribe(topic, "locks", initial_position="earliest", receiver_queue_size=500)
        two = await client.subscribe(topic, "locks", initial_position="earliest", receiver_queue_size=500)
        held = [(one, m) for m in await receive_all(one)] + [(two, m) for m in await receive_all(two)]
        assert sorted(m.offset for _, m in held) == list(range(100))
        [cursor] = await client.inspect("locks", topic)
        assert sum(d["last"] - d["first"] + 1 for d in cursor["in_flight"]) == 100
        for consumer, message in sorted(held, key=lambda pair: pair[1].offset)[:20]:
            await consumer.acknowledge(message)  # the window's start moves by 20
        more = [*await receive_all(one), *await receive_all(two)]
        assert sorted(m.offset for m in more) == list(range(100, 120))
        await client.close()

    run(scenario)
    check_consistent(clock_broker)
