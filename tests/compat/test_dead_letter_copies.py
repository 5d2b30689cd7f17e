"""What a dead-letter copy carries and where it goes, over the share handlers on a manual clock.

A copied record loses its delivery-delay headers (it would otherwise be held back again on the DLQ), and
Pulsar's default ``<topic>-<subscription>-DLQ`` is created on first use, in the copy's WriteBatch, when the
broker's ``auto.create.topics.enable`` allows it; otherwise the record is kept (`DeadLetterDeferred`, logged)
and offered again later, when a new archive writes the copy.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest
from logwright.compat.coordinators.dead_letters import DEFERRED_RETRY_MS
from logwright.compat.extensions import clock_control
from logwright.compat.wire.record_batch import decode_records
from logwright.compat.wire.records import Record
from logwright.core.events import ConfigChanged, Event, TopicCreated
from logwright.core.events.cursors import DeadLetterDeferred, DeadLettered, RecordsRejected
from logwright.core.log.delayed_delivery import DELIVER_AFTER_HEADER, DELIVER_AT_HEADER
from logwright.eventstore.interface import LoggedEvent

from tests.compat.test_share_handlers import GROUP, TOPIC, Harness, acquired, run

REJECT = 3
PULSAR_DLQ = f"{TOPIC}-{GROUP}-DLQ"


def _listen(h: Harness) -> list[list[Event]]:
    commits: list[list[Event]] = []

    def listen(events: Sequence[LoggedEvent]) -> None:
        commits.append([logged.event for logged in events])

    h.store.add_commit_listener(listen)
    return commits


def _copies(h: Harness, topic_name: str) -> list[Record]:
    topic = h.broker.topic(topic_name)
    assert topic is not None
    return [record for partition_id in topic.partition_ids
            for batch in h.broker.store.read_batches(partition_id, 0, 2**31 - 1) for record in decode_records(batch)]


async def _reject_offset_zero(h: Harness, topic_id: uuid.UUID) -> None:
    await h.join("m1")
    assert acquired(await h.fetch("m1", 0, topic_id)) == [(0, 0, 1)]
    await h.fetch("m1", 1, topic_id, acks=((0, 0, REJECT),))


def _group_configs(h: Harness, **configs: str) -> None:
    h.broker.stage([ConfigChanged("group", GROUP, (("share.auto.offset.reset", "earliest"), *configs.items()))])


def test_a_copy_does_not_keep_the_delivery_delay_headers(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        h.broker.create_topic("dlq.delayed", 1, (("errors.deadletterqueue.group.enable", "true"),))
        _group_configs(h, **{"errors.deadletterqueue.topic.name": "dlq.delayed",
                             "errors.deadletterqueue.copy.record.enable": "true"})
        now = h.clock.now_ms()
        topic_id = await h.produce_records(Record(0, now, b"k", b"late", (
            (DELIVER_AT_HEADER, str(now + 500).encode()), ("trace", b"t-1"), (DELIVER_AFTER_HEADER, b"1000"))))
        await h.join("m1")
        assert acquired(await h.fetch("m1", 0, topic_id)) == []  # delayed
        h.clock.advance(500)
        await h.call(clock_control.handle, 0, (0).to_bytes(8, "big"))
        assert acquired(await h.fetch("m1", 1, topic_id)) == [(0, 0, 1)]
        await h.fetch("m1", 2, topic_id, acks=((0, 0, REJECT),))
        [copy] = _copies(h, "dlq.delayed")
        assert (copy.key, copy.value) == (b"k", b"late")
        names = [name for name, _ in copy.headers]
        assert "trace" in names and DELIVER_AT_HEADER not in names and DELIVER_AFTER_HEADER not in names
        assert names.count("__dlq.errors.offset") == 1

    run(tmp_path, scenario)


def test_the_pulsar_default_topic_is_created_with_the_source_partition_count_in_the_copy_write_batch(
        tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        h.broker.create_topic(TOPIC, 3)
        _group_configs(h, **{"logwright.dead.letter.max.deliveries": "2"})
        topic_id = await h.produce_records(Record(0, 1_000, None, b"poison"))
        commits = _listen(h)
        await _reject_offset_zero(h, topic_id)
        created = h.broker.topic(PULSAR_DLQ)
        assert created is not None and len(created.partition_ids) == 3
        [batch] = [events for events in commits if any(isinstance(e, DeadLettered) for e in events)]
        assert any(isinstance(e, TopicCreated) and e.topic == PULSAR_DLQ for e in batch)
        assert any(isinstance(e, RecordsRejected) for e in batch)
        [copy] = _copies(h, PULSAR_DLQ)
        assert copy.value == b"poison" and dict(copy.headers)["ORIGIN_MESSAGE_ID"] == f"{TOPIC}-0@0".encode()

    run(tmp_path, scenario)


def test_without_auto_creation_the_record_is_kept_offered_again_later_and_copied_once_the_topic_exists(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def scenario(h: Harness) -> None:
        h.broker.stage([ConfigChanged("broker", "", (("auto.create.topics.enable", "false"),))])
        _group_configs(h, **{"logwright.dead.letter.max.deliveries": "2"})
        topic_id = await h.produce_records(Record(0, 1_000, None, b"poison"))
        commits = _listen(h)
        with caplog.at_level(logging.WARNING, "logwright.compat.coordinators.dead_letters"):
            await _reject_offset_zero(h, topic_id)
        assert h.broker.topic(PULSAR_DLQ) is None
        events = [e for batch in commits for e in batch]
        assert not any(isinstance(e, RecordsRejected | DeadLettered) for e in events)
        [deferred] = [e for e in events if isinstance(e, DeadLetterDeferred)]
        assert (deferred.deliveries, deferred.dead_letter_topic, deferred.consumer) == (((0, 0, 1),), PULSAR_DLQ, "m1")
        assert "auto.create.topics.enable is false" in deferred.error
        assert deferred.available_at_ms == deferred.time_ms + DEFERRED_RETRY_MS
        assert "auto.create.topics.enable is false" in caplog.text and "kept (not archived)" in caplog.text
        assert acquired(await h.fetch("m1", 2, topic_id)) == []
        h.clock.advance(DEFERRED_RETRY_MS - 1)
        await h.call(clock_control.handle, 0, (0).to_bytes(8, "big"))
        assert acquired(await h.fetch("m1", 3, topic_id)) == []
        h.clock.advance(1)
        await h.call(clock_control.handle, 0, (0).to_bytes(8, "big"))
        assert acquired(await h.fetch("m1", 4, topic_id)) == [(0, 0, 2)]
        h.broker.stage([ConfigChanged("broker", "", (("auto.create.topics.enable", "true"),))])
        await h.fetch("m1", 5, topic_id, acks=((0, 0, REJECT),))
        [copy] = _copies(h, PULSAR_DLQ)
        assert copy.value == b"poison" and dict(copy.headers)["RECONSUMETIMES"] == b"2"
        assert acquired(await h.fetch("m1", 6, topic_id)) == []

    run(tmp_path, scenario)
