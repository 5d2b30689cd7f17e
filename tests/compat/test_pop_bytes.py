"""Pops are bounded in bytes, not only in records, and so is what the pop coordinator keeps decoded: a zstd batch
of a few KiB may decode to 64 MiB. The hostile-values fuzz (seed 239) left 40 MiB of 4 MiB values among the decoded
batches; a v0 pop of 32 such records would have built its whole answer of them."""

from __future__ import annotations

import datetime
from pathlib import Path

from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from logwright.compat.coordinators.pop_coordinator import PopCoordinator, pop_coordinator
from logwright.compat.coordinators.pop_reads import DECODED_BYTES, POP_MAX_BYTES, decoded_size
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka import produce
from logwright.compat.wire.compression import Compression
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record
from logwright.core.log.catalog import TopicState
from logwright.core.pop.pop_commands import MAX_MESSAGES, MAX_MESSAGES_COMPACT, PopLimits

from tests.compat.test_share_handlers import TOPIC, Harness, run

MiB = 2**20
INVISIBLE_MS = 60_000
ONE_AT_A_TIME = PopLimits(max_messages=1, invisible_time_ms=INVISIBLE_MS)
AS_MANY_AS_V0 = PopLimits(max_messages=MAX_MESSAGES, invisible_time_ms=INVISIBLE_MS)
AS_MANY_AS_COMPACT = PopLimits(max_messages=MAX_MESSAGES_COMPACT, invisible_time_ms=INVISIBLE_MS,
                               bound=MAX_MESSAGES_COMPACT)


async def started(h: Harness) -> tuple[TopicState, PopCoordinator]:
    """TOPIC with one partition, and group ``g`` popping it from its (empty) end."""
    h.broker.create_topic(TOPIC, 1)
    topic = h.broker.topic(TOPIC)
    assert topic is not None
    coordinator = pop_coordinator(h.broker)
    assert await coordinator.pop("g", topic, "c1", ONE_AT_A_TIME) == [], "the group starts at the log end"
    return topic, coordinator


