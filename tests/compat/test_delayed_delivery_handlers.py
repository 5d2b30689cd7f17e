"""Delayed delivery through the handlers, in process on a manual clock: a ShareFetch long poll waiting on a
delayed record is answered when the clock reaches its time (the share coordinator's timer, no polling)."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from pathlib import Path
from typing import Any

import pytest
from kio.schema.share_fetch.v2 import request as share_fetch_v2
from logwright.compat.extensions import clock_control, cursor_inspection
from logwright.compat.kafka import share_fetch
from logwright.compat.registry import make
from logwright.compat.wire.records import Record
from logwright.core.events import DelayedRecordsIndexed, Event, RecordsAppended
from logwright.core.log import delayed_delivery

from tests.compat.test_share_handlers import GROUP, TOPIC, Harness, acquired, run


async def _produce_delayed(h: Harness, after_ms: int) -> uuid.UUID:
    delay = (("logwright.deliver.after.ms", str(after_ms).encode()),)
    return await h.produce_records(Record(0, 1_000, None, b"later", delay), Record(1, 1_000, None, b"now"))


async def _long_fetch(h: Harness, topic_id: uuid.UUID, epoch: int, wait_s: float) -> Any:
    partition = make(share_fetch_v2.FetchPartition, partition_index=0, acknowledgement_batches=())
    request = make(share_fetch_v2.ShareFetchRequest, group_id=GROUP, member_id="m1", share_session_epoch=epoch,
                   max_wait=datetime.timedelta(seconds=wait_s), min_bytes=1, max_bytes=2**31 - 1, max_records=10,
                   batch_size=10, share_acquire_mode=1, is_renew_ack=False, forgotten_topics_data=(),
                   topics=(make(share_fetch_v2.FetchTopic, topic_id=topic_id, partitions=(partition,)),))
    return await h.call(share_fetch.handle, 2, request)


def test_a_waiting_share_fetch_is_answered_when_the_delay_ends(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        h.start_at_earliest()
        topic_id = await _produce_delayed(h, 10_000)
        await h.join("m1")
        assert acquired(await _long_fetch(h, topic_id, 0, 0)) == [(1, 1, 1)], "the record behind it waits"
        inspected = await h.call(cursor_inspection.handle, 0, {"group_id": GROUP, "topic": TOPIC})
        assert inspected["partitions"][0]["delayed"] == [{"offset": 0, "deliver_at_ms": h.clock.now_ms() + 10_000}]
        waiting = asyncio.ensure_future(_long_fetch(h, topic_id, 1, 60))
        await h.call(clock_control.handle, 0, (9_999).to_bytes(8, "big"))
        await asyncio.sleep(0)
        assert not waiting.done()
        await h.call(clock_control.handle, 0, (1).to_bytes(8, "big"))
        # Answered by the timer's wake-up within (wall) seconds, not at the 60 s max wait.
        assert acquired(await asyncio.wait_for(waiting, 10)) == [(0, 0, 1)]
        inspected = await h.call(cursor_inspection.handle, 0, {"group_id": GROUP, "topic": TOPIC})
        assert inspected["partitions"][0]["delayed"] == []

    run(tmp_path, scenario)


def test_a_batch_with_more_delayed_records_than_one_event_holds_is_indexed_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past `MAX_ENTRIES_PER_EVENT` (3 here) the index gets several events, all in the batch's WriteBatch."""
    monkeypatch.setattr(delayed_delivery, "MAX_ENTRIES_PER_EVENT", 3)

    async def scenario(h: Harness) -> None:
        commits: list[list[Event]] = []
        h.store.add_commit_listener(lambda logged: commits.append([entry.event for entry in logged]))
        h.start_at_earliest()
        delay = (("logwright.deliver.after.ms", b"5000"),)
        topic_id = await h.produce_records(*(Record(i, 1_000, None, f"v{i}".encode(), delay) for i in range(7)),
                                           Record(7, 1_000, None, b"now"))
        [appended] = [events for events in commits if any(isinstance(e, RecordsAppended) for e in events)]
        indexed = [e for e in appended if isinstance(e, DelayedRecordsIndexed)]
        assert [[offset for offset, _ in e.entries] for e in indexed] == [[0, 1, 2], [3, 4, 5], [6]]
        await h.join("m1")
        assert acquired(await _long_fetch(h, topic_id, 0, 0)) == [(7, 7, 1)], "all seven are held back"
        await h.call(clock_control.handle, 0, (5_000).to_bytes(8, "big"))
        assert acquired(await _long_fetch(h, topic_id, 1, 0)) == [(0, 6, 1)]

    run(tmp_path, scenario)


def test_a_fetch_waiting_before_the_delayed_record_arrives_is_answered_when_it_is_due(tmp_path: Path) -> None:
    """The append wakes the waiting fetch, which learns the due time by asking (`logwright_hold_back`) and
    waits again; the coordinator's timer then wakes it at that time."""
    async def scenario(h: Harness) -> None:
        h.start_at_earliest()
        topic_id = await h.produce_records(Record(0, 1_000, None, b"first"))
        await h.join("m1")
        assert acquired(await _long_fetch(h, topic_id, 0, 0)) == [(0, 0, 1)]
        waiting = asyncio.ensure_future(_long_fetch(h, topic_id, 1, 60))
        await asyncio.sleep(0.05)
        await h.produce_records(Record(0, 1_000, None, b"later", (("logwright.deliver.after.ms", b"4000"),)))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        await h.call(clock_control.handle, 0, (4_000).to_bytes(8, "big"))
        assert dict(h.store.entities("delayed_records")) != {}
        assert acquired(await asyncio.wait_for(waiting, 10)) == [(1, 1, 1)]
        assert dict(h.store.entities("delayed_records")) == {}, "its row went with the acquisition that delivered it"

    run(tmp_path, scenario)


def test_inspection_lists_the_earliest_delayed_offsets_and_counts_them_all(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cursor_inspection, "MAX_DELAYED_LISTED", 3)

    async def scenario(h: Harness) -> None:
        now = h.clock.now_ms()
        records = [Record(i, 1_000, None, b"v", () if i in (2, 5) else
                          (("logwright.deliver.after.ms", str(10_000 + i).encode()),)) for i in range(10)]
        await h.produce_records(*records)
        inspected = await h.call(cursor_inspection.handle, 0, {"group_id": GROUP, "topic": TOPIC})
        partition = inspected["partitions"][0]
        assert partition["delayed"] == [{"offset": offset, "deliver_at_ms": now + 10_000 + offset}
                                        for offset in (0, 1, 3)], "the earliest three, offsets 2 and 5 not delayed"
        assert partition["delayed_total"] == 8

    run(tmp_path, scenario)
