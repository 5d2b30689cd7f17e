"""Every archived record gets its dead-letter copy, however many one archive holds, over the share handlers.

An archive of more records than one `DeadLettered` event describes (`MAX_COPIES_PER_EVENT`, lowered here)
is described by several events, and copies over the target's ``max.message.bytes`` are cut into several
batches, all in the archive's WriteBatch; a single copy too large for the target keeps its record
(`DeadLetterDeferred`) for the group's ``logwright.dead.letter.deferred.retry.ms``, a validated group config
DescribeConfigs shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from logwright.compat.coordinators import dead_letters
from logwright.compat.errors import ErrorCode
from logwright.compat.extensions import clock_control, cursor_inspection
from logwright.compat.kafka import describe_configs, incremental_alter_configs
from logwright.compat.wire.record_batch import decode_records
from logwright.compat.wire.records import Record
from logwright.core.events import ConfigChanged, Event
from logwright.core.events.cursors import DeadLetterDeferred, DeadLettered, RecordsRejected
from logwright.eventstore.interface import LoggedEvent

from tests.compat.test_share_handlers import GROUP, TOPIC, Harness, acquired, run

REJECT = 3
RELEASE = 2
DLQ = "dlq.orders"
DEFERRED_KEY = "logwright.dead.letter.deferred.retry.ms"
GROUP_RESOURCE = 32


def _commits(h: Harness) -> list[list[Event]]:
    commits: list[list[Event]] = []

    def listen(events: Sequence[LoggedEvent]) -> None:
        commits.append([logged.event for logged in events])

    h.store.add_commit_listener(listen)
    return commits


def _dlq(h: Harness, max_message_bytes: int | None = None, **group: str) -> None:
    configs = [("errors.deadletterqueue.group.enable", "true")]
    if max_message_bytes is not None:
        configs.append(("max.message.bytes", str(max_message_bytes)))
    h.broker.create_topic(DLQ, 1, tuple(configs))
    h.broker.stage([ConfigChanged("group", GROUP, (
        ("share.auto.offset.reset", "earliest"), ("errors.deadletterqueue.topic.name", DLQ),
        ("errors.deadletterqueue.copy.record.enable", "true"), *group.items()))])


def _stored(h: Harness) -> tuple[list[Record], int]:
    """The DLQ's copies in offset order, and how many batches hold them."""
    topic = h.broker.topic(DLQ)
    assert topic is not None
    batches = list(h.broker.store.read_batches(topic.partition_ids[0], 0, 2**31 - 1))
    return [record for batch in batches for record in decode_records(batch)], len(batches)


async def _deferred(h: Harness) -> list[dict[str, Any]]:
    """InspectCursor's ``dead_letter_deferred`` for partition 0."""
    answer = await h.call(cursor_inspection.handle, 0, {"group_id": GROUP, "topic": TOPIC})
    return list(answer["partitions"][0]["dead_letter_deferred"])


async def _tick(h: Harness, ms: int) -> None:
    h.clock.advance(ms)
    await h.call(clock_control.handle, 0, (0).to_bytes(8, "big"))


def test_an_archive_past_the_event_cap_is_described_by_several_events_in_one_write_batch_and_copied_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dead_letters, "MAX_COPIES_PER_EVENT", 3)

    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(8)
        _dlq(h)
        await h.join("m1")
        assert acquired(await h.fetch("m1", 0, topic_id)) == [(0, 7, 1)]
        assert acquired(await h.fetch("m1", 1, topic_id, acks=((2, 3, RELEASE),))) == [(2, 3, 2)]
        commits = _commits(h)
        await h.fetch("m1", 2, topic_id, acks=((0, 7, REJECT),))
        [batch] = [events for events in commits if any(isinstance(e, RecordsRejected) for e in events)]
        [rejected] = [e for e in batch if isinstance(e, RecordsRejected)]
        assert rejected.ranges == ((0, 7),)
        lettered = [e for e in batch if isinstance(e, DeadLettered)]
        assert [(e.deliveries, e.dead_letter_base_offset) for e in lettered] == [
            (((0, 1, 1), (2, 2, 2)), 0), (((3, 3, 2), (4, 5, 1)), 3), (((6, 7, 1),), 6)]
        assert not any(isinstance(e, DeadLetterDeferred) for e in batch)
        copies, _ = _stored(h)
        headers = [dict(copy.headers) for copy in copies]
        assert [copy.value for copy in copies] == [f"v{i}".encode() for i in range(8)]
        assert [h["__dlq.errors.offset"] for h in headers] == [str(i).encode() for i in range(8)]
        assert [h["__dlq.errors.delivery.count"] for h in headers] == [b"1", b"1", b"2", b"2", b"1", b"1", b"1", b"1"]
        assert acquired(await h.fetch("m1", 3, topic_id)) == []

    run(tmp_path, scenario)