async def append(h: Harness, *records: Record, compression: Compression = Compression.ZSTD) -> None:
    """``records`` as one batch at the end of partition 0 of TOPIC."""
    request = ProduceRequest(acks=-1, timeout=datetime.timedelta(seconds=5), topic_data=(TopicProduceData(
        name=TOPIC, partition_data=(PartitionProduceData(index=0, records=build_batch(
            records, compression=compression)),)),))
    answer = await h.call(produce.handle, 9, request)
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def test_a_pop_over_batches_that_decode_large_keeps_at_most_decoded_bytes_of_them(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic, coordinator = await started(h)
        batches = 24
        for index in range(batches + 1):
            value = bytes([index]) * (4 * MiB if index < batches else DECODED_BYTES + 4 * MiB)
            await append(h, Record(0, 1_000, b"k%d" % index, value, (("h", b"x"),)))
        most = 0
        for index in range(batches):
            popped = await coordinator.pop("g", topic, "c1", ONE_AT_A_TIME)
            assert [(message.record.offset, message.record.key) for message in popped] == [(index, b"k%d" % index)]
            assert popped[0].record.value == bytes([index]) * 4 * MiB
            most = max(most, coordinator.reader.decoded_bytes)
        assert most <= DECODED_BYTES, f"{most} bytes of decoded batches kept"
        assert most > DECODED_BYTES - 8 * MiB, "as many as fit are kept"
        popped = await coordinator.pop("g", topic, "c1", ONE_AT_A_TIME)
        assert [len(message.record.value or b"") for message in popped] == [DECODED_BYTES + 4 * MiB]
        kept = coordinator.reader.decoded_bytes
        assert kept == decoded_size([popped[0].record]), "a batch past the bound is kept alone"

    run(tmp_path, scenario)


def test_a_decoded_batch_counts_its_keys_values_headers_and_a_cost_per_record() -> None:
    records = [Record(offset, 1_000, b"key", b"v" * 10, (("name", b"value"),)) for offset in range(3)]
    assert decoded_size(records) == 3 * (200 + 3 + 10 + 4 + 5)


def test_a_pop_stops_after_the_record_that_spends_its_bytes_and_the_next_pop_goes_on(tmp_path: Path) -> None:
    """Three 3 MiB records (a few KiB on the wire): a pop of up to 32 takes two (the second crosses 4 MiB), the next
    the third; small records fill a pop's 32 as before."""
    async def scenario(h: Harness) -> None:
        topic, coordinator = await started(h)
        for index in range(3):
            await append(h, Record(0, 1_000, b"big-%d" % index, bytes(3 * MiB)))
        await append(h, *(Record(index, 1_000, None, b"small") for index in range(40)), compression=Compression.NONE)
        first = await coordinator.pop("g", topic, "c1", AS_MANY_AS_V0)
        assert [message.record.key for message in first] == [b"big-0", b"big-1"]
        second = await coordinator.pop("g", topic, "c1", AS_MANY_AS_V0)
        assert [message.record.offset for message in second] == list(range(2, 3 + 31)), "then small ones up to 32"
        assert sum(len(message.record.value or b"") for message in second) < POP_MAX_BYTES + 3 * MiB
        third = await coordinator.pop("g", topic, "c1", AS_MANY_AS_V0)
        assert [message.record.offset for message in third] == list(range(34, 43))

    run(tmp_path, scenario)


def test_revived_records_past_the_bytes_stay_in_flight_for_the_next_pop(tmp_path: Path) -> None:
    """Records whose invisible time ran out come back in the next pops as far as its bytes reach; the rest stay
    due, neither lost nor settled as gone, and come back in the pop after."""
    async def scenario(h: Harness) -> None:
        topic, coordinator = await started(h)
        for index in range(3):
            await append(h, Record(0, 1_000, b"big-%d" % index, bytes(3 * MiB)))
        assert [m.record.offset for m in await coordinator.pop("g", topic, "c1", AS_MANY_AS_V0)] == [0, 1]
        assert [m.record.offset for m in await coordinator.pop("g", topic, "c1", AS_MANY_AS_V0)] == [2]
        h.clock.advance(INVISIBLE_MS + 1_000)
        coordinator.tick()
        again = await coordinator.pop("g", topic, "c2", AS_MANY_AS_V0)
        assert [(m.record.offset, m.reconsume_times) for m in again] == [(0, 1), (1, 1)]
        rest = await coordinator.pop("g", topic, "c2", AS_MANY_AS_V0)
        assert [(m.record.offset, m.reconsume_times) for m in rest] == [(2, 1)]
        assert await coordinator.pop("g", topic, "c2", AS_MANY_AS_V0) == []

    run(tmp_path, scenario)


def test_a_compact_pop_counts_each_stored_batch_once_against_its_bytes(tmp_path: Path) -> None:
    """Stored batches of 900 KiB each: a compact pop of up to 1,024 records takes five (the fifth crosses 4 MiB),
    the next pop the sixth; many records of one batch cost that batch once."""
    async def scenario(h: Harness) -> None:
        topic, coordinator = await started(h)
        for index in range(6):
            await append(h, *(Record(i, 1_000, None, bytes([index]) * 9_000) for i in range(100)),
                         compression=Compression.NONE)
        first = await coordinator.pop_batches("g", topic, "c1", AS_MANY_AS_COMPACT)
        assert [len(part.offsets) for part in first] == [500]
        assert [len(batch) for batch in first[0].batches] == [len(first[0].batches[0])] * 5
        second = await coordinator.pop_batches("g", topic, "c1", AS_MANY_AS_COMPACT)
        assert [part.offsets for part in second] == [tuple(range(500, 600))]

    run(tmp_path, scenario)
