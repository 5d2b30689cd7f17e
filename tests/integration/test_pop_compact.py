"""Pop version 1, the compact form: stored batches by reference, one checkpoint per partition, acks as
(partition, epoch, offset ranges). What version 0 guarantees must hold here too (tests/integration/test_pop.py
runs every scenario with both); these are the cases only the compact form has: records outside the
checkpoint in a sent batch, batches with gaps, pops of more than 32, and the bounds of an ack's ranges."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import msgpack
import pytest
from confluent_kafka import Producer
from logwright.client import Client
from logwright.client.pop import StaleReceiptHandle, pin_version, pop_version
from logwright.compat.errors import ErrorCode

from .broker_process import BrokerProcess
from .compacted_topics import close_head, create_compacted
from .compacted_topics import produce as produce_keyed
from .group_configs import set_group_configs
from .test_pop import INVISIBLE_MS, pop_topic
from .test_share_groups import advance_clock, check_consistent

pytestmark = pytest.mark.logwright_only(reason="logwright's pop extension keys on a manual-clock broker")


def run(scenario: Callable[[Client, Client], Awaitable[None]], bootstrap: str) -> None:
    """``scenario(compact, classic)``: two clients, one on version 1 (asked of the broker), one pinned to 0."""

    async def main() -> None:
        compact, classic = await Client.connect(bootstrap, "compact"), await Client.connect(bootstrap, "classic")
        pin_version(classic._connection, 0)
        try:
            assert await pop_version(compact._connection) == 1  # the broker advertises v1 of 32009 and 32010
            await scenario(compact, classic)
        finally:
            await compact.close()
            await classic.close()

    asyncio.run(asyncio.wait_for(main(), 120))


async def raw(client: Client, api_key: int, body: dict[str, Any], version: int = 1) -> dict[str, Any]:
    answer = msgpack.unpackb(await client._connection.raw(api_key, msgpack.packb(body, use_bin_type=True), 30,
                                                          version), raw=False)
    assert isinstance(answer, dict)
    return answer


def produce_compressed(bootstrap: str, topic: str, values: list[bytes], codec: str = "lz4") -> None:
    """``values`` in one compressed batch of partition 0 (a batch the broker sends whole)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "compression.type": codec})
    for value in values:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(30) == 0


def test_a_compact_pop_takes_up_to_1024_from_inside_a_batch_and_its_handles_settle_in_either_version(
        clock_broker: BrokerProcess) -> None:
    topic = pop_topic(clock_broker.bootstrap, "g", 1, 1_500)

    async def scenario(compact: Client, classic: Client) -> None:
        first = await classic.pop(topic, "g", 3, INVISIBLE_MS)
        assert [m.offset for m in first] == [0, 1, 2]
        big = await compact.pop(topic, "g", 1_024, INVISIBLE_MS)
        assert [(m.offset, m.value, m.reconsume_times) for m in big] == [
            (offset, b"r%d" % offset, 0) for offset in range(3, 1_027)]
        assert {m.invisible_until_ms for m in big} == {big[0].invisible_until_ms}
        await classic.ack(big[0])  # a handle the client built is the broker's own text
        await compact.ack(first[0])
        assert await compact.ack_all([*first[1:], *big[1:]]) == [None] * 1_025
        rest = await compact.pop(topic, "g", 1_024, INVISIBLE_MS)
        assert [m.offset for m in rest] == list(range(1_027, 1_500))
        refusals = await compact.ack_all([*rest, big[5]])
        assert refusals[:-1] == [None] * len(rest) and refusals[-1] is not None and refusals[-1].kind == "unknown"
        [partition] = (await compact.inspect_pop(topic, "g"))["partitions"]
        assert (partition["consumed_offset"], partition["in_flight"]) == (1_500, 0)

    run(scenario, clock_broker.bootstrap)
    check_consistent(clock_broker)


