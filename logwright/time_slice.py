"""A short CPU time slice for the event loop's thread, so a client woken by an answer does not take its CPU.

The broker answers from one thread. On this project's 2-vCPU test machine (Linux 6.18, whose EEVDF scheduler
gives each task a time slice), writing an answer wakes the client that waits for it, and the client often runs
at once on the broker's vCPU: the broker's thread then waits, runnable, until the client's own work is done. In
the one-producer, one-consumer connections workload 18-39% of the answer writes took over 0.2 ms, of which 85%
was waiting for the CPU (schedstat run-queue delay), and a commit the loop had already scheduled waited behind
such a write (p90 from scheduled to run: 431 us against 57 at p50). Kafka answers from network threads, so its
request handlers keep going while one of them is preempted.

A task may ask EEVDF for a shorter slice (``sched_attr.sched_runtime`` of a fair task, Linux 6.12+, no privilege
needed): it gets earlier virtual deadlines, so the client it wakes waits for the loop to finish its turn instead
of preempting it. Its share of the CPU does not change, only when it runs. With 100 us, the scheduled commit's
p90 fell to 86-137 us, and the 50-connection workload's produce p99 was lower in 7 of 9 alternated pairs
(``README``, session 28). Python's ``os`` module has no ``sched_setattr``, hence the system call through ctypes
here; the buffer handed to the kernel is a fixed 48-byte ``struct sched_attr`` (``SCHED_ATTR_SIZE_VER0``).

Only the calling thread is changed (threads it starts later inherit it). Its policy (normal or batch) and nice
value are kept. On an older kernel the call succeeds but the kernel ignores the runtime; `request_time_slice`
reads it back and says so. Other architectures, or a call the kernel or a sandbox refuses, leave the thread alone.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform
import struct

log = logging.getLogger(__name__)

SLICE_KEY = "logwright.scheduler.slice.us"
"""Broker config: the event loop thread's time slice in microseconds; 0 keeps the kernel's default."""

SLICE_LIMITS_US = (100, 100_000)
"""What Linux accepts for a fair task's slice (it clamps to 0.1-100 ms)."""

_SYSCALLS = {"x86_64": (314, 315), "aarch64": (274, 275)}
"""sched_setattr, sched_getattr per architecture."""

_ATTR = struct.Struct("IIQiIQQQ")
"""struct sched_attr, version 0: size, policy, flags, nice, priority, runtime, deadline, period (48 bytes)."""


def _syscalls() -> tuple[int, int] | None:
    return _SYSCALLS.get(platform.machine()) if platform.system() == "Linux" else None


def current_slice_ns() -> int | None:
    """The calling thread's time slice in nanoseconds (the kernel's default until one is requested); None if it
    cannot be read."""
    numbers = _syscalls()
    if numbers is None:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(_ATTR.size)
    if libc.syscall(numbers[1], 0, buffer, _ATTR.size, 0) != 0:
        return None
    return int(_ATTR.unpack(buffer.raw)[5])


def request_time_slice(microseconds: int) -> bool:
    """Ask the kernel for a ``microseconds`` slice for the calling thread; whether it took effect. 0 does nothing."""
    if microseconds <= 0:
        return False
    numbers = _syscalls()
    if numbers is None:
        log.info("no time slice requested: sched_setattr is not known on %s %s", platform.system(), platform.machine())
        return False
    policy = os.sched_getscheduler(0)
    if policy not in (os.SCHED_OTHER, os.SCHED_BATCH):  # idle or real-time: not the fair class this is about
        log.info("no time slice requested: the broker runs under scheduling policy %d", policy)
        return False
    runtime_ns = min(max(microseconds, SLICE_LIMITS_US[0]), SLICE_LIMITS_US[1]) * 1000
    attr = ctypes.create_string_buffer(
        _ATTR.pack(_ATTR.size, policy, 0, os.getpriority(os.PRIO_PROCESS, 0), 0, runtime_ns, 0, 0), _ATTR.size)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(numbers[0], 0, attr, 0) != 0:
        log.info("no time slice requested: sched_setattr failed (%s)", os.strerror(ctypes.get_errno()))
        return False
    if current_slice_ns() != runtime_ns:  # before Linux 6.12 a fair task's runtime is accepted and ignored
        log.info("the kernel keeps its own time slice (Linux 6.12 or later honours %s)", SLICE_KEY)
        return False
    log.info("event loop thread: %d us time slice", runtime_ns // 1000)
    return True
