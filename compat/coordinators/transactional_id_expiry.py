"""Transactional id expiry: every ``transaction.remove.expired.transaction.cleanup.interval.ms`` on the broker clock
(Kafka's default 1 hour), forget the transactional ids idle ``transactional.id.expiration.ms`` (7 days) without a
transaction open, as Kafka's transaction coordinator does (`core.transactions.transactions.expired_transactional_ids`
decides). Without it the ``transactions`` projection, held in memory, grew by a row for every transactional id ever
initialized: Flink's Kafka sink names new ones at every checkpoint. A later InitProducerId of a forgotten id starts
afresh with a new producer id; the old one's batches are INVALID_PRODUCER_ID_MAPPING, as on Kafka.
"""

from __future__ import annotations

from collections.abc import Iterator

from logwright.compat.broker import Broker
from logwright.compat.coordinators.periodic_pass import PeriodicPass
from logwright.core.transactions.transactions import TransactionState, expired_transactional_ids

IDS_PER_TURN = 10_000
"""Transactional ids looked at before a pass gives way to other requests."""


class TransactionalIdExpiry(PeriodicPass):
    """One broker's expiry pass and its timer; `tick` starts the pass when it is due."""

    what = "the transactional id expiry"

    def __init__(self, broker: Broker) -> None:
        super().__init__(broker, "transaction.remove.expired.transaction.cleanup.interval.ms",
                         "logwright-transactional-id-expiry")
        self._started_ms = broker.clock.now_ms()

    def slices(self) -> Iterator[None]:
        """Decide and stage each slice of `IDS_PER_TURN` ids in its own turn, from the states of that turn."""
        keys = [key for key in self.broker.store.entities("transactions") if key.startswith("txn/")]
        yield from self.in_slices(keys, IDS_PER_TURN, self._expire)

    def _expire(self, keys: list[str]) -> int:
        found = (self.broker.store.state("transactions", key) for key in keys)
        states = [state for state in found if isinstance(state, TransactionState)
                  and state.transactional_id not in self.broker.ending_transactions]
        decided = expired_transactional_ids(states, self.broker.clock.now_ms(),
                                            int(self.broker.broker_config("transactional.id.expiration.ms")),
                                            self._started_ms)
        if decided is None:
            return 0
        self.broker.stage([decided])
        self.staged()
        return len(decided.transactional_ids)
