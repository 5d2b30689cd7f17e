"""What bench/compare.py runs: a ``Workload`` names its metrics and measures one peer per call.

A workload module exposes ``WORKLOADS: list[Workload]`` and is listed once in ``compare.WORKLOAD_MODULES``;
nothing else has to change for its table, its targets and its bars in the plot to appear. ``measure(ctx,
peer)`` is called once per repeat for every peer the workload supports (the peers take turns in a rotating
order) and returns one value per metric key; it raises ``NotApplicable`` when the peer turns out unable to
run it, and any other exception is recorded as a failed repeat with its message, not a crash of the session.

    def measure(ctx: Context, peer: str) -> dict[str, float]:
        broker = ctx.broker(peer)            # shared by every workload, started on first use
        ...
        return {"MB/s": 123.0}

    WORKLOADS = [Workload("share consume, 1 KiB", (Metric("MB/s", target=1.0),), measure,
                          method="How it is measured, one paragraph for the report.",
                          not_applicable={"tansu": "Tansu 0.6 has no share groups"})]
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import brokers

PEER_NAMES = ("kafka", "tansu", "logwright")
"""Every broker compared, the reference first; report columns follow this order."""

REFERENCE = "kafka"
"""Every figure is also given as a ratio to Apache Kafka measured in the same session."""

SUBJECT = "logwright"
"""The peer whose ratios are checked against the targets."""

QUIET_SHARE = 0.10
"""A broker is quiet while it uses at most this share of one core (Kafka at rest: ~2%, logwright: ~0)."""
QUIET_WINDOW_S = 0.25
QUIET_GIVE_UP_S = 30.0
"""Measure anyway after this long, with the wait in the sample (``quiet_wait_s``)."""


def wait_until_quiet(read_cpu: Callable[[], list[float]], sleep: Callable[[float], None] = time.sleep,
                     clock: Callable[[], float] = time.monotonic) -> float:
    """Wait until none of the brokers ``read_cpu`` reads (CPU seconds so far, one per broker) used more than
    `QUIET_SHARE` of a core over a `QUIET_WINDOW_S` window, or `QUIET_GIVE_UP_S` passed; the seconds waited.

    Why: a broker's background work after its own measurement ran on the same two cores during the next peer's.
    Right after Kafka's 1,000-partition produce (its files to delete, its logs to flush), logwright's read
    44.5-95.5 MB/s at 9.3-15.0 CPU s/GB; alone, 103.7-111.2 at 8.5-8.8 (session 21).
    """
    began = clock()
    before = read_cpu()
    while before and clock() - began < QUIET_GIVE_UP_S:
        sleep(QUIET_WINDOW_S)
        after = read_cpu()
        if max(now - then for now, then in zip(after, before, strict=True)) <= QUIET_SHARE * QUIET_WINDOW_S:
            break
        before = after
    return clock() - began


@dataclass(frozen=True, slots=True)
class Metric:
    """One figure a workload reports, e.g. ``Metric("p99", "ms", higher_is_better=False, target=1.5)``.

    ``target`` is the ratio logwright/Kafka the issue asks for: at least it when ``higher_is_better``,
    at most it otherwise. ``plot=False`` keeps a metric out of the PNG (msg/s has the same ratio as MB/s).
    ``slack``: how far a ratio may miss the target and still meet it, for a rate the workload itself fixes (records
    or commits offered per second). Two brokers that both deliver all that is offered differ by the few records at
    the window's edges (4,000.2 against 4,000.3 rec/s read "1.00, not met"); a broker that cannot keep up falls far
    further short.
    """

    key: str
    unit: str = ""
    higher_is_better: bool = True
    target: float | None = None
    plot: bool = True
    decimals: int = 1
    slack: float = 0.0


class NotApplicable(Exception):  # noqa: N818 - a result ("n/a"), not a failure
    """Raised by ``measure`` when the peer cannot run the workload; the message is the reason shown."""


@dataclass(slots=True)
class Context:
    """What a measure function gets besides the peer's name: sizes, shared brokers, private brokers.

    ``quick`` asks for a smoke-sized run; ``size(full, quick)`` picks between the two and applies ``scale``.
    """

    workdir: Path
    quick: bool = False
    scale: float = 1.0
    options: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    say: Callable[[str], None] = print
    _shared: dict[str, brokers.RunningPeer] = field(default_factory=dict)
    _numbers: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def size(self, full: int, quick: int) -> int:
        """``full`` or, in a quick run, ``quick``; multiplied by ``--scale`` and at least 1."""
        return max(1, int((quick if self.quick else full) * self.scale))

    def new_dir(self, label: str) -> Path:
        """A fresh, empty directory under the session's work dir (removed with it)."""
        path = self.workdir / f"{label}-{next(self._numbers)}"
        path.mkdir(parents=True)
        return path

    def broker(self, name: str) -> brokers.RunningPeer:
        """The session's long-running broker ``name``, started on first use, stopped when the session ends."""
        peer = self._shared.get(name)
        if peer is not None and peer.process.poll() is not None:
            raise RuntimeError(f"the shared {name} broker exited ({peer.process.returncode}): {peer.log_tail()}")
        if peer is None:
            started = time.monotonic()
            peer = brokers.start(name, self.new_dir(f"shared-{name}"), **self.options.get(name, {}))
            self._shared[name] = peer
            self.say(f"started {name} on {peer.bootstrap} in {time.monotonic() - started:.1f} s")
        return peer

    @contextmanager
    def fresh(self, name: str, workdir: Path | None = None, **options: str) -> Iterator[brokers.RunningPeer]:
        """A private broker ``name`` for one measurement (start-up, memory at rest), stopped at block end.

        Pass the same ``workdir`` again to restart a broker on the data it stored.
        """
        merged = {**self.options.get(name, {}), **options}
        with brokers.running(name, workdir or self.new_dir(f"fresh-{name}"), **merged) as peer:
            yield peer

    def quiesce(self, measured: str) -> float:
        """Wait until every shared broker but ``measured`` is quiet (`wait_until_quiet`); the seconds waited. Not in a
        quick run: its single samples show shapes, and it must stay under 3 minutes (the waits took it to 3.1)."""
        if self.quick:
            return 0.0
        others = [peer for name, peer in self._shared.items() if name != measured and peer.process.poll() is None]
        return wait_until_quiet(lambda: [peer.cpu_seconds() for peer in others])

    def close(self) -> None:
        """Stop every shared broker."""
        for peer in self._shared.values():
            peer.stop()
        self._shared.clear()


DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def release_page_cache(control: Path = DROP_CACHES, sync: Callable[[], None] = os.sync) -> bool:
    """Write dirty pages back and drop the clean page cache, so every sample starts with the same memory at hand;
    False where this process may not (not root, a container's read-only /proc).

    Why: this VM's host takes back guest memory left unused, and the kernel's first write into such a page costs a fault
    in the host. While the page cache kept from earlier samples (both brokers' files) fills the memory the host
    still backs (what was freed lately: 1-4 GB here), every further GB a broker writes costs ~1.3 s more kernel
    time: logwright's 100 KiB produce went from 0.7 to 1.6-2.0 CPU s/GB after five runs' files were kept, and stayed
    at 0.7 over ten such runs with the cache dropped before each (session 40). Which peer paid followed the
    session's history, not the broker: Kafka's 1 KiB produce in session 33 (0.98-2.59 s/GB), logwright's in session
    39 (0.94-2.96).
    """
    try:
        sync()
        control.write_text("1")
    except OSError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Workload:
    """A unit of the comparison: its name (a report section), metrics, measure function and method.

    ``not_applicable`` maps a peer to the reason it is skipped. ``repeats`` caps the session's repeats for
    a slow workload. ``smoke`` puts it in ``compare.py --smoke``, the few points that show each curve's
    shape in under 3 minutes. ``warmup`` runs ``measure`` once per peer at ``warmup_scale`` of the size before the
    first repeat and discards it (JIT, first-request schema loading, connection set-up). ``drop_page_cache`` false
    keeps the page cache before each call (`release_page_cache`): a workload that times reading stored files back
    (start-up) would time the disk instead.
    """

    name: str
    metrics: tuple[Metric, ...]
    measure: Callable[[Context, str], Mapping[str, float]]
    method: str
    not_applicable: Mapping[str, str] = field(default_factory=dict)
    repeats: int | None = None
    warmup: bool = False
    warmup_scale: float = 0.2
    smoke: bool = False
    drop_page_cache: bool = True

    def peers(self, names: tuple[str, ...] = PEER_NAMES) -> list[str]:
        return [name for name in names if name not in self.not_applicable]


@dataclass(frozen=True, slots=True)
class OwnRatio:
    """A target a broker meets against itself: ``metric`` of workload ``of`` divided by the same metric of workload
    ``to``, at least ``target`` (issue 18: throughput at 1,000 partitions at least half the broker's own one-partition
    figure). Kafka's own ratio stands beside it in the report, for the shape of the reference's curve."""

    of: str
    to: str
    metric: str
    target: float
