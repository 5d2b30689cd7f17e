"""A subscription driven through the real cursor commands by a subscription mode, without a broker.

What the share-group coordinator does with a mode (join, leave, build a `DispatchView`, acquire what
`eligible` allows, acknowledge), in memory and on a clock the test sets, so a mode's behaviour is tested in
milliseconds: ``Subscription(MyMode(), keys=[b"a", b"b"])``, then ``join``, ``fetch``, ``ack``, ``leave``.
"""

from __future__ import annotations

from collections.abc import Mapping

from logwright.core.cursors import cursor_commands as commands
from logwright.core.cursors.cursor import CURSORS, CursorState, cursor_key
from logwright.core.cursors.key_hash import key_hash
from logwright.core.cursors.subscription_mode import DispatchView, Membership, ModeConsumer, SubscriptionMode
from logwright.core.events import Event
from logwright.core.events.cursors import SubscriptionCreated
from logwright.core.projection import fold
from logwright.core.rangeset import RangeSet

LOCK_MS = 30_000
"""How long an acquisition lock lasts in the harness (records return when `now_ms` passes it)."""


class Subscription:
    """One subscription on ``partition_count`` partitions of a topic whose records have ``keys``.

    Every state change goes through the cursor commands and the CURSORS fold, and the mode decides
    membership and eligibility, as the share-group coordinator does.
    """

    def __init__(self, mode: SubscriptionMode, keys: list[bytes | None] | None = None, partition_count: int = 1,
                 records: int = 10, settings: Mapping[str, str] | None = None) -> None:
        self.mode = mode
        self.keys: list[bytes | None] = keys if keys is not None else [None] * records
        self.partition_count = partition_count
        self.membership = Membership("sub")
        self.settings = dict(settings or {})
        self.now_ms = 0
        self.log: dict[int, list[Event]] = {
            p: [SubscriptionCreated("sub", p, "t", 0)] for p in range(partition_count)}

    def state(self, partition: int = 0) -> CursorState:
        state = fold(CURSORS, self.log[partition])[cursor_key("sub", partition)]
        assert isinstance(state, CursorState)
        return state

    def publish(self, *keys: bytes | None) -> None:
        self.keys.extend(keys)

    def join(self, consumer_id: str, **fields: object) -> None:
        self.membership = self.mode.join(self.membership, ModeConsumer(consumer_id, **fields))  # type: ignore[arg-type]

    def leave(self, consumer_id: str) -> None:
        self.membership = self.mode.leave(self.membership, consumer_id)
        for partition in range(self.partition_count):
            self.log[partition].extend(commands.release_consumer(self.state(partition), consumer_id, self.now_ms,
                                                                 False))

    def view(self, partition: int = 0) -> DispatchView:
        in_flight: dict[str, RangeSet] = {}
        for delivery in self.state(partition).in_flight:
            held = in_flight.get(delivery.consumer, RangeSet())
            in_flight[delivery.consumer] = held.add(delivery.first, delivery.last)
        return DispatchView(self.membership, partition, self.partition_count, in_flight,
                            lambda offset: key_hash(self.keys[offset]), self.settings)

    def fetch(self, consumer_id: str, max_records: int = 100, partition: int = 0) -> list[int]:
        state = self.state(partition)
        candidates = RangeSet.from_ranges(commands.available(state, 0, len(self.keys), self.now_ms))
        eligible = self.mode.eligible(self.view(partition), consumer_id, candidates, max_records)
        assert set(eligible) <= set(candidates)
        acquired = commands.acquire(state, 0, len(self.keys), consumer_id, max_records, self.now_ms, LOCK_MS,
                                    eligible=eligible)
        if acquired is None:
            return []
        self.log[partition].append(acquired)
        return [offset for first, last in acquired.ranges for offset in range(first, last + 1)]

    def ack(self, consumer_id: str, *offsets: int, partition: int = 0) -> None:
        ranges = RangeSet.of(offsets).ranges
        self.log[partition].append(commands.acknowledge(self.state(partition), consumer_id, ranges))

    def ack_cumulative(self, consumer_id: str, offset: int, partition: int = 0) -> None:
        acked = commands.acknowledge_cumulative(self.state(partition), consumer_id, offset, len(self.keys))
        if acked is not None:
            self.log[partition].append(acked)
