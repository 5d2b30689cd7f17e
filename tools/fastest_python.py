"""Print the CPython 3.11 on this machine that runs Python code fastest: the one `make` builds .venv on.

The broker's CPU per request is interpreter time (issue 18: ~60% of a produce request's samples are in
libpython), and how the interpreter was built changes it by more than most code changes do. On this
project's machines `python3` is pyenv's 3.11.7, built without profile-guided optimisation and linked to a
shared libpython; Debian's /usr/bin/python3.11 (3.11.2, built with PGO and LTO, the interpreter linked
statically) runs the broker's produce path 13% faster in process and spends 13% less CPU per GB under
Kafka's ProducerPerformance, 5% with librdkafka's 1 MB requests (session 29, bench/results/sends-s29.md).

Which build is faster is measured, not guessed from build flags (distributions do not record PGO in
sysconfig): every candidate that is CPython 3.11 and can create a virtual environment with pip (``venv`` and
``ensurepip`` import) times the same small pure-Python loop, best of seven, and the fastest wins. Builds
within 3% of the first candidate (``$PYTHON``, else ``python3``) lose to it, so a tie never changes the
choice. Prints the winner's path; the timings go to standard error.

    python3 tools/fastest_python.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

CANDIDATES = ("python3", "python3.11", "/usr/bin/python3.11", "/usr/local/bin/python3.11")
MARGIN = 0.97
"""A candidate replaces the default only when it takes less than this fraction of the default's time."""

PROBE = """
import sys, time
import ensurepip, venv
assert sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11)

class Item:
    __slots__ = ("key", "size")
    def __init__(self, key, size):
        self.key = key
        self.size = size

def work(n):
    index = {}
    total = 0
    for i in range(n):
        item = Item(str(i), i & 1023)
        index[item.key] = item
        total += item.size + len(item.key)
        if i % 3 == 0:
            del index[item.key]
    return total

best = float("inf")
for _ in range(7):
    started = time.perf_counter()
    work(60_000)
    best = min(best, time.perf_counter() - started)
print(best)
print(sys.executable)
"""


def measure(command: str) -> tuple[str, float] | None:
    """The interpreter's real path and its best time for the probe, or None if it is not a usable 3.11."""
    path = shutil.which(command)
    if path is None:
        return None
    try:
        done = subprocess.run([path, "-c", PROBE], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    seconds, executable = done.stdout.split("\n", 1)
    return os.path.realpath(executable.strip()), float(seconds)


def main() -> int:
    default = os.environ.get("PYTHON") or "python3"
    timed: dict[str, float] = {}
    order: list[str] = []
    for command in (default, *CANDIDATES):
        found = measure(command)
        if found is not None and found[0] not in timed:
            timed[found[0]] = found[1]
            order.append(found[0])
    if not order:
        print("python3")
        return 0
    chosen = order[0]
    for path in order[1:]:
        if timed[path] < timed[chosen] * MARGIN:
            chosen = path
    for path in order:
        print(f"fastest_python: {path} {timed[path] * 1e3:.1f} ms{'  <- chosen' if path == chosen else ''}",
              file=sys.stderr)
    print(chosen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
