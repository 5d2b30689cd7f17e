"""`logwright check` for backlog quotas: the state the backlog counts, refolded from the log and compared.

A partition's batch index (`batch_index`) is not stored: the tracker reads it once from the stored batch headers
and then keeps it from each commit's `RecordsAppended`. Both must agree, or the bytes and ages a quota judges
would depend on when the broker last started. So, for every partition of a topic with a limit, the batches from
its slowest stored position on are folded from the log's `RecordsAppended` and compared with the stored batch
headers (offsets, stored size, newest timestamp); then every subscription's backlog is computed twice, from the
refolded positions over the refolded index and from the stored positions over the stored batches, and compared.
The eviction totals and eviction points are projections and are refolded with the others.

Only what the check needs is kept while the log is read: the batches of the watched partitions from their slowest
position (`AppendedBatches`, folded in the same pass as the projections). A compacted partition's batches were
rewritten smaller in place (`PartitionCompacted` says by how much, not per batch), so for it only the positions'
backlogs are compared, both over the stored batches. Pure: the stored batches come through a callable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from logwright.core.events import Event, RecordsAppended
from logwright.core.events.compaction import PartitionCompacted
from logwright.core.log.catalog import ResourceConfig, TopicState, resource_key
from logwright.core.log.partition_log import PartitionState, partition_key
from logwright.core.projection import Projection

from .backlog import Backlog, Position, backlog_of
from .batch_index import BatchExtent, BatchIndex
from .positions import POSITION_SOURCES, scan_topic
from .quota import HOLD, POLICY_KEY, TOPIC_KEYS, broker_default_key, quota_of

States = Mapping[str, Mapping[str, Any]]
"""Projection name -> entity key -> state (stored or refolded)."""

StoredBatches = Callable[[int, int], list[BatchExtent]]
"""The stored batches of a partition id holding ``from_offset`` and after, from their headers."""


@dataclass(frozen=True, slots=True)
class Watched:
    """A partition whose backlog is checked, from ``from_offset`` (its slowest stored position, or log start)."""

    topic: str
    partition_index: int
    partition_id: int
    from_offset: int


@dataclass(slots=True)
class Appended:
    """The batches the log says a watched partition holds from its ``from_offset`` (scratch state of a check)."""

    from_offset: int
    extents: list[BatchExtent] = field(default_factory=list)
    compacted: bool = False


def _broker_default(catalog: Mapping[str, Any]) -> Callable[[str], str]:
    """Broker-wide quota defaults stored by AlterConfigs (any broker's); ``--config`` ones are not in the store."""
    def value(name: str) -> str:
        for key, state in catalog.items():
            if key.startswith(resource_key("broker", "")) and isinstance(state, ResourceConfig):
                for config, setting in state.overrides:
                    if config == name:
                        return setting
        return HOLD if name == broker_default_key(POLICY_KEY) else "-1"
    return value


def positions(states: States, topic: str, partition_ids: Sequence[int]) -> dict[int, list[Position]]:
    """Every subscription's position on each of ``topic``'s partitions in ``states`` (as the tracker scans them:
    one pass over each source's states for the whole topic), by partition id."""
    found: dict[int, list[Position]] = {}
    for source in POSITION_SOURCES:
        for partition_id, by_key in scan_topic(source, states.get(source.projection, {}), topic,
                                               partition_ids).items():
            found.setdefault(partition_id, []).extend(by_key.values())
    return found


def watched_partitions(stored: States) -> dict[int, Watched]:
    """The partitions of topics with a limit (topic config or stored broker default), by partition id."""
    catalog = stored.get("catalog", {})
    partitions = stored.get("partitions", {})
    default = _broker_default(catalog)
    watched: dict[int, Watched] = {}
    for state in catalog.values():
        if not isinstance(state, TopicState):
            continue
        configs = {key: value for key in TOPIC_KEYS if (value := state.config(key)) is not None}
        if not quota_of(configs, default).limited:
            continue
        on_topic = positions(stored, state.name, state.partition_ids)
        for index, partition_id in enumerate(state.partition_ids):
            partition = partitions.get(partition_key(partition_id))
            log_start = partition.log_start_offset if isinstance(partition, PartitionState) else 0
            lowest = min((p.first_unsettled for p in on_topic.get(partition_id, ())), default=log_start)
            watched[partition_id] = Watched(state.name, index, partition_id, max(lowest, log_start))
    return watched


def appended_batches(watched: Mapping[int, Watched]) -> Projection[Appended]:
    """A fold, run with the projections over the log, collecting the watched partitions' batches (never stored)."""
    names = {partition_id: str(partition_id) for partition_id in watched}

    def keys(event: Event) -> tuple[str, ...]:
        name = names.get(event.partition_id) if isinstance(event, RecordsAppended | PartitionCompacted) else None
        return (name,) if name is not None else ()

    def evolve(state: Appended | None, event: Event, key: str) -> Appended:
        current = state or Appended(watched[int(key)].from_offset)
        if isinstance(event, PartitionCompacted):
            current.compacted = True
        elif isinstance(event, RecordsAppended) and event.base_offset + event.record_count > current.from_offset:
            current.extents.append(BatchExtent(event.base_offset, event.record_count, event.byte_size,
                                               event.max_timestamp))
        return current

    handled = frozenset({RecordsAppended, PartitionCompacted}) if watched else frozenset()  # none: no cost per event
    return Projection("backlog_check.appended_batches", keys, evolve, handled)


def differences(watched: Mapping[int, Watched], appended: Mapping[str, Appended], rebuilt: States, stored: States,
                stored_batches: StoredBatches) -> list[str]:
    """What differs, said as `check` says it for projections (``backlog/<topic>-<partition>...``)."""
    found: list[str] = []
    partition_ids: dict[str, list[int]] = {}
    for where in watched.values():  # every partition of a watched topic is watched
        ids = partition_ids.setdefault(where.topic, [])
        ids.extend([-1] * (where.partition_index + 1 - len(ids)))
        ids[where.partition_index] = where.partition_id
    rebuilt_positions = {topic: positions(rebuilt, topic, ids) for topic, ids in partition_ids.items()}
    stored_positions = {topic: positions(stored, topic, ids) for topic, ids in partition_ids.items()}
    for partition_id, where in sorted(watched.items()):
        partition = stored.get("partitions", {}).get(partition_key(partition_id))
        log_start = partition.log_start_offset if isinstance(partition, PartitionState) else 0
        start = max(where.from_offset, log_start)
        on_disk = stored_batches(partition_id, start)
        replayed = appended.get(str(partition_id)) or Appended(start)
        name = f"backlog/{where.topic}-{where.partition_index}"
        if replayed.compacted:
            refolded = on_disk
        else:
            refolded = [extent for extent in replayed.extents if extent.end_offset > start]
            if refolded != on_disk:
                found.append(_first_batch_difference(name, refolded, on_disk))
        found.extend(_backlog_differences(
            name, _index(partition_id, start, refolded), rebuilt_positions[where.topic].get(partition_id, []),
            _index(partition_id, start, on_disk), stored_positions[where.topic].get(partition_id, []), log_start))
    return found


def _index(partition_id: int, start: int, extents: list[BatchExtent]) -> BatchIndex:
    index = BatchIndex(partition_id, start)
    for extent in extents:
        index.append(extent)
    return index


def _first_batch_difference(name: str, refolded: list[BatchExtent], on_disk: list[BatchExtent]) -> str:
    for position, (expected, found) in enumerate(zip(refolded, on_disk, strict=False)):
        if expected != found:
            return f"{name}: batch {position}: replay gives {expected!r}, the stored batch holds {found!r}"
    return (f"{name}: replay gives {len(refolded)} batches from the slowest position, "
            f"{len(on_disk)} are stored")


def _backlog_differences(name: str, refolded_index: BatchIndex, rebuilt: list[Position],
                         stored_index: BatchIndex, stored: list[Position], log_start: int) -> list[str]:
    def by_subscription(found: list[Position], index: BatchIndex) -> dict[tuple[str, str], Backlog]:
        return {(position.kind, position.subscription): backlog_of(index, position, log_start)
                for position in found}

    expected, found = by_subscription(rebuilt, refolded_index), by_subscription(stored, stored_index)
    return [f"{name}/{kind} {subscription}: replay gives {expected.get((kind, subscription))!r}, "
            f"state holds {found.get((kind, subscription))!r}"
            for kind, subscription in sorted(expected.keys() | found.keys())
            if expected.get((kind, subscription)) != found.get((kind, subscription))]