def test_a_compact_pop_of_a_compacted_batch_hands_out_only_the_records_left(clock_broker: BrokerProcess) -> None:
    """A batch with gaps is the one case the broker decodes: its header cannot say which offsets it holds."""
    bootstrap = clock_broker.bootstrap
    topic = create_compacted(bootstrap)
    set_group_configs(bootstrap, "g", {"logwright.pop.init.mode": "earliest"})
    now = advance_clock(bootstrap, 0)
    records = [(b"key-%d" % (index % 3), b"%d" % index) for index in range(60)]
    assert set(produce_keyed(bootstrap, topic, records, now, **{"linger.ms": 1000})) == {None}  # one batch
    close_head(bootstrap, topic, now + 10_000)
    advance_clock(bootstrap, 0)

    async def scenario(compact: Client, classic: Client) -> None:
        popped = await compact.pop(topic, "g", 100, INVISIBLE_MS)
        assert [(m.offset, m.key) for m in popped] == [(57, b"key-0"), (58, b"key-1"), (59, b"key-2"),
                                                        (60, b"head")]
        assert await compact.ack_all(popped[:2]) == [None, None]
        await compact.advance_clock(INVISIBLE_MS)
        revived = await classic.pop(topic, "g", 32, INVISIBLE_MS)
        assert [(m.offset, m.reconsume_times) for m in revived] == [(59, 1), (60, 1)]
        await compact.advance_clock(INVISIBLE_MS)
        again = await compact.pop(topic, "g", 100, INVISIBLE_MS)
        assert [(m.offset, m.value, m.reconsume_times) for m in again] == [(59, b"59", 2), (60, b"roll", 2)]
        assert await compact.ack_all(again) == [None, None]
        [partition] = (await compact.inspect_pop(topic, "g"))["partitions"]
        assert (partition["consumed_offset"], partition["in_flight"]) == (61, 0)

    run(scenario, bootstrap)
    check_consistent(clock_broker)


def test_compact_acks_are_checked_before_any_offset_and_exactly_per_offset_and_epoch(
        clock_broker: BrokerProcess) -> None:
    topic = pop_topic(clock_broker.bootstrap, "g", 1, 3)

    async def scenario(compact: Client, classic: Client) -> None:
        popped = await raw(compact, 32009, {"group_id": "g", "topic": topic, "max_messages": 2,
                                            "invisible_time_ms": INVISIBLE_MS})
        assert popped["error_code"] == 0
        [partition] = popped["partitions"]
        assert (partition["partition"], partition["ranges"], partition["reconsumed"]) == (0, [[0, 1]], [])
        topic_id, epoch = popped["topic_id"], partition["epoch"]

        def ack(ranges: Any, **overrides: Any) -> dict[str, Any]:
            return {"group_id": "g", "acks": [{"topic_id": topic_id, "partition": 0, "epoch": epoch,
                                               "ranges": ranges, **overrides}]}

        for body, words in ((ack([[0, 1], [1, 2]]), "ascending and disjoint"),
                            (ack([[2, 1]]), "first <= last"),
                            (ack([[0, 40_000]]), "more than 32768 offsets"),
                            (ack([[0, 1]], topic_id=b"abc"), "16 bytes"),
                            (ack([[0, 1]], epoch=0), "epoch"),
                            (ack([[0, 1]], partition=True), "partition"),
                            (ack([[0, -1]]), "last offset"),
                            (ack([]), "ranges"),
                            ({"group_id": "g", "acks": {}}, "acks")):
            answer = await raw(compact, 32010, body)
            assert answer["error_code"] == ErrorCode.INVALID_REQUEST and words in answer["error_message"], answer
        unknown = await raw(compact, 32010, ack([[0, 1]], topic_id=uuid.uuid4().bytes))
        assert [(r[0], r[2]) for r in unknown["results"][0]["refused"]] == [(0, "unknown"), (1, "unknown")]
        [message] = [m for m in await classic.pop(topic, "g", 32, INVISIBLE_MS)]
        assert message.offset == 2
        changed = await classic.change_invisible_time(f"1 {epoch} 0 0 {bytes(topic_id).hex()} g", 30_000, "g")
        assert isinstance(changed, str)
        stale = await raw(compact, 32010, ack([[0, 2]]))
        refused = {r[0]: (r[1], r[2]) for r in stale["results"][0]["refused"]}
        assert refused == {0: (ErrorCode.INVALID_RECORD_STATE, "stale"), 2: (ErrorCode.INVALID_RECORD_STATE, "stale")}
        [partition] = (await compact.inspect_pop(topic, "g"))["partitions"]
        assert sorted(e["offset"] for e in partition["entries"]) == [0, 2]  # 1 settled, 0 and 2 kept, not lost
        with pytest.raises(StaleReceiptHandle):
            await compact.ack(f"1 {epoch} 0 0 {bytes(topic_id).hex()} g", "g")
        await compact.ack(changed, "g")
        await classic.ack(message)

    run(scenario, clock_broker.bootstrap)


