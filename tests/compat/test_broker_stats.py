"""LogwrightBrokerStats' counting, without sockets: tasks by coroutine, memory and descriptors."""

from __future__ import annotations

import asyncio

from logwright.compat.extensions.broker_stats import open_descriptors, resident_bytes, task_counts


def test_tasks_are_counted_by_coroutine_name() -> None:
    async def idle(release: asyncio.Event) -> None:
        await release.wait()

    async def scenario() -> dict[str, int]:
        release = asyncio.Event()
        waiting = [asyncio.create_task(idle(release)) for _ in range(3)]
        counts = task_counts()
        release.set()
        await asyncio.gather(*waiting)
        return dict(counts)

    counts = asyncio.run(scenario())
    assert counts["test_tasks_are_counted_by_coroutine_name.<locals>.idle"] == 3
    assert counts["test_tasks_are_counted_by_coroutine_name.<locals>.scenario"] == 1


def test_memory_and_descriptors_of_this_process() -> None:
    rss, fds = resident_bytes(), open_descriptors()
    assert rss is not None and rss > 10 * 2**20
    assert fds is not None and fds >= 3
