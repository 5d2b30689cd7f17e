"""The group metadata cleanup: every ``offsets.retention.check.interval.ms`` on the broker clock, expire committed
offsets and delete the groups left empty without offsets (`core.groups.offset_expiry` decides, as Kafka 4.4).

Kafka runs this pass on a timer from its coordinator's start; so does this one, from the broker's start, on a
`DeadlineTimer` (nothing polls; on a manual clock LogwrightAdvanceClock runs it when due). It looks at every classic
group, KIP-848 consumer group and group of committed offsets, share groups aside (Kafka skips them too). Each group
is decided and staged in one turn, from the states of that turn, so a commit or join between two slices is seen; a
pass gives way to other requests every `OFFSETS_PER_TURN` offsets looked at, and on a manual clock runs whole inside
the tick. What a group's deletion forgets in memory (sessions, members' liveness) goes with it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from logwright.compat.broker import Broker
from logwright.compat.coordinators.consumer_coordinator import consumer_group
from logwright.compat.coordinators.group_coordinator import committed_offsets, group_state, subscribed_topics
from logwright.compat.coordinators.periodic_pass import PeriodicPass
from logwright.core.groups.offset_expiry import Cleanup, cleanup
from logwright.core.transactions.transactions import pending_offsets

log = logging.getLogger(__name__)

OFFSETS_PER_TURN = 5_000
"""Groups and committed offsets looked at before a pass gives way to other requests."""


class GroupExpiry(PeriodicPass):
    """One broker's cleanup pass and its timer; `tick` starts the pass when it is due."""

    what = "the group metadata cleanup"

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker, "offsets.retention.check.interval.ms", "logwright-group-expiry")

    def retention_ms(self) -> int:
        return int(self.broker.broker_config("offsets.retention.minutes")) * 60_000

    def group_ids(self) -> list[str]:
        """Every group the pass looks at, sorted: classic, KIP-848 and those of committed offsets only."""
        store = self.broker.store
        ids = set(store.entities("groups"))
        ids.update(store.entities("consumer_groups"))
        ids.update(self.broker.coordinators.groups.groups_with_offsets())
        return sorted(ids)

    def slices(self) -> Iterator[None]:
        """Decide and stage each group in turn; yields after every `OFFSETS_PER_TURN` groups and offsets."""
        retention_ms = self.retention_ms()
        looked_at, expired, deleted = 0, 0, 0
        pending = pending_offsets(self.broker.store.entities("transactions").values())
        for group_id in self.group_ids():
            if looked_at >= OFFSETS_PER_TURN:
                yield
                looked_at = 0
                pending = pending_offsets(self.broker.store.entities("transactions").values())
            offsets, decided = self._clean(group_id, pending.get(group_id, set()), retention_ms)
            looked_at += 1 + offsets
            if decided.deleted:
                deleted += 1
            else:
                expired += len(decided.events)
        if expired or deleted:
            log.info("group metadata cleanup: %d committed offsets expired, %d groups deleted", expired, deleted)

    def _clean(self, group_id: str, pending: set[tuple[str, int]], retention_ms: int) -> tuple[int, Cleanup]:
        """Expire what is due of one group, or delete it: the offsets looked at, and what was decided."""
        classic, consumer = group_state(self.broker, group_id), consumer_group(self.broker, group_id)
        offsets = committed_offsets(self.broker, group_id)
        decided = cleanup(group_id, classic, consumer, offsets, subscribed_topics(classic), pending,
                          self.broker.clock.now_ms(), retention_ms)
        if decided.events:
            self.broker.stage(decided.events)
            self.staged()
            if decided.deleted:
                self.broker.coordinators.groups.sessions.forget(group_id)
                self.broker.coordinators.consumer_groups.forget_group(group_id)
        return (len(offsets) if offsets is not None else 0), decided
