"""Pop's dead-letter copies are cut into batches within the target's ``max.message.bytes`` (`copy_batches`).

Before, all copies of one revival went as one batch: past the target's limit they were refused every time
and the records stayed invisible for ever.
"""

from __future__ import annotations

import uuid

from confluent_kafka.admin import AdminClient, NewTopic
from logwright.client import Client

from .broker_process import BrokerProcess
from .group_configs import set_group_configs
from .test_dead_letter import read_all
from .test_pop import INVISIBLE_MS, pop_all, produce, run
from .test_share_groups import check_consistent

COPIES, VALUE_BYTES, TARGET_MAX_BYTES = 20, 300, 2_000


def test_copies_larger_than_the_targets_max_message_bytes_go_in_several_batches(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic, target = f"pop-{uuid.uuid4().hex[:8]}", f"small-dlq-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1), NewTopic(target, 1, config={
        "max.message.bytes": str(TARGET_MAX_BYTES)})])[target].result(30)
    set_group_configs(bootstrap, "g", {"logwright.pop.init.mode": "earliest", "logwright.pop.max.reconsume.times": "0",
                                       "logwright.pop.dead.letter.topic": target})
    values = [f"{number:03d}".ljust(VALUE_BYTES, "x") for number in range(COPIES)]
    produce(bootstrap, topic, 1, values)

    async def scenario(client: Client) -> None:
        popped = await pop_all(client, topic, "g")
        assert len(popped) == COPIES
        await client.advance_clock(INVISIBLE_MS)  # all 20 fail at once: one revival dead-letters them together
        assert await client.pop(topic, "g", 32, INVISIBLE_MS) == []
        inspected = await client.inspect_pop(topic, "g")
        assert inspected["partitions"][0]["consumed_offset"] == COPIES

    run(scenario, bootstrap)
    copies = read_all(bootstrap, target, COPIES)
    assert [copy.value().decode() for copy in copies] == values  # all of them, once each, in order
    assert [copy.offset() for copy in copies] == list(range(COPIES))
    assert COPIES * VALUE_BYTES > 2 * TARGET_MAX_BYTES  # so at least three batches held them
    check_consistent(clock_broker)
