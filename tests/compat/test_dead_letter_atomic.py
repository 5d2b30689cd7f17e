"""Dead-lettering is one WriteBatch: the copy's append, the archive and the `DeadLettered` event commit together.

The store hands each commit listener the events of exactly one RocksDB WriteBatch, so finding all three in
one listener call is the atomicity claim itself (a crash leaves both or neither). Over a real RocksEventStore
and the share handlers on a manual clock: a REJECT, and the delivery limit reached by lock expiry; a copy the
DLQ refuses leaves the record kept (`DeadLetterDeferred`) until a later archive writes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from logwright.compat.coordinators.dead_letters import DEFERRED_RETRY_MS
from logwright.compat.extensions import clock_control
from logwright.compat.wire.record_batch import decode_records
from logwright.core.events import ConfigChanged, Event, RecordsAppended
from logwright.core.events.cursors import DeadLetterDeferred, DeadLettered, RecordsRejected
from logwright.eventstore.interface import LoggedEvent

from tests.compat.test_share_handlers import GROUP, Harness, acquired, run

DLQ = "dlq.orders"
REJECT = 3


def _prepare(h: Harness, **configs: str) -> list[list[Event]]:
    """Create the DLQ topic, set the group's configs directly, and collect every commit's events."""
    h.broker.create_topic(DLQ, 1, (("errors.deadletterqueue.group.enable", "true"),))
    h.broker.stage([ConfigChanged("group", GROUP, (("share.auto.offset.reset", "earliest"),
                                                    ("errors.deadletterqueue.topic.name", DLQ),
                                                    *configs.items()))])
    commits: list[list[Event]] = []

    def listen(events: Sequence[LoggedEvent]) -> None:
        commits.append([logged.event for logged in events])

    h.store.add_commit_listener(listen)
    return commits


def _the_commit_with(commits: list[list[Event]], kind: type[Event]) -> list[Event]:
    found = [events for events in commits if any(isinstance(event, kind) for event in events)]
    assert len(found) == 1, f"{kind.__name__} in {len(found)} commits"
    return found[0]


def _dlq_headers(h: Harness) -> list[dict[str, bytes | None]]:
    topic = h.broker.topic(DLQ)
    assert topic is not None
    batches = h.broker.store.read_batches(topic.partition_ids[0], 0, 2**31 - 1)
    return [dict(record.headers) for batch in batches for record in decode_records(batch)]


def test_a_reject_commits_the_copy_the_archive_and_the_history_in_one_write_batch(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(3)
        commits = _prepare(h)
        await h.join("m1")
        assert acquired(await h.fetch("m1", 0, topic_id)) == [(0, 2, 1)]
        await h.fetch("m1", 1, topic_id, acks=((1, 1, REJECT), (0, 0, 1), (2, 2, 1)))
        batch = _the_commit_with(commits, DeadLettered)
        dlq_id = h.broker.topic(DLQ).partition_ids[0]  # type: ignore[union-attr]
        assert any(isinstance(e, RecordsAppended) and e.partition_id == dlq_id for e in batch)
        assert any(isinstance(e, RecordsRejected) and e.ranges == ((1, 1),) for e in batch)
        [lettered] = [e for e in batch if isinstance(e, DeadLettered)]
        assert (lettered.deliveries, lettered.consumer, lettered.reason) == (((1, 1, 1),), "m1", "rejected by consumer")
        assert (lettered.dead_letter_partition_id, lettered.dead_letter_base_offset) == (dlq_id, 0)
        [headers] = _dlq_headers(h)
        assert headers["__dlq.errors.offset"] == b"1" and headers["__dlq.errors.group"] == GROUP.encode()

    run(tmp_path, scenario)


def test_the_limit_reached_by_lock_expiry_dead_letters_once_with_no_holder(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(1)
        lock_ms = 15_000  # two expiries within the member's 45 s session: the lock runs out, not the session
        commits = _prepare(h, **{"share.delivery.count.limit": "2", "share.record.lock.duration.ms": str(lock_ms)})
        await h.join("m1")
        for count in (1, 2):
            assert acquired(await h.fetch("m1", count - 1, topic_id)) == [(0, 0, count)]
            h.clock.advance(lock_ms)
            await h.call(clock_control.handle, 0, (0).to_bytes(8, "big"))
        assert acquired(await h.fetch("m1", 2, topic_id)) == []
        [lettered] = [e for e in _the_commit_with(commits, DeadLettered) if isinstance(e, DeadLettered)]
        assert (lettered.deliveries, lettered.consumer, lettered.reason) == (
            ((0, 0, 2),), "", "delivery count limit reached")
        [headers] = _dlq_headers(h)
        assert headers["__dlq.errors.delivery.count"] == b"2"

    run(tmp_path, scenario)


def test_the_limit_reached_by_a_session_timeout_dead_letters_with_the_silent_member(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(1)
        commits = _prepare(h, **{"share.delivery.count.limit": "2"})
        await h.join("m1")
        assert acquired(await h.fetch("m1", 0, topic_id)) == [(0, 0, 1)]
        h.clock.advance(30_000)  # the lock runs out: delivered again
        await h.call(clock_control.handle, 0, (0).to_bytes(8, "big"))
        assert acquired(await h.fetch("m1", 1, topic_id)) == [(0, 0, 2)]
        h.clock.advance(15_000)  # 45 s without a heartbeat: m1 times out holding its second delivery
        await h.call(clock_control.handle, 0, (0).to_bytes(8, "big"))
        [lettered] = [e for e in _the_commit_with(commits, DeadLettered) if isinstance(e, DeadLettered)]
        assert (lettered.deliveries, lettered.consumer) == (((0, 0, 2),), "m1")
        assert len(_dlq_headers(h)) == 1

    run(tmp_path, scenario)


def test_the_limit_reached_by_lock_expiry_with_a_refused_copy_keeps_the_record_until_the_copy_succeeds(
        tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(1)
        lock_ms = 15_000
        commits = _prepare(h, **{"share.delivery.count.limit": "2", "share.record.lock.duration.ms": str(lock_ms)})
        h.broker.stage([ConfigChanged("topic", DLQ, (("errors.deadletterqueue.group.enable", "false"),))])
        await h.join("m1")
        for count in (1, 2):
            assert acquired(await h.fetch("m1", count - 1, topic_id)) == [(0, 0, count)]
            h.clock.advance(lock_ms)
            await h.call(clock_control.handle, 0, (0).to_bytes(8, "big"))
        [deferred] = [e for e in _the_commit_with(commits, DeadLetterDeferred) if isinstance(e, DeadLetterDeferred)]
        assert (deferred.deliveries, deferred.consumer, deferred.reason) == (
            ((0, 0, 2),), "", "delivery count limit reached")
        assert "errors.deadletterqueue.group.enable=true" in deferred.error
        assert not any(isinstance(e, RecordsRejected | DeadLettered) for batch in commits for e in batch)
        h.broker.stage([ConfigChanged("topic", DLQ, (("errors.deadletterqueue.group.enable", "true"),))])
        assert acquired(await h.fetch("m1", 2, topic_id)) == []  # kept, waiting out DEFERRED_RETRY_MS
        h.clock.advance(DEFERRED_RETRY_MS)  # m1's 45 s session runs out meanwhile: m2 takes over
        await h.call(clock_control.handle, 0, (0).to_bytes(8, "big"))
        await h.join("m2")
        assert acquired(await h.fetch("m2", 0, topic_id)) == [(0, 0, 3)]
        h.clock.advance(lock_ms)  # expires again at the limit: now the copy is written
        await h.call(clock_control.handle, 0, (0).to_bytes(8, "big"))
        [headers] = _dlq_headers(h)
        assert headers["__dlq.errors.delivery.count"] == b"3"
        assert acquired(await h.fetch("m2", 1, topic_id)) == []

    run(tmp_path, scenario)
