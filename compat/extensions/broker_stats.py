"""LogwrightBrokerStats (extension key 32007): how many connections, asyncio tasks and bytes the broker holds now.

Read-only and cheap (one pass over the event loop's tasks, two reads of ``/proc/self``): what a soak run
samples to see that connections, tasks and descriptors go back to where they were once the clients leave
(bench/soak.py), and what an operator asks when the process seems to grow.

Request (msgpack map, may be empty). Response: ``error_code, error_message, now_ms, connections, tasks,
tasks_by_coroutine: {qualified name: count}, rss_bytes, open_fds, python_blocks, fetch_sessions,
fetch_session_partitions, fetch_session_evictions``. ``connections`` counts the
server's open connections (accepted and not yet closed, `compat.server.KafkaServer.connections`); ``rss_bytes``
and ``open_fds`` are nil where ``/proc`` is not there.
``python_blocks`` is the interpreter's count of allocated memory blocks (a count, not bytes: a 256 KiB buffer
is one block): a steady count while RSS grows points away from leaked Python objects, towards RocksDB's
memtables and caches or a few large buffers.
``fetch_sessions``, ``fetch_session_partitions`` and ``fetch_session_evictions`` are Kafka's
NumIncrementalFetchSessions, NumIncrementalFetchPartitionsCached and the count behind
IncrementalFetchSessionEvictionsPerSec (`compat.fetch_sessions`).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections import Counter
from pathlib import Path

from logwright.compat.extensions.access import describing_the_cluster
from logwright.compat.registry import RequestContext
from logwright.compat.wire.extension_body import Body, extension

API_KEY = 32007


def task_counts() -> Counter[str]:
    """Live tasks of the running loop by their coroutine's qualified name (``"?"`` for a task without one)."""
    counts: Counter[str] = Counter()
    for task in asyncio.all_tasks():
        coroutine = task.get_coro()
        counts[str(getattr(coroutine, "__qualname__", "?"))] += 1
    return counts


def resident_bytes() -> int | None:
    """VmRSS of this process, or None without ``/proc``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def open_descriptors() -> int | None:
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # listing the directory opens one itself
    except OSError:
        return None


@extension(API_KEY, "LogwrightBrokerStats", describing_the_cluster)
async def handle(context: RequestContext, body: Body) -> Body:
    counts = task_counts()
    sessions = context.broker.fetch_sessions
    return {"now_ms": context.broker.clock.now_ms(), "connections": len(context.broker.connections),
            "tasks": sum(counts.values()), "tasks_by_coroutine": dict(counts.most_common()),
            "rss_bytes": resident_bytes(), "open_fds": open_descriptors(), "python_blocks": sys.getallocatedblocks(),
            "fetch_sessions": len(sessions.sessions), "fetch_session_partitions": sessions.partitions_cached,
            "fetch_session_evictions": sessions.evictions}