def test_a_batch_rejected_in_many_spans_is_read_once_for_its_copies(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The copies' records were read and decoded again for each span: a 2,000-record batch rejected every other
    offset (1,000 spans) was decoded 1,000 times, 4.9 s in one stretch."""
    decoded = 0
    decode = dead_letters.decode_records

    def counted(batch: bytes) -> list[Record]:
        nonlocal decoded
        decoded += 1
        return decode(batch)

    monkeypatch.setattr(dead_letters, "decode_records", counted)

    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(40)
        _dlq(h)
        await h.join("m1")
        assert acquired(await h.fetch("m1", 0, topic_id)) == [(0, 39, 1)]
        await h.fetch("m1", 1, topic_id, acks=tuple((offset, offset, REJECT) for offset in range(0, 40, 2)))
        copies, _ = _stored(h)
        assert [copy.value for copy in copies] == [f"v{i}".encode() for i in range(0, 40, 2)]
        assert decoded == 1, "the one stored batch, decoded once for its 20 spans"

    run(tmp_path, scenario)


def test_copies_over_the_targets_max_message_bytes_go_in_several_batches(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce_records(*(Record(i, 1_000, None, bytes([65 + i]) * 400) for i in range(6)))
        _dlq(h, max_message_bytes=1_200)
        await h.join("m1")
        assert acquired(await h.fetch("m1", 0, topic_id)) == [(0, 5, 1)]
        commits = _commits(h)
        await h.fetch("m1", 1, topic_id, acks=((0, 5, REJECT),))
        [lettered] = [e for events in commits for e in events if isinstance(e, DeadLettered)]
        assert (lettered.deliveries, lettered.dead_letter_base_offset) == (((0, 5, 1),), 0)
        copies, batches = _stored(h)
        assert [copy.value for copy in copies] == [bytes([65 + i]) * 400 for i in range(6)]
        assert batches >= 3

    run(tmp_path, scenario)


def test_a_copy_too_large_for_the_target_is_kept_for_the_groups_deferred_retry_ms(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce_records(Record(0, 1_000, None, b"x" * 2_000))
        _dlq(h, max_message_bytes=1_000, **{DEFERRED_KEY: "5000"})
        await h.join("m1")
        assert acquired(await h.fetch("m1", 0, topic_id)) == [(0, 0, 1)]
        commits = _commits(h)
        await h.fetch("m1", 1, topic_id, acks=((0, 0, REJECT),))
        events = [e for batch in commits for e in batch]
        assert not any(isinstance(e, RecordsRejected | DeadLettered) for e in events)
        [deferred] = [e for e in events if isinstance(e, DeadLetterDeferred)]
        assert "MESSAGE_TOO_LARGE" in deferred.error
        assert deferred.available_at_ms == deferred.time_ms + 5_000
        [shown] = await _deferred(h)
        assert shown == {"first": 0, "last": 0, "delivery_count": 1, "reason": deferred.reason, "consumer": "m1",
                         "time_ms": deferred.time_ms, "dead_letter_topic": DLQ, "error": deferred.error,
                         "available_at_ms": deferred.time_ms + 5_000}
        await _tick(h, 4_999)
        assert acquired(await h.fetch("m1", 2, topic_id)) == []
        await _tick(h, 1)
        assert acquired(await h.fetch("m1", 3, topic_id)) == [(0, 0, 2)]
        assert [entry["first"] for entry in await _deferred(h)] == [0]  # in flight again: still unresolved
        await h.fetch("m1", 4, topic_id, acks=((0, 0, 1),))  # ACCEPT this time: nothing waits any more
        assert await _deferred(h) == []

    run(tmp_path, scenario)


def test_the_deferred_retry_is_a_validated_group_config_describe_configs_shows(tmp_path: Path) -> None:
    async def alter(h: Harness, value: str) -> tuple[int, str | None]:
        request = IncrementalAlterConfigsRequest(validate_only=False, resources=(AlterConfigsResource(
            resource_type=GROUP_RESOURCE, resource_name=GROUP,
            configs=(AlterableConfig(name=DEFERRED_KEY, config_operation=0, value=value),)),))
        answer = (await h.call(incremental_alter_configs.handle, 1, request)).responses[0]
        return answer.error_code, answer.error_message

    async def describe(h: Harness) -> tuple[str | None, int]:
        request = DescribeConfigsRequest(include_synonyms=False, include_documentation=True, resources=(
            DescribeConfigsResource(resource_type=GROUP_RESOURCE, resource_name=GROUP,
                                    configuration_keys=(DEFERRED_KEY,)),))
        [config] = (await h.call(describe_configs.handle, 4, request)).results[0].configs
        assert config.documentation and "dead-letter copy" in config.documentation
        return config.value, config.config_source

    async def scenario(h: Harness) -> None:
        assert await describe(h) == ("30000", 5)  # DEFAULT_CONFIG
        for bad in ("99", "86400001", "soon", "-1"):
            code, message = await alter(h, bad)
            assert code == ErrorCode.INVALID_CONFIG and message and DEFERRED_KEY in message, (bad, message)
        assert await alter(h, "2500") == (ErrorCode.NONE, None)
        value, source = await describe(h)
        assert value == "2500" and source != 5

    run(tmp_path, scenario)


def test_a_group_without_the_key_falls_back_to_the_default() -> None:
    assert dead_letters.deferred_retry_ms({}) == dead_letters.DEFERRED_RETRY_MS == 30_000
    assert dead_letters.deferred_retry_ms({DEFERRED_KEY: "1200"}) == 1_200


def test_inspect_cursor_shows_deferred_offsets_until_their_copy_is_written_or_they_are_acknowledged(
        tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(3)
        h.broker.create_topic(DLQ, 1)  # without errors.deadletterqueue.group.enable=true
        h.broker.stage([ConfigChanged("group", GROUP, (
            ("share.auto.offset.reset", "earliest"), ("errors.deadletterqueue.topic.name", DLQ),
            (DEFERRED_KEY, "1000")))])
        await h.join("m1")
        assert acquired(await h.fetch("m1", 0, topic_id)) == [(0, 2, 1)]
        await h.fetch("m1", 1, topic_id, acks=((0, 2, REJECT),))
        [waiting] = await _deferred(h)
        assert (waiting["first"], waiting["last"], waiting["dead_letter_topic"]) == (0, 2, DLQ)
        assert "errors.deadletterqueue.group.enable=true" in waiting["error"]
        assert waiting["available_at_ms"] == waiting["time_ms"] + 1_000
        h.broker.stage([ConfigChanged("topic", DLQ, (("errors.deadletterqueue.group.enable", "true"),))])
        await _tick(h, 1_000)
        assert acquired(await h.fetch("m1", 2, topic_id)) == [(0, 2, 2)]
        await h.fetch("m1", 3, topic_id, acks=((0, 0, 1), (1, 1, REJECT)))  # 0 accepted, 1 copied now
        assert [(e["first"], e["last"]) for e in await _deferred(h)] == [(2, 2)]
        answer = await h.call(cursor_inspection.handle, 0, {"group_id": GROUP, "topic": TOPIC})
        [lettered] = answer["partitions"][0]["dead_lettered"]
        assert (lettered["first"], lettered["delivery_count"], lettered["dead_letter_offset"]) == (1, 2, 0)
        await h.fetch("m1", 4, topic_id, acks=((2, 2, REJECT),))
        assert await _deferred(h) == []
        copies, _ = _stored(h)
        assert [dict(copy.headers)["__dlq.errors.offset"] for copy in copies] == [b"1", b"2"]

    run(tmp_path, scenario)


def test_copy_batches_fit_even_where_the_size_estimate_is_short() -> None:
    name = "\u00e9" * 300  # 600 UTF-8 bytes, estimated as 300
    records = [Record(0, 1_000, None, bytes([i]), ((name, b"v"),)) for i in range(40)]
    batches = dead_letters.copy_batches(records, 4_000)
    assert len(batches) > 1 and all(len(batch) <= 4_000 for batch in batches)
    assert [r.value for batch in batches for r in decode_records(batch)] == [bytes([i]) for i in range(40)]
