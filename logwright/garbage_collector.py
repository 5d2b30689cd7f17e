"""CPython's garbage collector tuned for a broker whose state lives as long as the process.

A collection walks every tracked object of the generations it collects. A broker keeps its state (partitions,
committed offsets, cursors, in-flight tables) for its whole life, and with CPython's rules that state is walked
again and again while the event loop answers nobody:

- a middle collection walks what survived the last ten young ones: 20-28 ms after a 5,000-partition OffsetCommit;
- a full collection walks everything not frozen, and comes each time a quarter more has been kept since the last
  one: 80-120 ms with 30,000 partitions (about eight tracked objects each) stored.

Kafka's JVM collects its old generation concurrently; CPython 3.11 cannot, so this policy keeps each walk to
what is new instead:

- young collections every 10,000 allocations (net of frees) instead of 700: a request's objects die within a
  loop turn or two, and young collections ran ~30 times as often for nothing (see `YOUNG_COLLECTION_EVERY`);
- a middle collection every 2 young ones instead of 10, so it walks at most two young collections' survivors;
- the survivors of a full collection are frozen (`gc.freeze`): the next full collection walks only what was kept
  since, which CPython triggers once that is a quarter of the last collection's survivors;
- a cycle that becomes garbage while frozen waits to be collected until it is thawed. So once the frozen set has
  doubled since the last thaw (or start-up), everything is unfrozen and the next full collection walks all of it,
  which reclaims what died frozen. Frozen garbage stays below twice the state kept at the last thaw, and the walk
  of everything comes once per doubling of the state instead of at every quarter.

Nothing here changes what is collected, only when: every unreachable cycle is still reclaimed, at the latest by
the full collection after the next thaw. Only the broker process installs it (`logwright.app`); tests that
compose a broker in process keep CPython's defaults.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Any, Protocol

YOUNG_COLLECTION_EVERY = 10_000
"""Allocations (net of frees) between two young-generation collections; CPython's default is 700. At 700, 1,000
committing groups ran ~115 young, ~10 middle and one full collection per 15 s, and once a backlog formed
(requests alive across collections, promoted and then dropped) ~2,300, ~210 and ~19 full ones (1.5 s of the 15).
At 10,000: ~4 young collections per 15 s, and in process 1,000 connections' commits cost 50-53 us of CPU each
instead of 55-64 (3 alternated runs)."""

MIDDLE_COLLECTION_EVERY = 2
"""Young collections between two middle ones; CPython's default is 10. A middle collection walks the survivors of
the young ones since the last, so with 10 of them (at 10,000 allocations each) a bulk request's new state was
walked in one 20-28 ms stop; with 2, at most 6-9 ms (5,000-partition admin requests on a broker holding 30,000
partitions, 4 rounds each way)."""

FULL_COLLECTION_EVERY = 10
"""Middle collections between two full ones (CPython's default, kept): CPython also waits until a quarter more
objects than the last full collection kept have been promoted."""

THAW_GROWTH = 2
"""The frozen set grows this many times over the count at the last thaw before everything is unfrozen, so that
the next full collection reclaims the cycles that died frozen."""


class Collector(Protocol):
    """What the policy asks of the `gc` module (a fake in the tests)."""

    def freeze(self) -> None: ...

    def unfreeze(self) -> None: ...

    def get_freeze_count(self) -> int: ...


@dataclass
class FreezeSurvivors:
    """After each full collection: freeze its survivors, or thaw everything once the frozen set has grown
    `THAW_GROWTH` times since the last thaw. Installed as a `gc.callbacks` entry by `install`."""

    collector: Collector
    frozen_at_thaw: int
    """The frozen count after the last walk of everything: start-up's, or the full collection after a thaw."""
    thawed: bool = False
    freezes: int = 0
    thaws: int = 0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info.get("generation") != 2:
            return
        self.collector.freeze()
        self.freezes += 1
        frozen = self.collector.get_freeze_count()
        if self.thawed:  # this collection walked everything: the new baseline
            self.thawed = False
            self.frozen_at_thaw = frozen
        elif frozen > THAW_GROWTH * max(self.frozen_at_thaw, 1):
            self.collector.unfreeze()
            self.thawed = True
            self.thaws += 1


def tune_garbage_collector() -> FreezeSurvivors:
    """Once start-up has built the broker: what it built (modules, the store's state, projections) lives as long as
    the process, so it is frozen at once; then the thresholds and the freeze policy above."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, MIDDLE_COLLECTION_EVERY, FULL_COLLECTION_EVERY)
    for callback in [callback for callback in gc.callbacks if isinstance(callback, FreezeSurvivors)]:
        gc.callbacks.remove(callback)  # installed twice (a bench that builds brokers in one process): one policy
    policy = FreezeSurvivors(gc, gc.get_freeze_count())
    gc.callbacks.append(policy)
    return policy
