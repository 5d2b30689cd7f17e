"""`logwright replay`: refold every projection in Spark with the core fold functions, diff with ``state``.

The job is a map-reduce over the log that runs unchanged on a cluster (executors need the data
directory at the same path, e.g. shared storage):

1. the driver opens one secondary instance and reads the last sequence and every stored state row
   from it, so state and log are cut at the same moment even while a broker runs (`access`);
2. map: each task reads a contiguous sequence range through its worker's one shared reader
   (`access.shared_reader`), keys each event by ``(projection, entity)`` with the projection's own
   `entity_keys`, and emits one chunk per entity and range: the range's first sequence and the entity's
   events re-encoded by the codec (bytes pickle ~40x faster than event objects, and re-encoding costs a
   fifth of decoding);
3. reduce: each entity's chunks meet in one task (one task per entity while there are few, so the big
   ones spread over the cores), are put in sequence order and folded with the projection's own `evolve`
   (`core.projection.fold_entity`), exactly what the store does on append; the task compares the result
   with the stored row (broadcast) through `eventstore.check.describe_difference`;
4. the driver adds the stored rows no entity of the log produced.

Projections come from `registry.replay_setup` (the plugin host), so plugins' projections replay too. The store's
checks compared entity by entity (`check.ENTITY_CHECKS`: the index of aborted transactions) replay as projections
do: their folds run in the same tasks, and each entity is compared with what the driver read of the store.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from logwright.core.projection import Projection, fold_entity
from logwright.eventstore.check import ENTITY_CHECKS, CheckReport, EntityCheck, describe_difference

from .access import secondary_store, shared_reader
from .registry import replay_setup

EntityKey = tuple[str, str]
Chunk = tuple[int, list[bytes]]
"""The first sequence of a task's range and an entity's encoded events from it, in log order."""
Outcome = tuple[int, int, list[str], list[EntityKey]]
"""Entities rebuilt, differences, the first of them, and every entity the task folded."""


@dataclass(frozen=True, slots=True)
class ReplayPlan:
    data_dir: str
    last_sequence: int
    ranges: tuple[tuple[int, int], ...]
    stored: tuple[tuple[EntityKey, bytes], ...]
    scratch_dir: str | None = None
    checked: tuple[tuple[EntityKey, Any], ...] = ()
    """What the store holds of each entity of `ENTITY_CHECKS` (keyed by the check's name)."""


def plan(data_dir: str, events_per_task: int = 250_000, scratch_dir: str | None = None) -> ReplayPlan:
    """The cut: last sequence and stored states from one secondary instance, and the task ranges."""
    names = set(replay_setup().by_name)
    with secondary_store(data_dir, scratch_dir) as store:
        last = store.last_sequence
        stored = tuple(((name, entity), raw) for name, entity, _, raw in store.stored_states() if name in names)
        checked = tuple(((check.NAME, entity), found) for check in ENTITY_CHECKS
                        for entity, found in check.stored_entities(store).items())
    ranges = tuple((first, min(first + events_per_task - 1, last)) for first in range(1, last + 1, events_per_task))
    return ReplayPlan(data_dir, last, ranges, stored, scratch_dir, checked)


def _folded(projections: tuple[Projection[Any], ...]) -> tuple[Projection[Any], ...]:
    """The projections, then the folds of `ENTITY_CHECKS`."""
    return (*projections, *(check.projection({}) for check in ENTITY_CHECKS))


_CHECKS: Mapping[str, EntityCheck] = {check.NAME: check for check in ENTITY_CHECKS}


def entity_chunks(cut: ReplayPlan) -> Callable[[Iterable[tuple[int, int]]], Iterator[tuple[EntityKey, Chunk]]]:
    """A map task: for each of its ranges, one chunk per entity the range's events name."""
    data_dir, scratch_dir, last_sequence = cut.data_dir, cut.scratch_dir, cut.last_sequence

    def run(ranges: Iterable[tuple[int, int]]) -> Iterator[tuple[EntityKey, Chunk]]:
        setup = replay_setup()
        encode = setup.types.encode_event
        routes: dict[type, list[Any]] = {}
        folded = _folded(setup.projections)
        store = shared_reader(data_dir, scratch_dir, last_sequence)
        for first, last in ranges:
            chunks: dict[EntityKey, list[bytes]] = {}
            for logged in store.read_events(first, last):
                event = logged.event
                wanted = routes.get(type(event))
                if wanted is None:
                    wanted = routes[type(event)] = [p for p in folded if p.may_fold(type(event))]
                encoded = None
                for projection in wanted:
                    for entity in projection.entity_keys(event):
                        if encoded is None:
                            encoded = encode(logged.time_ms, event)
                        chunks.setdefault((projection.name, entity), []).append(encoded)
            for key, events in chunks.items():
                yield key, (first, events)

    return run


def refold_and_compare(stored: Any, max_reported: int, checked: Any = None
                       ) -> Callable[[Iterable[tuple[EntityKey, Iterable[Chunk]]]], Iterator[Outcome]]:
    """A reduce task: each entity's chunks in sequence order, folded, compared with its stored row (``stored``, a
    broadcast) or, for an entity of `ENTITY_CHECKS`, with what the store holds of it (``checked``, a broadcast)."""

    def run(items: Iterable[tuple[EntityKey, Iterable[Chunk]]]) -> Iterator[Outcome]:
        setup = replay_setup()
        types, rows = setup.types, stored.value
        by_name = {projection.name: projection for projection in _folded(setup.projections)}
        held: Mapping[EntityKey, Any] = checked.value if checked is not None else {}
        entities = count = 0
        kept: list[str] = []
        folded: list[EntityKey] = []
        for (name, entity), chunks in items:
            where = f"column family 'events', replaying {name}/{entity}"
            events = (types.decode_event(raw, where)[1]
                      for _, encoded in sorted(chunks, key=lambda chunk: chunk[0]) for raw in encoded)
            rebuilt = fold_entity(by_name[name], entity, events)
            folded.append((name, entity))
            check = _CHECKS.get(name)
            if check is not None:
                difference = check.difference(entity, rebuilt, held.get((name, entity)))
                if difference is not None:
                    count += 1
                    if len(kept) < max_reported:
                        kept.append(difference)
                continue
            raw = rows.get((name, entity))
            found = None if raw is None else types.decode(raw, f"column family 'state' key {name}/{entity}")
            entities += rebuilt is not None
            difference = describe_difference(name, entity, rebuilt, found, by_name[name].empty)
            if difference is not None:
                count += 1
                if len(kept) < max_reported:
                    kept.append(difference)
        yield entities, count, kept, folded

    return run


def entity_partitioner(keys: Iterable[EntityKey], tasks: int) -> Callable[[EntityKey], int]:
    """Stored entities dealt round-robin over the reduce tasks (one each while there are few); others by CRC."""
    order: Mapping[EntityKey, int] = {key: index for index, key in enumerate(sorted(keys))}

    def partition(key: EntityKey) -> int:
        index = order.get(key)
        return index if index is not None else zlib.crc32("\0".join(key).encode())

    return partition


def replay(spark: Any, data_dir: str, *, events_per_task: int = 250_000, scratch_dir: str | None = None,
           max_reported: int = 50, on_progress: Callable[[int, int], None] | None = None) -> CheckReport:
    """Refold the log of ``data_dir`` in ``spark`` and compare with its stored state."""
    cut = plan(data_dir, events_per_task, scratch_dir)
    sc = spark.sparkContext
    setup = replay_setup()
    stored, checked = dict(cut.stored), dict(cut.checked)
    reduce_tasks = max(1, min(len(stored), 8 * sc.defaultParallelism))
    chunks = sc.parallelize(cut.ranges, max(1, len(cut.ranges))).mapPartitions(entity_chunks(cut))
    grouped = chunks.groupByKey(reduce_tasks, entity_partitioner(stored, reduce_tasks))
    job = grouped.mapPartitions(refold_and_compare(sc.broadcast(stored), max_reported, sc.broadcast(checked)))
    results = _collect_with_progress(sc, job, on_progress)
    report = CheckReport(cut.last_sequence, len(setup.projections), sum(r[0] for r in results))
    differences = [d for r in results for d in r[2]]
    report.total_differences = sum(r[1] for r in results)
    folded = {key for r in results for key in r[3]}
    for (name, entity), raw in stored.items():  # stored, but no event of the log names it
        if (name, entity) not in folded:
            found = setup.types.decode(raw, f"column family 'state' key {name}/{entity}")
            difference = describe_difference(name, entity, None, found,
                                             projection.empty if (projection := setup.by_name.get(name)) else None)
            if difference is not None:
                report.total_differences += 1
                differences.append(difference)
    for (name, entity), found in checked.items():  # in the store, but no event of the log gives it
        if (name, entity) not in folded and (difference := _CHECKS[name].difference(entity, None, found)) is not None:
            report.total_differences += 1
            differences.append(difference)
    report.differences = sorted(differences)[:max_reported]
    if report.total_differences and not report.differences:  # max_reported == 0
        report.differences = [f"{report.total_differences} differences"]
    return report


def _collect_with_progress(sc: Any, rdd: Any, on_progress: Callable[[int, int], None] | None) -> list[Any]:
    """``rdd.collect()``, reporting (tasks done, tasks known) of its job group while it runs."""
    if on_progress is None:
        return list(rdd.collect())
    group = f"logwright-replay-{time.monotonic_ns()}"
    outcome: dict[str, Any] = {}

    def run() -> None:
        sc.setJobGroup(group, "logwright replay")
        try:
            outcome["result"] = rdd.collect()
        except BaseException as error:  # re-raised on the calling thread
            outcome["error"] = error

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    tracker = sc.statusTracker()
    while worker.is_alive():
        done = total = 0
        for job_id in tracker.getJobIdsForGroup(group):
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job else ():
                stage = tracker.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numCompletedTasks
                    total += stage.numTasks
        on_progress(done, total)
        worker.join(0.25)
    if "error" in outcome:
        raise outcome["error"]
    return list(outcome["result"])
