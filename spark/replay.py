"""`logwright replay`: refold every projection in Spark with the core fold functions, diff with ``state``.

The job is a map-reduce over the log that runs unchanged on a cluster (executors need the data
directory at the same path, e.g. shared storage):

1. the driver opens one secondary instance and reads the last sequence and every stored state row
   from it, so state and log are cut at the same moment even while a broker runs (`access`);
2. tasks read sequence ranges and key each event by ``(projection, entity)`` with the projection's
   own `entity_keys`;
3. a shuffle gathers each entity's events, which are folded in sequence order with the projection's
   own `evolve` (`core.projection.fold_entity`), exactly what the store does on append;
4. a full outer join with the stored rows compares both with `eventstore.check.describe_difference`.

Projections come from `registry.replay_setup` (the plugin host), so plugins' projections replay too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from logwright.core.projection import fold_entity
from logwright.eventstore.check import CheckReport, describe_difference

from .access import secondary_store
from .registry import replay_setup

EntityKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class ReplayPlan:
    data_dir: str
    last_sequence: int
    ranges: tuple[tuple[int, int], ...]
    stored: tuple[tuple[EntityKey, bytes], ...]
    scratch_dir: str | None = None


def plan(data_dir: str, events_per_task: int = 250_000, scratch_dir: str | None = None) -> ReplayPlan:
    """The cut: last sequence and stored states from one secondary instance, and the task ranges."""
    names = set(replay_setup().by_name)
    with secondary_store(data_dir, scratch_dir) as store:
        last = store.last_sequence
        stored = tuple(((name, entity), raw) for name, entity, _, raw in store.stored_states() if name in names)
    ranges = tuple((first, min(first + events_per_task - 1, last)) for first in range(1, last + 1, events_per_task))
    return ReplayPlan(data_dir, last, ranges, stored, scratch_dir)


def keyed_events(data_dir: str, scratch_dir: str | None) -> Callable[[Iterable[tuple[int, int]]],
                                                                      Iterator[tuple[EntityKey, tuple[int, Any]]]]:
    """A task body: each event of its ranges once per entity it names, as ``((projection, entity), (seq, event))``."""

    def run(ranges: Iterable[tuple[int, int]]) -> Iterator[tuple[EntityKey, tuple[int, Any]]]:
        projections = replay_setup().projections
        routes: dict[type, list[Any]] = {}
        with secondary_store(data_dir, scratch_dir) as store:
            for first, last in ranges:
                for logged in store.read_events(first, last):
                    event = logged.event
                    wanted = routes.get(type(event))
                    if wanted is None:
                        wanted = routes[type(event)] = [p for p in projections if p.may_fold(type(event))]
                    for projection in wanted:
                        for entity in projection.entity_keys(event):
                            yield (projection.name, entity), (logged.sequence, event)

    return run


def refold(item: tuple[EntityKey, Iterable[tuple[int, Any]]]) -> tuple[EntityKey, Any]:
    (name, entity), events = item
    ordered = [event for _, event in sorted(events, key=lambda pair: pair[0])]
    return (name, entity), fold_entity(replay_setup().by_name[name], entity, ordered)


def compare(max_reported: int) -> Callable[[Iterable[tuple[EntityKey, tuple[Any, bytes | None]]]],
                                           Iterator[tuple[int, int, list[str]]]]:
    """A task body: (entities rebuilt, differences, the first ``max_reported`` of them) per partition."""

    def run(items: Iterable[tuple[EntityKey, tuple[Any, bytes | None]]]) -> Iterator[tuple[int, int, list[str]]]:
        types = replay_setup().types
        entities = count = 0
        kept: list[str] = []
        for (name, entity), (rebuilt, raw) in items:
            found = None if raw is None else types.decode(raw, f"column family 'state' key {name}/{entity}")
            entities += rebuilt is not None
            difference = describe_difference(name, entity, rebuilt, found)
            if difference is not None:
                count += 1
                if len(kept) < max_reported:
                    kept.append(difference)
        yield entities, count, kept

    return run


def replay(spark: Any, data_dir: str, *, events_per_task: int = 250_000, scratch_dir: str | None = None,
           max_reported: int = 50, on_progress: Callable[[int, int], None] | None = None) -> CheckReport:
    """Refold the log of ``data_dir`` in ``spark`` and compare with its stored state."""
    cut = plan(data_dir, events_per_task, scratch_dir)
    sc = spark.sparkContext
    tasks = max(1, len(cut.ranges))
    events = sc.parallelize(cut.ranges, tasks).mapPartitions(keyed_events(cut.data_dir, cut.scratch_dir))
    rebuilt = events.groupByKey().map(refold).filter(lambda item: item[1] is not None)
    stored = sc.parallelize(cut.stored, max(1, min(tasks, len(cut.stored) // 10_000 + 1)))
    joined = rebuilt.fullOuterJoin(stored)
    job = joined.mapPartitions(compare(max_reported))
    results = _collect_with_progress(sc, job, on_progress)
    report = CheckReport(cut.last_sequence, len(replay_setup().projections), sum(r[0] for r in results))
    report.total_differences = sum(r[1] for r in results)
    report.differences = sorted(d for r in results for d in r[2])[:max_reported]
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
