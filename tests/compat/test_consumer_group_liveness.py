"""The KIP-848 coordinator's liveness tables (last heartbeat, revocation deadline per member): deleting a group
forgets its own members and reads no other group's (a DeleteGroups of many empty groups beside many live members
went over every member of every group for each group deleted). Real RocksDB, no sockets."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from logwright.compat.coordinators.consumer_coordinator import consumer_coordinator
from logwright.core.consumer_groups.consumer_reconciliation import ConsumerHeartbeat
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
