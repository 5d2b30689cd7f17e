"""A Failover switch delay still running when the broker restarts holds until it ends on the broker clock.

The broker restarts in-process (store closed and reopened, a new Broker on a manual clock resumed at the
same time); requests go through the real handlers over a real RocksEventStore.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka import share_group_heartbeat
from logwright.core.events import ConfigChanged
from logwright.eventstore.check import check_store

from tests.compat.test_share_handlers import GROUP, Harness, acquired, run

FAILOVER = (("share.auto.offset.reset", "earliest"), ("logwright.subscription.mode", "failover"),
            ("logwright.failover.switch.delay.ms", "1000"))


def broker_run(tmp_path: Path, now_ms: int | None, scenario: Callable[[Harness], Awaitable[None]]) -> int:
    """Run ``scenario`` on a broker (the built-in plugins, failover among them) whose manual clock starts at
    ``now_ms``; its end time."""
    return run(tmp_path, scenario, now_ms=now_ms).clock.now_ms()


async def advance(h: Harness, milliseconds: int) -> None:
    h.clock.advance(milliseconds)
    h.broker.clock_advanced()
    h.broker.coordinators.share_groups.tick()
    await h.broker.durable()


def test_a_running_switch_delay_survives_a_restart(tmp_path: Path) -> None:
    topic: dict[str, uuid.UUID] = {}

    async def before_restart(h: Harness) -> None:
        h.broker.stage([ConfigChanged("group", GROUP, FAILOVER)])
        topic["id"] = topic_id = await h.produce(4)
        assert (await h.join("a")).error_code == ErrorCode.NONE
        assert acquired(await h.fetch("a", 0, topic_id)) == [(0, 3, 1)]  # a is active at once
        assert (await h.join("b")).error_code == ErrorCode.NONE  # b stands by
        left = await h.call(share_group_heartbeat.handle, 1, ShareGroupHeartbeatRequest(
            group_id=GROUP, member_id="a", member_epoch=-1, rack_id=None, subscribed_topic_names=None))
        assert left.error_code == ErrorCode.NONE  # b is active after the delay; a's records stay held while its
        # share session is open (no closing request comes here): the restart loses the session, and the first
        # timer pass after it releases them (`ShareCoordinator._left_holding`)
        await advance(h, 400)
        assert acquired(await h.fetch("b", 0, topic["id"])) == []

    async def after_restart(h: Harness) -> None:
        assert acquired(await h.fetch("b", 0, topic["id"])) == [], "the delay went on across the restart"
        await advance(h, 599)
        assert acquired(await h.fetch("b", 1, topic["id"])) == []
        await advance(h, 1)
        assert [first for first, _last, _count in acquired(await h.fetch("b", 2, topic["id"]))] == [0]

    stopped_at = broker_run(tmp_path, None, before_restart)
    broker_run(tmp_path, stopped_at, after_restart)
    harness = Harness(tmp_path / "data")
    try:
        report = check_store(harness.store)
        assert report.consistent, report.differences
    finally:
        harness.store.close()
