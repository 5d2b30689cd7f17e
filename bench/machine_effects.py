"""What this machine itself adds to a benchmark's figures, measured without any broker (issue 18).

Four effects bend the broker figures of ``compare.py`` on a virtual machine, whichever broker is measured; each is
measured here with nothing but this process, so a report can say how much of a figure is the machine's:

- **Profiler bias.** py-spy stops the process for each sample by default; on this VM the stop lands at the
  process's next system call, so a line that makes one is sampled far more often than its share of the time. A loop
  of ~90 us of arithmetic and one ``os.getpid()`` (0.2 us) is sampled blocking and ``--nonblocking``: the share of
  samples on the ``getpid`` line is the bias (its true share is well under 1%). Needs py-spy (the bench extra).
- **First touch of memory.** A page the guest has not used lately costs a fault in the host when the kernel first
  writes it; the balloon's free-page reporting hands freed memory back to the host within seconds. So writing new
  bytes into the page cache (what every broker's produce does) costs kernel time per GB that depends on whether the
  pages were freed just before. A file of ``--touch-mb`` is written after ``--idle-s`` idle, written again at once
  after deleting the first, and again after another idle gap: kernel CPU seconds per GB each time.
- **Kept page cache.** The same cost once memory runs out: chunks of ``--kept-chunk-mb`` are written one after
  another and kept, kernel CPU per GB each, then one more right after the page cache is written back and dropped
  (root only). Here, right after the first-touch probe, 0.16-0.18 s/GB for the first GB, 2.3-2.4 for every GB after,
  0.25 after the drop (results/machine_effects-s40.md).
- **Idle gap.** The first piece of work after the process slept runs slower than the same work done back to back
  (cold caches, a vCPU woken from halt). A fixed pure-Python unit of work is timed back to back and after sleeps
  of 1 s: the ratio is what one request pays after a pause, as a Metadata ask or a single OffsetCommit does in the
  latency rows.

    .venv/bin/python bench/machine_effects.py [--touch-mb 1024] [--idle-s 20] [--kept-chunks 12] [--markdown out.md]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from compare_api import release_page_cache

_BIAS_TARGET = '''
import os, time
def work():
    total = 0
    for i in range(2000):
        total += i * i
    return total
def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        work()
        os.getpid()  # SYSCALL LINE
spin(float(__import__("sys").argv[1]))
'''


def profiler_bias(seconds: float) -> dict[str, float] | None:
    """Share of py-spy samples on the ``getpid`` line, blocking and non-blocking, and its true share (timed)."""
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if spy is None:
        return None
    with tempfile.TemporaryDirectory() as work:
        target = Path(work) / "spin.py"
        target.write_text(_BIAS_TARGET)
        line = next(n for n, text in enumerate(_BIAS_TARGET.splitlines(), 1) if "SYSCALL LINE" in text)
        shares = {}
        for mode, flags in (("blocking", []), ("nonblocking", ["--nonblocking"])):
            raw = Path(work) / f"{mode}.txt"
            subprocess.run([spy, "record", *flags, "--rate", "200", "--format", "raw", "--output", str(raw), "--",
                            sys.executable, str(target), str(seconds)], check=True, capture_output=True)
            shares[f"{mode} %"] = 100 * _leaf_share(raw, f"spin.py:{line})")
    shares["true %"] = 100 * _true_getpid_share()
    return shares


def _leaf_share(raw: Path, leaf_suffix: str) -> float:
    counts: Counter[bool] = Counter()
    for text in raw.read_text().splitlines():
        stack, _, count = text.rpartition(" ")
        if stack:
            counts[stack.split(";")[-1].endswith(leaf_suffix)] += int(count)
    return counts[True] / max(1, sum(counts.values()))


def _true_getpid_share() -> float:
    def work() -> int:
        total = 0
        for i in range(2000):
            total += i * i
        return total

    began = time.perf_counter()
    for _ in range(2000):
        work()
    work_s = time.perf_counter() - began
    began = time.perf_counter()
    for _ in range(2000):
        os.getpid()
    return (time.perf_counter() - began) / work_s


def _kernel_s() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_stime


def write_file(path: Path, megabytes: int) -> float:
    """Kernel CPU seconds per GB to write ``megabytes`` of new bytes into the page cache (no fsync)."""
    chunk = b"\xa5" * (1 << 20)
    before = _kernel_s()
    with path.open("wb") as file:
        for _ in range(megabytes):
            file.write(chunk)
    return (_kernel_s() - before) / (megabytes / 1024)


def first_touch(megabytes: int, idle_s: float, where: Path) -> dict[str, float]:
    path = where / "machine-effects-touch.bin"
    try:
        time.sleep(idle_s)
        cold = write_file(path, megabytes)
        path.unlink()
        recycled = write_file(path, megabytes)
        path.unlink()
        time.sleep(idle_s)
        after_idle = write_file(path, megabytes)
    finally:
        path.unlink(missing_ok=True)
    return {"cold s/GB": cold, "just freed s/GB": recycled, f"after {idle_s:.0f} s idle s/GB": after_idle}


def kept_page_cache(chunk_mb: int, chunks: int, where: Path,
                    drop: Callable[[], bool] = release_page_cache) -> dict[str, float]:
    """Kernel CPU per GB of each ``chunk_mb`` written while every earlier chunk stays cached, then of one more
    written right after the page cache is written back and dropped (``drop``; left out when it cannot drop).

    Why: in session 39 logwright's produce CPU doubled beside Kafka. Once the page cache kept by earlier work fills the
    memory the host still backs (what was freed lately: 1-4 GB here), each further GB costs the host's first-touch
    faults; dropping the cache gives back memory the host backs (bench/results/session40.md). This shows the knee
    without a broker.
    """
    paths = [where / f"machine-effects-kept-{index}.bin" for index in range(chunks + 1)]
    figures: dict[str, float] = {}
    try:
        for index, path in enumerate(paths[:-1]):
            figures[f"{index * chunk_mb / 1024:g} GB kept s/GB"] = write_file(path, chunk_mb)
        if drop():
            figures["dropped s/GB"] = write_file(paths[-1], chunk_mb)
    finally:
        for path in paths:
            path.unlink(missing_ok=True)
    return figures


def idle_gap(rounds: int) -> dict[str, float]:
    """Median ms of one unit of work back to back and right after a 1 s sleep."""
    def unit() -> float:
        began = time.perf_counter()
        table = {}
        for i in range(20_000):
            table[i % 997] = table.get(i % 991, 0) + i
        return (time.perf_counter() - began) * 1000

    hot = []
    for _ in range(rounds * 5):
        hot.append(unit())
    cold = []
    for _ in range(rounds):
        time.sleep(1.0)
        cold.append(unit())
    return {"back to back ms": statistics.median(hot), "after 1 s sleep ms": statistics.median(cold),
            "after sleep / back to back": statistics.median(cold) / statistics.median(hot)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--touch-mb", type=int, default=1024)
    parser.add_argument("--idle-s", type=float, default=20.0)
    parser.add_argument("--bias-s", type=float, default=6.0)
    parser.add_argument("--gap-rounds", type=int, default=10)
    parser.add_argument("--kept-chunk-mb", type=int, default=512)
    parser.add_argument("--kept-chunks", type=int, default=12, help="chunks written and kept (0: skip the probe)")
    parser.add_argument("--tmp", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    sections = {
        "py-spy samples on a getpid line (of ~90 us of work per call)": profiler_bias(args.bias_s),
        f"writing {args.touch_mb} MB into the page cache: kernel CPU": first_touch(args.touch_mb, args.idle_s,
                                                                                   args.tmp),
        f"writing {args.kept_chunk_mb} MB at a time, every chunk kept, then once after dropping the page cache: "
        "kernel CPU": kept_page_cache(args.kept_chunk_mb, args.kept_chunks, args.tmp) if args.kept_chunks else None,
        "one unit of pure-Python work": idle_gap(args.gap_rounds),
    }
    lines = [f"# Machine effects ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"load {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs, kernel {os.uname().release})", ""]
    for title, values in sections.items():
        lines.append(f"- {title}: " + ("not measured" if values is None else
                                         ", ".join(f"{key} {value:.2f}" for key, value in values.items())))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
