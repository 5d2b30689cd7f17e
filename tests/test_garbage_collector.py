"""The broker process's garbage-collector policy: what it freezes and thaws, and that nothing it freezes leaks.

The decisions are checked against a fake collector (no process state touched); the real `gc` runs in a child
interpreter, since freezing would change every other test's collections in this one."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import dataclass, field

from logwright.garbage_collector import THAW_GROWTH, FreezeSurvivors


@dataclass
class FakeCollector:
    frozen: int
    live: int = 0
    """Objects a full collection leaves in the collected generations, frozen by the next `freeze`."""
    calls: list[str] = field(default_factory=list)

    def freeze(self) -> None:
        self.calls.append("freeze")
        self.frozen, self.live = self.frozen + self.live, 0

    def unfreeze(self) -> None:
        self.calls.append("unfreeze")
        self.frozen, self.live = 0, self.frozen

    def get_freeze_count(self) -> int:
        return self.frozen


def full_collection(policy: FreezeSurvivors, collector: FakeCollector, kept: int, generation: int = 2) -> None:
    collector.live += kept
    policy("start", {"generation": generation})
    policy("stop", {"generation": generation, "collected": 0, "uncollectable": 0})


def test_survivors_of_a_full_collection_are_frozen() -> None:
    collector = FakeCollector(frozen=1_000)
    policy = FreezeSurvivors(collector, frozen_at_thaw=1_000)
    full_collection(policy, collector, kept=300)
    assert collector.calls == ["freeze"]
    assert (collector.frozen, collector.live) == (1_300, 0)


def test_young_and_middle_collections_change_nothing() -> None:
    collector = FakeCollector(frozen=1_000)
    policy = FreezeSurvivors(collector, frozen_at_thaw=1_000)
    full_collection(policy, collector, kept=300, generation=0)
    full_collection(policy, collector, kept=300, generation=1)
    assert collector.calls == []
    assert (collector.frozen, collector.live) == (1_000, 600)


def test_everything_is_thawed_once_the_frozen_set_doubled_and_the_next_full_walk_sets_the_baseline() -> None:
    collector = FakeCollector(frozen=1_000)
    policy = FreezeSurvivors(collector, frozen_at_thaw=1_000)
    full_collection(policy, collector, kept=600)  # 1,600: frozen
    assert (collector.frozen, policy.thaws) == (1_600, 0)
    full_collection(policy, collector, kept=500)  # 2,100 > 2 x 1,000: thawed
    assert collector.calls == ["freeze", "freeze", "unfreeze"]
    assert (collector.frozen, collector.live, policy.thawed, policy.thaws) == (0, 2_100, True, 1)
    # The next full collection walks all 2,100 and reclaims what died frozen (here 900 of them); the rest is the
    # baseline of the next doubling.
    collector.live -= 900
    full_collection(policy, collector, kept=0)
    assert (collector.frozen, policy.frozen_at_thaw, policy.thawed) == (1_200, 1_200, False)
    full_collection(policy, collector, kept=1_000)  # 2,200 < 2 x 1,200: kept frozen
    assert (collector.frozen, policy.thaws) == (2_200, 1)
    full_collection(policy, collector, kept=300)  # 2,500 > 2,400
    assert (collector.frozen, collector.live, policy.thaws) == (0, 2_500, 2)
    assert THAW_GROWTH == 2


def test_an_empty_baseline_still_thaws() -> None:
    collector = FakeCollector(frozen=0)
    policy = FreezeSurvivors(collector, frozen_at_thaw=0)
    full_collection(policy, collector, kept=3)
    assert policy.thaws == 1


CHILD = textwrap.dedent("""
    import gc, weakref
    from logwright.garbage_collector import tune_garbage_collector

    class Node:
        pass

    def cycles(count):
        made = []
        for _ in range(count):
            node = Node()
            node.self = node
            made.append(node)
        return made

    policy = tune_garbage_collector()
    assert gc.get_threshold() == (10_000, 2, 10), gc.get_threshold()
    started = gc.get_freeze_count()  # what start-up froze: the baseline of the first doubling
    kept = cycles(started // 4)  # two tracked objects each (the node and its __dict__): half the baseline
    probe = weakref.ref(kept[0])
    gc.collect()  # a full collection: its survivors, the cycles among them, are frozen
    assert policy.freezes == 1 and policy.thaws == 0, policy
    assert gc.get_freeze_count() >= started + len(kept), (started, gc.get_freeze_count())
    del kept  # cyclic garbage, frozen: no collection sees it now
    gc.collect()
    assert probe() is not None, "a frozen cycle was collected before any thaw"
    grown = cycles(3 * gc.get_freeze_count())  # the frozen set more than doubles at the next full collection
    gc.collect()
    assert policy.thaws == 1 and gc.get_freeze_count() == 0, policy
    gc.collect()  # the walk of everything
    assert probe() is None, "a cycle that died frozen survived the walk after the thaw"
    assert gc.get_freeze_count() >= len(grown), "the survivors of the walk after the thaw are frozen again"
    print("ok", policy.freezes, policy.thaws)
""")


def test_a_cycle_that_died_frozen_is_reclaimed_after_the_thaw() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok")
