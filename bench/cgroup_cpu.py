"""A broker's CPU time to the microsecond: a cgroup v2 of its own, read from its ``cpu.stat``.

/proc's utime and stime count in clock ticks (10 ms). A curve point moves 100 MB, and at 1 GB/s a broker
spends 0.04-0.05 s of CPU on the consume phase: four or five ticks, so "0.4 against 0.5 s/GB" (the
1 MB consume rows of session 29) was one tick either way. Per-thread schedstat is precise but forgets the
threads that ended in between (the JVM's and RocksDB's come and go). A cgroup's ``usage_usec`` is precise
and keeps what every member used, ended threads and children included.

Every cgroup v2 hierarchy has ``cpu.stat`` with ``usage_usec`` in each group, with or without the cpu
controller (the "core" statistics), so a hybrid v1/v2 machine like this one works too. Where no cgroup v2
is mounted, or the group cannot be made (no permission, a delegation that forbids it), ``Meter.create``
returns None and the caller falls back to /proc; ``describe`` says which one measured.

A broker joins its group before it runs a single instruction of its own: the command is wrapped in
``sh -c 'echo $$ > cgroup.procs && exec "$@"'``, so every thread and child it starts is counted.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

_COUNTER = itertools.count()
PARENT = "logwright-bench"
"""The folder every meter's group is made in, below this process's own cgroup."""


def _cgroup2_mount() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or /sys/fs/cgroup/unified on hybrid
    machines), or None."""
    try:
        for line in Path("/proc/self/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 3 and fields[2] == "cgroup2":
                return Path(fields[1])
    except OSError:
        pass
    return None


def _own_group() -> str:
    """This process's group in the v2 hierarchy (the ``0::`` line of /proc/self/cgroup), "/" if none."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return line[3:].strip() or "/"
    except OSError:
        pass
    return "/"


def _sweep(parent: Path) -> None:
    """Remove the groups of runs that were killed before they could (their maker's pid, in the name, is gone)."""
    with contextlib.suppress(OSError):
        for group in parent.iterdir():
            maker = group.name.rsplit("-", 2)[-2] if group.name.count("-") >= 2 else ""
            if group.is_dir() and maker.isdigit() and not Path(f"/proc/{maker}").exists():
                with contextlib.suppress(OSError):
                    group.rmdir()  # refused while a process of it still runs


@dataclass(frozen=True, slots=True)
class Meter:
    """One cgroup that a broker's processes run in; ``seconds`` is the CPU they have used so far."""

    path: Path

    @classmethod
    def create(cls, label: str) -> Meter | None:
        """A new empty group named after ``label``, or None where this machine will not give one."""
        mount = _cgroup2_mount()
        if mount is None:
            return None
        parent = mount / _own_group().lstrip("/") / PARENT
        _sweep(parent)
        path = parent / f"{label}-{os.getpid()}-{next(_COUNTER)}"
        try:
            path.mkdir(parents=True)
            meter = cls(path)
            meter.seconds()  # a kernel without the core statistics has no cpu.stat
            joined = subprocess.run(meter.wrap(["true"]), stderr=subprocess.DEVNULL, timeout=10, check=False)
            if joined.returncode != 0:  # made, but not joinable (e.g. a delegation boundary)
                raise OSError(f"cannot join {path}")
        except (OSError, subprocess.TimeoutExpired):
            with contextlib.suppress(OSError):
                path.rmdir()
            return None
        return meter

    def wrap(self, command: list[str]) -> list[str]:
        """``command`` made to join this group first, under its own pid (``exec`` keeps the pid)."""
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.path / "cgroup.procs"), *command]

    def seconds(self) -> float:
        """CPU seconds (user + system) every process of the group has used, ended ones included."""
        for line in (self.path / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
        raise OSError(f"no usage_usec in {self.path / 'cpu.stat'}")

    def remove(self, timeout_s: float = 5.0) -> None:
        """Delete the group once its processes are gone (a killed process leaves it a moment later)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    return  # still busy: left for the next run's sweep
                time.sleep(0.05)
        with contextlib.suppress(OSError):
            self.path.parent.rmdir()  # only when no other meter is in use


def describe(meter: Meter | None) -> str:
    """Which instrument measured a broker's CPU, for a report's header."""
    if meter is None:
        return "/proc utime + stime of the broker's process group (10 ms ticks: no cgroup v2 here)"
    return "usage_usec of a cgroup v2 of the broker's own (cpu.stat, microseconds, ended threads included)"