def test_a_batch_the_client_holds_is_answered_by_reference_and_a_whole_pop_acks_as_its_ranges(
        clock_broker: BrokerProcess) -> None:
    """A pop names the stored batches its client keeps (``held``); the broker answers those as [base offset,
    CRC] instead of sending their bytes again (a compressed batch, which the broker sends whole, of thousands
    of records would otherwise come with every pop of it). Acknowledging a whole pop sends its checkpoint
    ranges; a changed handle among them is refused at its own place."""
    topic = pop_topic(clock_broker.bootstrap, "g", 1, 0)
    produce_compressed(clock_broker.bootstrap, topic, [b"r%d" % offset for offset in range(310)])
    body = {"group_id": "g", "topic": topic, "max_messages": 100, "invisible_time_ms": INVISIBLE_MS}

    async def scenario(compact: Client, classic: Client) -> None:
        first = await raw(compact, 32009, body)
        [part] = first["partitions"]
        assert part["batches"] and "held" not in part
        named = [[0, int.from_bytes(batch[0:8], "big", signed=True), int.from_bytes(batch[17:21], "big")]
                 for batch in part["batches"]]
        second = await raw(compact, 32009, {**body, "held": {"topic_id": first["topic_id"], "batches": named}})
        [part] = second["partitions"]
        assert part["ranges"] == [[100, 199]]
        assert part.get("held") and all([0, *held] in named for held in part["held"])
        assert all(int.from_bytes(batch[0:8], "big", signed=True) not in [n[1] for n in named]
                   for batch in part["batches"])
        for held, words in (({"topic_id": first["topic_id"], "batches": [[0, 0, 1]] * 65}, "at most 64"),
                            ({"topic_id": first["topic_id"], "batches": [[0, 0]]}, "[partition, base offset, CRC]"),
                            ({"topic_id": b"x", "batches": []}, "16 bytes"),
                            ([], "map")):
            answer = await raw(compact, 32009, {**body, "held": held})
            assert answer["error_code"] == ErrorCode.INVALID_REQUEST and words in answer["error_message"], answer
        foreign = await raw(compact, 32009, {**body, "max_messages": 10,
                                             "held": {"topic_id": uuid.uuid4().bytes, "batches": named}})
        [part] = foreign["partitions"]  # batches named under another topic id are not this topic's: sent
        assert part["ranges"] == [[200, 209]] and part["batches"] and "held" not in part
        a = await compact.pop(topic, "g", 50, INVISIBLE_MS)  # learns the topic id, keeps the batch
        b = await compact.pop(topic, "g", 50, INVISIBLE_MS)  # names it
        assert [(m.offset, m.value) for m in [*a, *b]] == [(offset, b"r%d" % offset) for offset in range(210, 310)]
        changed = await compact.change_invisible_time(b[3], 30_000)
        refusals = await compact.ack_all(b)
        assert [index for index, refusal in enumerate(refusals) if refusal is not None] == [3]
        assert refusals[3] is not None and refusals[3].kind == "stale"
        await compact.ack(changed)
        assert await compact.ack_all(a) == [None] * 50
        [partition] = (await compact.inspect_pop(topic, "g"))["partitions"]
        assert partition["in_flight"] == 210  # the raw pops' records; those of the client's two settled

    run(scenario, clock_broker.bootstrap)
    check_consistent(clock_broker)
