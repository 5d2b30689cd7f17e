"""The KIP-848 coordinator's liveness tables (last heartbeat, revocation deadline per member): deleting a group
forgets its own members and reads no other group's (a DeleteGroups of many empty groups beside many live members
went over every member of every group for each group deleted), and members expiring together leave in one
rebalance. Real RocksDB, no sockets."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from logwright.compat.coordinators.consumer_coordinator import consumer_coordinator, consumer_group
from logwright.core.clock import ManualClock
from logwright.core.consumer_groups.consumer_reconciliation import ConsumerHeartbeat
from logwright.core.events.consumer_groups import (
    ConsumerGroupEpochBumped,
    ConsumerMemberLeft,
    ConsumerTargetAssignmentComputed,
)
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import in_process_broker


class Unwalkable(dict[Any, Any]):
    """A table that may be read by key but not walked whole."""

    def __iter__(self) -> Any:
        raise AssertionError("the whole table was walked")


def test_forgetting_a_group_reads_only_its_own_members(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path / "data")

    async def run() -> None:
        broker = in_process_broker(store)
        broker.create_topic("t", 4)
        coordinator = consumer_coordinator(broker)
        members: dict[str, str] = {}
        for group in ("a", "b", "c"):
            for _ in range(3):
                member_id, _ = await coordinator.heartbeat(ConsumerHeartbeat(
                    group, "", 0, rebalance_timeout_ms=60_000, subscribed_topic_names=("t",), owned=()))
                members[member_id] = group
        last_seen, revoke_by = Unwalkable(coordinator._last_seen), Unwalkable(coordinator._revoke_by)
        coordinator._last_seen, coordinator._revoke_by = last_seen, revoke_by
        coordinator.forget_group("b")
        coordinator.forget_group("never-seen")
        assert {group for group, _ in dict.keys(last_seen)} == {"a", "c"}
        assert all(group != "b" for group, _ in dict.keys(revoke_by))
        assert len(dict.keys(last_seen)) == 6
        member_id, state = await coordinator.heartbeat(ConsumerHeartbeat(
            "b", "", 0, rebalance_timeout_ms=60_000, subscribed_topic_names=("t",), owned=()))
        assert ("b", member_id) in last_seen, "a group deleted and joined again is followed again"

    try:
        asyncio.run(run())
    finally:
        store.close()


def test_members_timing_out_together_leave_in_one_rebalance(tmp_path: Path) -> None:
    """One timer pass removes a group's expired members together, in one epoch bump: a rebalance (an assignment) for
    each member made 1,000 members timing out at once cost 1,000 assignments of the whole group. The survivor's next
    heartbeat computes the one assignment."""
    store = RocksEventStore(tmp_path / "data")

    async def run() -> None:
        clock = ManualClock()
        broker = in_process_broker(store, clock=clock)
        broker.create_topic("t", 12)
        coordinator = consumer_coordinator(broker)
        joined = []
        for _ in range(5):
            member_id, state = await coordinator.heartbeat(ConsumerHeartbeat(
                "g", "", 0, rebalance_timeout_ms=60_000, subscribed_topic_names=("t",), owned=()))
            joined.append(member_id)
        clock.advance(coordinator.session_timeout_ms("g") - 1)
        survivor = joined[0]
        state = consumer_group(broker, "g")
        assert state is not None
        member = state.member(survivor)
        assert member is not None
        await coordinator.heartbeat(ConsumerHeartbeat("g", survivor, member.member_epoch))
        clock.advance(1)
        events = coordinator.tick()
        left = [event for event in events if isinstance(event, ConsumerMemberLeft)]
        assert sorted(event.member_id for event in left) == sorted(joined[1:])
        assert sum(isinstance(event, ConsumerGroupEpochBumped) for event in events) == 1, "one rebalance"
        assert not any(isinstance(event, ConsumerTargetAssignmentComputed) for event in events), \
            "computed by the next heartbeat, as Kafka (KIP-1263)"
        broker.commit_now()
        state = consumer_group(broker, "g")
        assert state is not None and [m.member_id for m in state.members] == [survivor]
        assert state.phase == "Assigning"
        clock.advance(coordinator.assignment_pace("g").interval_ms)  # the survivor's heartbeat assigned at 44.999 s
        await coordinator.heartbeat(ConsumerHeartbeat("g", survivor, member.member_epoch))
        state = consumer_group(broker, "g")
        assert state is not None and state.target(survivor) == (("t", tuple(range(12))),)

    try:
        asyncio.run(run())
    finally:
        store.close()
