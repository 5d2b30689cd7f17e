"""Producer state expiry: every ``producer.id.expiration.check.interval.ms`` on the broker clock (Kafka's default 10
minutes), forget the producers idle on a partition for ``producer.id.expiration.ms`` (1 day), as Kafka's producer
state manager does, so the ``producers`` projection, which every broker holds in memory, stays bounded however many
short-lived idempotent producers (the Java client's default) come and go.

A forgotten producer's next batch on the partition is taken as its first, at any sequence (`check_sequence`), as
Kafka 4.4 takes it. A producer with a transaction open on the partition is kept. Kafka measures idleness from the
producer's last record timestamp, which the client sets: a producer replaying records stamped a day ago lost its
state at the next check, and with it the deduplication of its retries. Ours is broker time since the producer's
last batch or marker there (`Broker.producer_activity`, in memory; after a restart counted from the start, so a
restart only ever delays an expiry). The pass (`PeriodicPass`) gives way every `ROWS_PER_TURN` rows.
"""

from __future__ import annotations

from collections.abc import Iterator

from logwright.compat.broker import Broker
from logwright.compat.coordinators.periodic_pass import PeriodicPass
from logwright.core.events import ProducerStatesExpired
from logwright.core.log.producers import ProducerState, idle_producers
from logwright.core.transactions.partition_transactions import PartitionTransactions

ROWS_PER_TURN = 10_000
"""Producer states looked at before a pass gives way to other requests."""


class ProducerExpiry(PeriodicPass):
    """One broker's expiry pass and its timer; `tick` starts the pass when it is due."""

    what = "the producer state expiry"

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker, "producer.id.expiration.check.interval.ms", "logwright-producer-expiry")
        self._started_ms = broker.clock.now_ms()

    def slices(self) -> Iterator[None]:
        """Decide and stage each slice of `ROWS_PER_TURN` rows in its own turn, from the states of that turn."""
        keys = [key for key in self.broker.store.entities("producers") if key[:1].isdigit()]
        yield from self.in_slices(keys, ROWS_PER_TURN, self._expire)

    def _expire(self, keys: list[str]) -> int:
        store, activity = self.broker.store, self.broker.producer_activity
        rows = {key: store.state("producers", key) for key in keys}
        open_on: dict[int, frozenset[int]] = {}
        for key in rows:
            partition_id = int(key.partition("/")[0])
            if partition_id not in open_on:
                transactions = store.state("partition_transactions", str(partition_id))
                open_on[partition_id] = frozenset(entry.producer_id for entry in transactions.open) if isinstance(
                    transactions, PartitionTransactions) else frozenset()
        idle = idle_producers({key: row for key, row in rows.items() if isinstance(row, ProducerState)},
                              activity, open_on, self.broker.clock.now_ms(),
                              int(self.broker.broker_config("producer.id.expiration.ms")), self._started_ms)
        if not idle:
            return 0
        self.broker.stage([ProducerStatesExpired(partition_id, producer_ids)
                           for partition_id, producer_ids in sorted(idle.items())])
        self.staged()
        for partition_id, producer_ids in idle.items():
            for producer_id in producer_ids:
                activity.pop(f"{partition_id}/{producer_id}", None)
        return sum(map(len, idle.values()))
