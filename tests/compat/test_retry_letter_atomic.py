"""A retry move is one WriteBatch: the retry copy's append, the ack of the original and `MovedToRetry` commit
together; past the reconsume limit the DLQ copy, the archive and `DeadLettered` do.

The store hands each commit listener the events of exactly one RocksDB WriteBatch, so finding them in one
listener call is the atomicity claim. Over a real RocksEventStore and the share handlers on a manual clock,
calling LogwrightReconsumeLater's handler; refusals change nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from logwright.compat.coordinators import retry_letters
from logwright.compat.coordinators.retry_letters import reconsume_later
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.wire.record_batch import decode_records
from logwright.compat.wire.records import Record
from logwright.core.errors import InvalidRecordState, UnknownTopic
from logwright.core.events import (
    ConfigChanged,
    DelayedRecordsIndexed,
    Event,
    RecordsAcked,
    RecordsAppended,
    TopicCreated,
)
from logwright.core.events.cursors import DeadLettered, MovedToRetry, RecordsRejected
from logwright.eventstore.interface import LoggedEvent

from tests.compat.test_share_handlers import GROUP, TOPIC, Harness, acquired, run

RETRY = f"{TOPIC}-{GROUP}-RETRY"
DLQ = f"{TOPIC}-{GROUP}-DLQ"


def _prepare(h: Harness, **configs: str) -> list[list[Event]]:
    h.broker.stage([ConfigChanged("group", GROUP, (("share.auto.offset.reset", "earliest"), *configs.items()))])
    commits: list[list[Event]] = []

    def listen(events: Sequence[LoggedEvent]) -> None:
        commits.append([logged.event for logged in events])

    h.store.add_commit_listener(listen)
    return commits


def _records(h: Harness, name: str) -> list[dict[str, bytes | None]]:
    topic = h.broker.topic(name)
    assert topic is not None
    batches = h.broker.store.read_batches(topic.partition_ids[0], 0, 2**31 - 1)
    return [dict(record.headers) for batch in batches for record in decode_records(batch)]


def _move(h: Harness, offset: int, member: str = "m1") -> dict[str, object]:
    coordinator = share_coordinator(h.broker)
    moved = reconsume_later(h.broker, coordinator, GROUP, member, TOPIC,
                            h.broker.topic(TOPIC).partition_ids[0],  # type: ignore[union-attr]
                            offset, 1_000)
    return {"topic": moved.topic, "times": moved.reconsume_times, "dead": moved.dead_lettered}


def test_the_retry_copy_the_ack_and_the_event_commit_in_one_write_batch(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(2)
        h.broker.create_topic(RETRY, 1)
        commits = _prepare(h)
        await h.join("m1")
        assert acquired(await h.fetch("m1", 0, topic_id)) == [(0, 1, 1)]
        before = len(commits)
        assert _move(h, 1) == {"topic": RETRY, "times": 1, "dead": False}
        await h.broker.durable()
        assert len(commits) == before + 1
        batch = commits[-1]
        retry_id = h.broker.topic(RETRY).partition_ids[0]  # type: ignore[union-attr]
        assert any(isinstance(e, RecordsAppended) and e.partition_id == retry_id for e in batch)
        assert any(isinstance(e, DelayedRecordsIndexed) and e.partition_id == retry_id for e in batch)
        assert any(isinstance(e, RecordsAcked) and e.ranges == ((1, 1),) for e in batch)
        [moved] = [e for e in batch if isinstance(e, MovedToRetry)]
        assert (moved.offset, moved.reconsume_times, moved.retry_topic, moved.retry_offset) == (1, 1, RETRY, 0)
        [headers] = _records(h, RETRY)
        assert headers["RECONSUMETIMES"] == b"1" and headers["ORIGIN_MESSAGE_ID"] == f"{TOPIC}-0@1".encode()
        with pytest.raises(InvalidRecordState):
            _move(h, 1)  # acknowledged by the move
        with pytest.raises(InvalidRecordState):
            _move(h, 0, member="m2")  # held by m1
        assert len(_records(h, RETRY)) == 1

    run(tmp_path, scenario)


def test_a_missing_named_retry_topic_changes_nothing(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(1)
        commits = _prepare(h, **{"logwright.retry.letter.topic": "named-retry"})
        await h.join("m1")
        assert acquired(await h.fetch("m1", 0, topic_id)) == [(0, 0, 1)]
        before = len(commits)
        with pytest.raises(UnknownTopic):
            _move(h, 0)
        await h.broker.durable()
        assert len(commits) == before
        h.broker.create_topic("named-retry", 1)
        assert _move(h, 0)["topic"] == "named-retry"  # still held: nothing was settled by the refusal

    run(tmp_path, scenario)


def test_the_default_retry_topic_is_created_in_the_write_batch_of_the_move(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(1)
        commits = _prepare(h)
        await h.join("m1")
        assert acquired(await h.fetch("m1", 0, topic_id)) == [(0, 0, 1)]
        assert h.broker.topic(RETRY) is None
        assert _move(h, 0)["topic"] == RETRY
        await h.broker.durable()
        batch = commits[-1]
        assert any(isinstance(e, TopicCreated) and e.topic == RETRY for e in batch)
        assert any(isinstance(e, MovedToRetry) for e in batch)

    run(tmp_path, scenario)


def test_past_the_limit_the_dlq_copy_and_the_archive_commit_in_one_write_batch(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(1)
        h.broker.create_topic(DLQ, 1)
        commits = _prepare(h, **{"logwright.retry.max.reconsume.times": "0"})
        await h.join("m1")
        assert acquired(await h.fetch("m1", 0, topic_id)) == [(0, 0, 1)]
        assert _move(h, 0) == {"topic": DLQ, "times": 1, "dead": True}
        await h.broker.durable()
        batch = commits[-1]
        dlq_id = h.broker.topic(DLQ).partition_ids[0]  # type: ignore[union-attr]
        assert any(isinstance(e, RecordsAppended) and e.partition_id == dlq_id for e in batch)
        assert any(isinstance(e, RecordsRejected) and e.reason == "max reconsume times reached" for e in batch)
        assert any(isinstance(e, DeadLettered) and e.dead_letter_topic == DLQ for e in batch)
        [headers] = _records(h, DLQ)
        assert (headers["RECONSUMETIMES"], headers["REAL_TOPIC"], headers["ORIGIN_MESSAGE_ID"]) == (
            b"1", TOPIC.encode(), f"{TOPIC}-0@0".encode())

    run(tmp_path, scenario)


def test_past_the_limit_a_dead_letter_copy_that_cannot_be_written_refuses_the_move(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(1)
        commits = _prepare(h, **{"logwright.retry.max.reconsume.times": "0", "logwright.dead.letter.topic": "parked"})
        await h.join("m1")
        assert acquired(await h.fetch("m1", 0, topic_id)) == [(0, 0, 1)]
        before = len(commits)
        with pytest.raises(UnknownTopic, match="'parked' does not exist"):
            _move(h, 0)
        await h.broker.durable()
        assert len(commits) == before  # not archived, not deferred: the client was told, the record is still held
        h.broker.create_topic("parked", 1)
        assert _move(h, 0) == {"topic": "parked", "times": 1, "dead": True}

    run(tmp_path, scenario)


def test_the_record_a_retry_copies_is_decoded_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each LogwrightReconsumeLater decoded the whole batch holding its record (a 1 MB batch of tiny records: about
    100 ms a request); the batch is cut to the record first."""
    decoded: list[int] = []
    decode = retry_letters.decode_records

    def counted(batch: bytes) -> list[Record]:
        records = decode(batch)
        decoded.append(len(records))
        return records

    monkeypatch.setattr(retry_letters, "decode_records", counted)

    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(40)
        h.broker.create_topic(RETRY, 1)
        _prepare(h)
        await h.join("m1")
        assert acquired(await h.fetch("m1", 0, topic_id)) == [(0, 39, 1)]
        assert _move(h, 17) == {"topic": RETRY, "times": 1, "dead": False}
        assert _move(h, 30) == {"topic": RETRY, "times": 1, "dead": False}
        await h.broker.durable()
        assert decoded == [1, 1]
        assert [headers["ORIGIN_MESSAGE_ID"] for headers in _records(h, RETRY)] == [
            f"{TOPIC}-0@17".encode(), f"{TOPIC}-0@30".encode()]

    run(tmp_path, scenario)
