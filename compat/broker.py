"""The running broker's shared state: the store, staging and high watermarks (its group commit, lookups and waits are
the mixins `broker_commits`, `broker_catalog`, `broker_configs` and `broker_waits`).

Handlers run as tasks on one event loop and stage their effects with `stage`; `durable()` resolves once
the WriteBatch holding them is written, which happens once per loop turn (group commit). High
watermarks move only when a commit lands, so Fetch never returns data that a crash could lose.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import struct
import uuid
from collections.abc import Callable, Collection, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from logwright.compat.authorization import BrokerAuthorizer
from logwright.compat.broker_catalog import BrokerCatalog
from logwright.compat.broker_commits import STAGED_SINCE_FAILURE, STORE_RETRY_MS, WRITES_AHEAD_PER_COMMIT, BrokerCommits
from logwright.compat.broker_configs import BrokerConfigs
from logwright.compat.broker_waits import BrokerWaits
from logwright.compat.client_quota_enforcement import ClientQuotaEnforcement
from logwright.compat.delegation_tokens import DelegationTokenBook
from logwright.compat.fetch_sessions import FetchSessionCache
from logwright.compat.start_at_once import InTurnFuture
from logwright.compat.wire.appended_batches import appended_batch
from logwright.core.clock import Clock
from logwright.core.config.configs import ConfigRegistry, default_registry
from logwright.core.cursors.plugin_decisions import Admission, AppendRequest, TopicScope
from logwright.core.events import (
    ConfigChanged,
    Event,
    LogTruncated,
    PartitionsCreated,
    RecordsAppended,
    TopicCreated,
    TopicDeleted,
)
from logwright.core.log.catalog import (
    COUNTER_KEY,
    PartitionIdCounter,
    TopicState,
    create_topic,
)
from logwright.core.log.index_hooks import EventDerivation, HeldBack, HoldBackQuery, StagedChange
from logwright.core.log.internal_topics import CONSUMER_OFFSETS, CONSUMER_OFFSETS_CONFIGS
from logwright.core.log.partition_log import PartitionState, partition_key
from logwright.eventstore.clock import SystemClock
from logwright.eventstore.interface import LoggedEvent, StoredBatch
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.eventstore.store_errors import StoreFailed

if TYPE_CHECKING:
    from logwright.compat.wiring import Coordinators

log = logging.getLogger(__name__)

NODE_ID = 1
_OFFSET = struct.Struct(">Q")


@dataclass(slots=True)
class BrokerSettings:
    host: str = "127.0.0.1"
    port: int = 9092
    advertised_host: str | None = None
    advertised_port: int | None = None
    cluster_id: str = "logwright-cluster"
    overrides: dict[str, str] = field(default_factory=dict)
    sasl_host: str | None = None
    sasl_port: int = 0
    """A SASL_PLAINTEXT listener besides the PLAINTEXT one (`compat.authentication`); None: none."""
    sasl_advertised_host: str | None = None
    sasl_advertised_port: int | None = None
    ssl_host: str | None = None
    ssl_port: int = 0
    """An SSL listener besides the PLAINTEXT one (`compat.tls`); None: none."""
    ssl_advertised_host: str | None = None
    ssl_advertised_port: int | None = None
    sasl_ssl_host: str | None = None
    sasl_ssl_port: int = 0
    """A SASL_SSL listener (SASL over TLS) besides the PLAINTEXT one; None: none."""
    sasl_ssl_advertised_host: str | None = None
    sasl_ssl_advertised_port: int | None = None

    @property
    def tls(self) -> bool:
        """Whether a listener needs the ``ssl.*`` stores."""
        return self.ssl_host is not None or self.sasl_ssl_host is not None

    @property
    def public_host(self) -> str:
        return self.advertised_host or self.host

    @property
    def public_port(self) -> int:
        return self.advertised_port or self.port


def with_static_configs(settings: BrokerSettings) -> BrokerSettings:
    """The settings with the static keys Kafka reports for every broker filled in where not given.

    ``node.id`` is Kafka's static broker id (test harnesses written for Kafka often use 0);
    ``listeners`` and ``advertised.listeners`` say where this broker serves, in Kafka's form.
    """
    listeners = [f"PLAINTEXT://{settings.host}:{settings.port}"]
    advertised = [f"PLAINTEXT://{settings.public_host}:{settings.public_port}"]
    if settings.sasl_host is not None:
        listeners.append(f"SASL_PLAINTEXT://{settings.sasl_host}:{settings.sasl_port}")
        advertised.append(f"SASL_PLAINTEXT://{settings.sasl_advertised_host or settings.sasl_host}:"
                          f"{settings.sasl_advertised_port or settings.sasl_port}")
    if settings.ssl_host is not None:
        listeners.append(f"SSL://{settings.ssl_host}:{settings.ssl_port}")
        advertised.append(f"SSL://{settings.ssl_advertised_host or settings.ssl_host}:"
                          f"{settings.ssl_advertised_port or settings.ssl_port}")
    if settings.sasl_ssl_host is not None:
        listeners.append(f"SASL_SSL://{settings.sasl_ssl_host}:{settings.sasl_ssl_port}")
        advertised.append(f"SASL_SSL://{settings.sasl_ssl_advertised_host or settings.sasl_ssl_host}:"
                          f"{settings.sasl_ssl_advertised_port or settings.sasl_ssl_port}")
    static = {"node.id": str(NODE_ID), "listeners": ",".join(listeners), "advertised.listeners": ",".join(advertised)}
    node_id = settings.overrides.get("node.id", static["node.id"])
    if not node_id.isdigit():
        raise ValueError(f"node.id must be a non-negative integer, got {node_id!r}")
    return dataclasses.replace(settings, overrides={**static, **settings.overrides})


class Broker(BrokerCommits, BrokerCatalog, BrokerConfigs, BrokerWaits):
    """One broker instance: everything a handler needs, owned by the event loop's thread."""

    def __init__(
        self,
        store: RocksEventStore,
        settings: BrokerSettings | None = None,
        configs: ConfigRegistry | None = None,
        clock: Clock | None = None,
        *,
        admission: Callable[[AppendRequest], Admission] | None = None,
        admission_scope: TopicScope | None = None,
        derive_events: EventDerivation | None = None,
        hold_back: Callable[[HoldBackQuery], HeldBack | None] | None = None,
        coordinators: Callable[[Broker], Coordinators] | None = None,
    ) -> None:
        """``coordinators`` builds the group and transaction services once the rest is ready (the wiring's
        `logwright.compat.wiring.compose_broker` passes it; a broker without them serves no group API)."""
        self.store = store
        self.settings = with_static_configs(settings or BrokerSettings())
        self.configs = configs or default_registry()
        self.clock: Clock = clock or SystemClock()
        self.node_id = int(self.settings.overrides["node.id"])
        self.admission = admission
        """The plugins' ``logwright_admit_append`` chain; ``None``: admit every append."""
        self._admission_scope = admission_scope
        """The topics that chain acts on (`admission_applies`); ``None``: every topic."""
        self.derive_events = derive_events
        """The plugins' ``logwright_derive_events``, run on everything staged; ``None``: no plugin derives."""
        self.hold_back = hold_back
        """The plugins' ``logwright_hold_back`` (see `held_back`); ``None``: nothing is ever held back."""
        self.plugin_memo: dict[str, Any] = {}
        """Plugins' derived caches (`index_hooks`), emptied whenever the store reloads its state."""
        self.connections: Collection[object] = ()
        """The server's open connections (`compat.server.KafkaServer` sets it): what broker stats count."""
        self.connection_closed_listeners: list[Callable[[int], None]] = []
        """Told the id of each connection the server closed (`connection_closed`): state a client keeps on one
        connection, such as a share session, ends with it."""
        self._partition_topics: dict[int, tuple[str, int]] = {}
        self._gathered: tuple[list[Event], list[StoredBatch]] | None = None
        """What `stage` took inside `staging_together`, for the plugins to derive from once at its end."""
        self._commit_waiters: list[InTurnFuture[None]] = []
        self._commit_scheduled = False
        self._commits_held = False
        """A `stage_over_turns` is between two of its parts: scheduled commits wait for its end."""
        self._commit_handle: asyncio.Handle | None = None
        self._row_slices_left: int | None = None
        """Slices of changed rows the scheduled commit may still put before it commits (`ROWS_PUT_PER_TURN`)."""
        self._writing_ahead = False
        """The scheduled commit waits for its batch files' writes on their thread (`_write_ahead`)."""
        self._sealed_waiters: list[InTurnFuture[None]] = []
        """Requests waiting for the sealed first part of a pipelined commit (`_finish_sealed`)."""
        self._writes_ahead_left = WRITES_AHEAD_PER_COMMIT
        self._staging_over_turns: asyncio.Lock | None = None
        self._commits_released: asyncio.Event | None = None
        """Set when a staging over turns lets commits go again (`commits_free`)."""
        self._started_work: set[asyncio.Task[None]] = set()
        self.producer_activity: dict[str, int] = {}
        """Broker time of each producer's last batch or marker on a partition (`producer_key`), for its expiry
        (`ProducerExpiry`); in memory, so a restart counts from the start."""
        self.ending_transactions: dict[str, tuple[int, int]] = {}
        """Transactional ids whose end is staged over several turns, with their producer id and the epoch of their
        markers (`transaction_coordinator.complete`): their requests are answered CONCURRENT_TRANSACTIONS meanwhile,
        and their producers' transactional batches are refused."""
        self._high_watermarks: dict[int, int] = {}
        self._data_arrived: asyncio.Event | None = None
        self._partition_waiters: dict[int, set[asyncio.Future[None]]] = {}
        """Long polls waiting for records on given partitions (`wait_for_data` with ``partition_ids``)."""
        self._clock_moved: asyncio.Event | None = None
        self._topic_names_by_id: dict[bytes, str] = {}
        self._sorted_names: tuple[int, tuple[str, ...]] = (-1, ())
        self._names_by_collision_form: dict[str, set[str]] = {}
        self._partition_ids: set[int] = set()
        """Every partition of every topic, staged creations and deletions included (the partitions projection keeps no
        row for an empty partition, so it cannot say which exist)."""
        self.catalog_version = 0
        """Moves whenever a topic or partition is created or deleted (staged or reloaded): what a reader keeping
        something derived from the topics (the consumer coordinator's `TopicCatalog`) checks."""
        self.log_starts_version = 0
        """Moves whenever a partition's log start offset may have moved (a `LogTruncated` committed, a reload): what a
        fetch session checks before it trusts the log starts it last answered (`compat.kafka.fetch`). A Fetch read
        between a truncation's staging and its commit may trust the old ones once; the next one reads them again."""
        self._catalog_changes: list[tuple[int, str | None]] = []
        """``(version, topic)`` of the latest moves of `catalog_version` (``None``: a reload), for
        `catalog_changes_since`."""
        self._failed_commits = 0
        self._store_retry_at_ms = 0
        self._topic_configs: dict[tuple[Any, int], tuple[Mapping[str, str], bool]] = {}
        """`topic_configs` and `admission_applies` by (a topic's overrides, the number of registered config keys)."""
        self._load_from_store()
        self.fetch_sessions = FetchSessionCache(
            int(self.broker_config("max.incremental.fetch.session.cache.slots")),
            int(self.broker_config("logwright.fetch.session.cache.partitions")))
        """Incremental fetch sessions (KIP-227): kept in memory only, as Kafka keeps them; after a restart a client's
        next incremental fetch is FETCH_SESSION_ID_NOT_FOUND and it starts over with a full one."""
        self.client_quotas = ClientQuotaEnforcement(self)
        """Kafka's producer and consumer byte-rate quotas: what Produce and Fetch record, and who is muted."""
        self.delegation_tokens = DelegationTokenBook(self)
        """Delegation tokens: settings, lookups by HMAC, the SCRAM secret of each (`compat.delegation_tokens`)."""
        self.authorizer = BrokerAuthorizer.configured(self)
        """The stored ACLs enforced (``authorizer.class.name``); ``None``: every request is allowed."""
        store.add_commit_listener(self._on_commit, (RecordsAppended, TopicDeleted, LogTruncated, ConfigChanged))
        store.add_reload_listener(self._reloaded)
        self._coordinators = coordinators(self) if coordinators is not None else None

    @property
    def coordinators(self) -> Coordinators:
        """The group, consumer-group, share-group and transaction coordinators built with this broker."""
        if self._coordinators is None:
            raise RuntimeError("this broker was built without coordinators: build it with "
                               "logwright.compat.wiring.compose_broker")
        return self._coordinators

    def _load_from_store(self) -> None:
        """High watermarks and topic ids from the store's committed state: at start and after a reload."""
        self.plugin_memo.clear()
        partitions = self.store.entities("partitions")
        self._high_watermarks = {int(key): state.next_offset for key, state in partitions.items()}
        topics = [state for state in self.store.entities("catalog").values() if isinstance(state, TopicState)]
        self._topic_names_by_id = {state.topic_id: state.name for state in topics}
        self._names_by_collision_form = {}
        for state in topics:
            self._topic_name_added(state.name)
        self._partition_ids = {partition_id for state in topics for partition_id in state.partition_ids}
        self._catalog_changed(None)
        self.log_starts_version += 1

    def _reloaded(self) -> None:
        """The store dropped everything staged since its last commit and reloaded from disk: fail whoever still
        waits for any of it to be written, wherever the reload came from (a commit the store made for a truncation
        failed, or the sealed part of a pipelined commit), then reload what the broker keeps of it."""
        waiters, self._commit_waiters = [*self._sealed_waiters, *self._commit_waiters], []
        self._sealed_waiters = []
        self._failed_commits += 1
        self._fail_waiters(waiters, StoreFailed(f"the store at {self.store.path} dropped what was staged and "
                                                f"reloaded from disk: {self.store.failed or 'a write failed'}"))
        self._load_from_store()

    # -- topics (looked up by `BrokerCatalog`, configured through `BrokerConfigs`) ---------------

    def create_topic(
        self, name: str, partitions: int, configs: Sequence[tuple[str, str]] = (), validate_only: bool = False
    ) -> TopicCreated:
        """Decide and stage a topic creation (only decide if ``validate_only``); raises a `DomainError` if refused."""
        counter = self.store.state("catalog", COUNTER_KEY)
        event = create_topic(
            self.topic(name),
            counter if isinstance(counter, PartitionIdCounter) else None,
            name,
            partitions,
            tuple(configs),
            uuid.uuid4().bytes,
            self.configs,
        )
        if not validate_only:
            self.stage([event])
        return event

    def ensure_consumer_offsets_topic(self) -> bool:
        """Stage ``__consumer_offsets`` with Kafka's partition count and configs if it is missing, as Kafka
        creates it on the first coordinator lookup; ``True`` when the caller must await `durable`."""
        if self.topic(CONSUMER_OFFSETS) is not None:
            return False
        self.create_topic(CONSUMER_OFFSETS, int(self.broker_config("offsets.topic.num.partitions")),
                          CONSUMER_OFFSETS_CONFIGS)
        return True

    def auto_create_enabled(self) -> bool:
        return self.broker_config("auto.create.topics.enable").lower() == "true"

    # -- group commit -------------------------------------------------------------------------

    def connection_closed(self, connection_id: int) -> None:
        """The server closed the connection ``connection_id``: tell whoever keeps state on it."""
        for listener in self.connection_closed_listeners:
            listener(connection_id)

    def stage(
        self,
        events: Sequence[Event],
        batches: Sequence[StoredBatch] = (),
        index_entries: Sequence[tuple[bytes, bytes]] = (),
    ) -> int:
        """Stage effects for this turn's WriteBatch; visible to later decisions at once. What the plugins
        derive from them (``logwright_derive_events``) is staged with them (inside `staging_together`, at its end).

        Raises `StoreFailed` (a `StorageUnavailable` domain error, KAFKA_STORAGE_ERROR on the wire) while a
        failed store cannot be reopened for writing; it is tried again every `STORE_RETRY_MS`.
        """
        if self.store.failed is not None and self.clock.now_ms() >= self._store_retry_at_ms:
            self._store_retry_at_ms = self.clock.now_ms() + STORE_RETRY_MS
            self._reopen_store()
        gathered = self._gathered
        if gathered is not None:
            gathered[0].extend(events)
            gathered[1].extend(batches)
        elif self.derive_events is not None:
            derived = self.derive_events.derive(events, batches, self._staged_change, self._projection_rows)
            if derived:
                events = [*events, *derived]
        return self._append(events, batches, index_entries)

    def _append(self, events: Sequence[Event], batches: Sequence[StoredBatch] = (),
                index_entries: Sequence[tuple[bytes, bytes]] = ()) -> int:
        sequence = self.store.append(events, batches, index_entries)
        STAGED_SINCE_FAILURE.set(self._failed_commits)
        for event in events:
            if isinstance(event, TopicCreated):
                self._topic_names_by_id[event.topic_id] = event.topic
                self._topic_name_added(event.topic)
                self._partition_ids.update(event.partition_ids)
                self._partition_topics.update(  # mapped as created: a miss rebuilt the map over every partition
                    zip(event.partition_ids, zip(repeat(event.topic), range(len(event.partition_ids))), strict=True))
                self._catalog_changed(event.topic)
            elif isinstance(event, PartitionsCreated):
                self._partition_ids.update(event.partition_ids)
                created, state = set(event.partition_ids), self.topic(event.topic)
                if state is not None:
                    self._partition_topics.update((partition_id, (state.name, index))
                                                  for index, partition_id in enumerate(state.partition_ids)
                                                  if partition_id in created)
                self._catalog_changed(event.topic)
            elif isinstance(event, TopicDeleted):
                self._partition_ids.difference_update(event.partition_ids)
                self._topic_names_by_id.pop(event.topic_id, None)  # as its catalog row goes (`topic_names`)
                self._topic_name_removed(event.topic)
                self._catalog_changed(event.topic)
        self._schedule_commit()
        return sequence

    @contextlib.contextmanager
    def staging_together(self) -> Iterator[None]:
        """Let the plugins derive (``logwright_derive_events``) once from everything staged inside, at its end.

        For a synchronous run of appends (no ``await`` inside: nothing else decides in between, and what is
        derived still goes into the same WriteBatch). A produce request of 1,000 one-batch partitions asked
        the plugins 1,000 times, a tenth of its cost. Should a plugin raise there, the appends are staged
        already: the whole turn is dropped (`_drop_staged`) rather than committed without what they derive.
        """
        if self.derive_events is None or self._gathered is not None:
            yield
            return
        gathered: tuple[list[Event], list[StoredBatch]] = ([], [])
        self._gathered = gathered
        try:
            yield
        finally:
            self._gathered = None
            if (gathered[0] or gathered[1]) and self.store.failed is None:
                try:
                    derived = self.derive_events.derive(gathered[0], gathered[1], self._staged_change,
                                                        self._projection_rows)
                except Exception as error:
                    self._drop_staged(error)
                    raise
                if derived:
                    self._append(derived)  # not derived from again, as `stage` does not

    def _drop_staged(self, error: Exception) -> None:
        """A plugin failed to derive from appends already staged: drop everything staged since the last commit
        (the store reloads from disk) and fail every request that staged any of it, as a failed commit does.
        An index must never miss what it indexes, and those appends cannot be taken out one by one."""
        log.error("a logwright_derive_events plugin failed (%s: %s); dropping this turn's staged changes",
                  type(error).__name__, error)
        waiters, self._commit_waiters = self._commit_waiters, []
        self._failed_commits += 1
        self._reopen_store()
        self._fail_waiters(waiters, StoreFailed(f"a plugin failed deriving from a staged change: {error}"))

    def _staged_change(self, events: Sequence[Event], batches: Sequence[StoredBatch]) -> StagedChange:
        views = []
        config_of: dict[str, Callable[[str], str | None]] = {}  # one per topic, not per batch
        for batch in batches:
            found = self.topic_of_partition(batch.partition_id)
            if found is None:
                views.append(appended_batch(batch.data, "", -1, batch.partition_id, _no_config))
                continue
            topic, index = found
            topic_config = config_of.get(topic.name)
            if topic_config is None:
                topic_config = config_of[topic.name] = functools.partial(self.topic_config, topic)
            views.append(appended_batch(batch.data, topic.name, index, batch.partition_id, topic_config))
        return StagedChange(events, views, self.clock.now_ms(), self._log_start_offset, self._projection_rows,
                            self.plugin_memo)

    def topic_of_partition(self, partition_id: int) -> tuple[TopicState, int] | None:
        """The topic a partition id belongs to and its index there (ids are never reused); ``None`` once deleted.

        Looked up, not searched: every staged batch asks, and finding the index in a 10,000-partition topic's ids
        took up to 95 us. Topics and partitions are mapped as they are created (the first append to a new topic
        rebuilt the map over every partition: 44-48 ms at 200,000); it is rebuilt only for a partition that exists
        and is missing (after a reload), not for deleted ones (a transaction's, say).
        """
        found = self._known_partition(partition_id)
        if found is None and partition_id in self._partition_ids:
            self._partition_topics = {pid: (state.name, index) for state in self.topics()
                                      for index, pid in enumerate(state.partition_ids)}
            found = self._known_partition(partition_id)
        return found

    def _known_partition(self, partition_id: int) -> tuple[TopicState, int] | None:
        """`topic_of_partition` from what ``_partition_topics`` holds, if the catalog still agrees with it."""
        entry = self._partition_topics.get(partition_id)
        if entry is None:
            return None
        name, index = entry
        topic = self.topic(name)
        if topic is None or index >= len(topic.partition_ids) or topic.partition_ids[index] != partition_id:
            return None
        return topic, index

    def _projection_rows(self, projection: str) -> Mapping[str, Any]:
        """A projection's live rows; none for a projection this store does not fold (a store opened without
        the plugins' projections, as some tests open theirs)."""
        try:
            return self.store.entities(projection)
        except KeyError:
            return _NO_ROWS

    def _log_start_offset(self, partition_id: int) -> int | None:
        if partition_id not in self._partition_ids:
            return None
        state = self.store.state("partitions", partition_key(partition_id))
        return state.log_start_offset if isinstance(state, PartitionState) else 0

    def held_back(self, partition_id: int, first: int, last: int, in_order: bool = False,
                  now_ms: int | None = None, detailed: bool = False) -> HeldBack:
        """What the plugins hold back of offsets ``first..last`` of a partition at ``now_ms`` (the clock's now by
        default), for a mode acquiring records one by one; ``in_order``: it delivers in offset order;
        ``detailed``: with each offset's time (`HoldBackQuery`)."""
        if self.hold_back is None or first > last:
            return HeldBack()
        query = HoldBackQuery(partition_id, first, last, self.clock.now_ms() if now_ms is None else now_ms,
                              in_order, detailed, self._projection_rows, self.plugin_memo)
        return self.hold_back(query) or HeldBack()

    def run_to_the_end(self, work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """Run ``work`` as a task of its own, kept until it ends: what must finish once started (a transaction's end
        staged over turns) does not go with the request that started it when its client disconnects; the broker
        waits for these before its last commit (`finish_started_work`)."""
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._started_work.add(task)
        task.add_done_callback(self._started_work.discard)
        return task

    async def finish_started_work(self) -> None:
        """Wait for what `run_to_the_end` started (a shutdown commits after it)."""
        while self._started_work:
            await asyncio.gather(*self._started_work, return_exceptions=True)

    def _on_commit(self, events: Sequence[LoggedEvent]) -> None:
        appended = False
        for logged in events:
            event = logged.event
            if isinstance(event, RecordsAppended):
                self._high_watermarks[event.partition_id] = event.base_offset + event.record_count
                appended = True
                for waiter in self._partition_waiters.pop(event.partition_id, ()):
                    if not waiter.done():
                        waiter.set_result(None)
            elif isinstance(event, TopicDeleted):
                self._topic_names_by_id.pop(event.topic_id, None)
                self._topic_name_removed(event.topic)
                for partition_id in event.partition_ids:
                    self._high_watermarks.pop(partition_id, None)
            elif isinstance(event, LogTruncated):  # staged through `stage` or by the store itself (`truncate`)
                self._high_watermarks.setdefault(event.partition_id, event.log_start_offset)
                self.log_starts_version += 1
            elif isinstance(event, ConfigChanged) and event.resource_type == "broker":
                self._topic_configs.clear()  # topics inherit broker keys (log.cleanup.policy, ...)
        if appended and self._data_arrived is not None:
            self._data_arrived.set()
            self._data_arrived = None

    # -- time index ---------------------------------------------------------------------------

    @staticmethod
    def encode_offset(offset: int) -> bytes:
        return _OFFSET.pack(offset)

    @staticmethod
    def decode_offset(value: bytes) -> int:
        (offset,) = _OFFSET.unpack(value)
        return int(offset)

    def describe(self) -> dict[str, Any]:
        return {"node_id": self.node_id, "host": self.settings.public_host, "port": self.settings.public_port}


_NO_ROWS: Mapping[str, Any] = MappingProxyType({})


def _no_config(name: str) -> str | None:
    return None
