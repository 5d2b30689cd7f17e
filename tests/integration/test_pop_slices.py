"""A compact pop sends each stored batch cut to the records it hands out (a slice), so consumers popping one
batch in turn each receive and decode only their share, not the batch from its start; revived records come in
slices too, and the bundled client reads every field of a slice as of the stored record."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import Producer
from logwright.client import Client
from logwright.client.popped import PoppedMessages
from logwright.compat.wire.record_batch import decode_records, parse_header, verify_crc

from .broker_process import BrokerProcess
from .test_pop import INVISIBLE_MS, pop_topic
from .test_pop_compact import raw
from .test_share_groups import advance_clock, check_consistent

pytestmark = pytest.mark.logwright_only(reason="logwright's pop extension keys on a manual-clock broker")
RECORDS = 3_000


def produce_one_batch(bootstrap: str, topic: str) -> None:
    """``RECORDS`` records in one stored batch: keys on some, a header on every fifth."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 500, "batch.num.messages": 10_000})
    for offset in range(RECORDS):
        producer.produce(topic, value=b"v%d" % offset, key=b"k%d" % offset if offset % 2 else None, partition=0,
                         headers=[("n", b"%d" % offset)] if offset % 5 == 0 else None)
    assert producer.flush(30) == 0


def test_consumers_popping_one_batch_in_turn_each_get_a_slice_of_their_records(clock_broker: BrokerProcess) -> None:
    topic = pop_topic(clock_broker.bootstrap, "g", 1, 0)
    produce_one_batch(clock_broker.bootstrap, topic)

    async def scenario() -> None:
        first, second = await Client.connect(clock_broker.bootstrap, "a"), await Client.connect(
            clock_broker.bootstrap, "b")
        try:
            taken = await first.pop(topic, "g", 1_024, INVISIBLE_MS)
            assert [m.offset for m in taken] == list(range(1_024))
            assert await first.ack_all(taken) == [None] * 1_024
            answer = await raw(second, 32009, {"group_id": "g", "topic": topic, "max_messages": 1_000,
                                               "invisible_time_ms": INVISIBLE_MS})  # never acknowledged
            [part] = answer["partitions"]
            assert part["ranges"] == [[1_024, 2_023]]
            [cut] = part["batches"]
            header = parse_header(cut)
            assert verify_crc(cut) and (header.base_offset, header.record_count, header.last_offset) == (0, 1_000,
                                                                                                         2_023)
            assert [r.value for r in decode_records(cut)] == [b"v%d" % o for o in range(1_024, 2_024)]

            popped = await second.pop(topic, "g", 1_024, INVISIBLE_MS)
            [checkpoint] = popped.checkpoints
            [batch] = checkpoint.batches
            assert (batch.base_offset, batch.first_offset, batch.last_offset, batch.dense) == (0, 2_024, RECORDS - 1,
                                                                                                True)
            check_fields(popped, range(2_024, RECORDS))
            assert len(batch.values) == RECORDS - 2_024  # its records only: none before them decoded
            assert await second.ack_all(popped) == [None] * len(popped)

            advance_clock(clock_broker.bootstrap, INVISIBLE_MS + 1)  # the raw pop's records come back
            revived = await first.pop(topic, "g", 1_024, INVISIBLE_MS)
            check_fields(revived, range(1_024, 2_024))
            assert {m.reconsume_times for m in revived} == {1}
            assert [batch.first_offset for batch in revived.checkpoints[0].batches] == [1_024]
            assert await first.ack_all(revived) == [None] * 1_000
            assert not await second.pop(topic, "g", 1_024, INVISIBLE_MS)
        finally:
            await first.close()
            await second.close()

    asyncio.run(asyncio.wait_for(scenario(), 120))
    check_consistent(clock_broker)


def check_fields(popped: PoppedMessages, offsets: range) -> None:
    """Every field of the popped records is that of the stored record at its offset."""
    messages = list(popped)
    assert [m.offset for m in messages] == list(offsets)
    for message in messages:
        offset = message.offset
        assert message.value == b"v%d" % offset
        assert message.key == (b"k%d" % offset if offset % 2 else None)
        assert message.headers == ((("n", b"%d" % offset),) if offset % 5 == 0 else ())
        assert message.timestamp > 0
