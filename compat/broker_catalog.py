"""The broker's view of its topics and partitions: lookups by name, id and partition id, the high watermarks and
positions Fetch reads, transactions by id and producer, and the log of catalog changes readers catch up from.

A mixin of `Broker`: committed state comes from the store's projections, what is staged but not committed (topic ids,
partition ids, high watermarks) from what the broker keeps beside them, updated as it stages and commits.
"""

from __future__ import annotations

import uuid
from bisect import bisect_right
from collections.abc import Container, Mapping, Sequence

from logwright.core.log.catalog import FEATURES_KEY, TopicState, collision_form, topic_key
from logwright.core.log.features import FinalizedFeatures, finalized
from logwright.core.log.partition_log import PartitionState, empty_partition, partition_key
from logwright.core.transactions.partition_transactions import PartitionTransactions
from logwright.core.transactions.transactions import (
    TransactionalIdOwner,
    TransactionState,
    owner_key,
    transaction_key,
)
from logwright.eventstore.rocksdb import RocksEventStore

CATALOG_CHANGES_KEPT = 4_096
"""Changes of the topic catalog `BrokerCatalog.catalog_changes_since` can tell (a reader further behind reads every
topic)."""


class BrokerCatalog:
    """The broker's topic and partition lookups (`Broker` inherits them)."""

    store: RocksEventStore
    catalog_version: int
    _catalog_changes: list[tuple[int, str | None]]
    _topic_names_by_id: dict[bytes, str]
    _sorted_names: tuple[int, tuple[str, ...]]
    _names_by_collision_form: dict[str, set[str]]
    _partition_ids: set[int]
    _high_watermarks: dict[int, int]

    def _catalog_changed(self, topic: str | None) -> None:
        self.catalog_version += 1
        changes = self._catalog_changes
        changes.append((self.catalog_version, topic))
        if len(changes) > 2 * CATALOG_CHANGES_KEPT:
            del changes[:-CATALOG_CHANGES_KEPT]

    def catalog_changes_since(self, version: int) -> set[str] | None:
        """The topics created, deleted or given partitions since `catalog_version` was ``version``; ``None`` when that
        is not known (a reload since, or more changes than are kept): then read every topic again."""
        changes = self._catalog_changes
        if version == self.catalog_version:
            return set()
        if version > self.catalog_version or not changes or changes[0][0] > version + 1:
            return None
        names: set[str] = set()
        for _, topic in changes[bisect_right(changes, version, key=_version_of):]:
            if topic is None:
                return None
            names.add(topic)
        return names

    def finalized_features(self) -> FinalizedFeatures:
        """The feature levels finalized now and their epoch (`core.log.features`; UpdateFeatures changes them)."""
        return finalized(self.store.state("catalog", FEATURES_KEY))

    def topic(self, name: str) -> TopicState | None:
        state = self.store.state("catalog", topic_key(name))
        return state if isinstance(state, TopicState) else None

    def topic_by_id(self, topic_id: uuid.UUID | bytes) -> TopicState | None:
        raw = topic_id.bytes if isinstance(topic_id, uuid.UUID) else topic_id
        name = self._topic_names_by_id.get(raw)
        return self.topic(name) if name is not None else None

    def topics(self) -> list[TopicState]:
        """Every topic, by name."""
        return [state for name in self.topic_names() if (state := self.topic(name)) is not None]

    def topic_names(self) -> Sequence[str]:
        """Every topic's name, sorted: kept until a topic is created or deleted (`catalog_version`). Each call went
        over the whole catalog and sorted it (a DescribeTopicPartitions page over 100,000 topics: 21-24 ms)."""
        if self._sorted_names[0] != self.catalog_version:
            self._sorted_names = (self.catalog_version, tuple(sorted(set(self._topic_names_by_id.values()))))
        return self._sorted_names[1]

    def topic_colliding_with(self, topic: str, ignoring: Container[str] = ()) -> str | None:
        """A topic (created or staged) other than ``topic`` of its `collision_form`, leaving out ``ignoring`` (what
        the same CreateTopics created: Kafka's controller sees a request's topics only once it is done)."""
        form = collision_form(topic)
        names = self._names_by_collision_form.get(form) if form is not None else None
        others = sorted(name for name in names or () if name != topic and name not in ignoring)
        return others[0] if others else None

    def _topic_name_added(self, topic: str) -> None:
        form = collision_form(topic)
        if form is not None:
            self._names_by_collision_form.setdefault(form, set()).add(topic)

    def _topic_name_removed(self, topic: str) -> None:
        """After its deletion was staged or committed; a topic of the same name created since (staged after the
        deletion, committed with it) keeps the name. A lookup, not a search of every name: DeleteTopics of 10,000
        topics among 100,000 would have searched 10^9."""
        form = collision_form(topic)
        names = self._names_by_collision_form.get(form) if form is not None else None
        if form is None or names is None or self.topic(topic) is not None:
            return
        names.discard(topic)
        if not names:
            del self._names_by_collision_form[form]

    def partition_id(self, topic: str, index: int) -> int | None:
        state = self.topic(topic)
        if state is None or not 0 <= index < len(state.partition_ids):
            return None
        return state.partition_ids[index]

    def partition(self, partition_id: int) -> PartitionState:
        """The log of a partition the caller found in the catalog (one nothing was appended to has no row)."""
        state = self.store.state("partitions", partition_key(partition_id))
        return state if isinstance(state, PartitionState) else empty_partition(partition_id)

    def partition_exists(self, partition_id: int) -> bool:
        """Whether a topic (created or staged, not deleted) holds this partition id."""
        return partition_id in self._partition_ids

    def transaction(self, transactional_id: str) -> TransactionState | None:
        state = self.store.state("transactions", transaction_key(transactional_id))
        return state if isinstance(state, TransactionState) else None

    def transaction_of_producer(self, producer_id: int) -> TransactionState | None:
        """The transaction state of the transactional id holding ``producer_id`` now, if any."""
        owner = self.store.state("transactions", owner_key(producer_id))
        if not isinstance(owner, TransactionalIdOwner):
            return None
        state = self.transaction(owner.transactional_id)
        return state if state is not None and state.producer_id == producer_id else None

    def high_watermark(self, partition_id: int) -> int:
        return self._high_watermarks.get(partition_id, 0)

    @property
    def high_watermarks(self) -> Mapping[int, int]:
        """Every partition's high watermark but those of empty partitions never appended to (0): for a reader of
        many partitions at once, a dict lookup each (`high_watermark` is a call each)."""
        return self._high_watermarks

    def partition_positions(self, partition_id: int) -> tuple[int, int, int]:
        """The high watermark, last stable offset and log start offset of a partition the caller found in the catalog.

        Read together, for Fetch, which asks them of every partition it names in every request: through
        `high_watermark`, the transactions' row and `partition` (which builds an empty state for a partition nothing
        was appended to) they were most of an empty partition's 3 us, and an idle consumer of 1,000 partitions pays
        for each one twice per long poll."""
        key = partition_key(partition_id)
        high_watermark = self._high_watermarks.get(partition_id, 0)
        transactions = self.store.state("partition_transactions", key)
        stable = (transactions.last_stable_offset(high_watermark) if isinstance(transactions, PartitionTransactions)
                  else high_watermark)
        state = self.store.state("partitions", key)
        return high_watermark, stable, state.log_start_offset if isinstance(state, PartitionState) else 0


def _version_of(change: tuple[int, str | None]) -> int:
    return change[0]
