"""Waiting on the broker: long polls until records are committed (anywhere, or to the partitions they read), and
sleeps on the broker clock, woken when a manual clock is advanced, so tests move time instead of sleeping.

A mixin of `Broker`: its commits wake the long polls (`Broker._on_commit`), and LogwrightAdvanceClock calls
`clock_advanced`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection

from logwright.core.clock import Clock, ManualClock


class BrokerWaits:
    """Long polls and broker-clock sleeps (`Broker` inherits them)."""

    clock: Clock
    _data_arrived: asyncio.Event | None
    _partition_waiters: dict[int, set[asyncio.Future[None]]]
    _clock_moved: asyncio.Event | None

    async def wait_for_data(self, timeout_s: float, partition_ids: Collection[int] | None = None) -> None:
        """Sleep until a commit appends records anywhere, or to one of ``partition_ids`` when given, or the
        timeout passes (Fetch long polls).

        With ``partition_ids`` a long poll is not woken by appends it cannot use: with many consumers waiting
        at the tail of quiet topics, waking all of them on every commit to a busy one made each re-read every
        partition it asked for, per commit (Kafka's delayed fetches are likewise keyed by partition).
        ``asyncio.timeout``, not ``wait_for``: on Python 3.11 ``wait_for`` returns normally when the data
        arrives in the same loop turn as a cancellation, so a shutdown could lose its cancel here.
        """
        if timeout_s <= 0:
            return
        if partition_ids is not None:
            await self._wait_for_partitions(timeout_s, partition_ids)
            return
        if self._data_arrived is None:
            self._data_arrived = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self._data_arrived.wait()

    async def _wait_for_partitions(self, timeout_s: float, partition_ids: Collection[int]) -> None:
        arrived: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for partition_id in partition_ids:
            self._partition_waiters.setdefault(partition_id, set()).add(arrived)
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):
                    await arrived
        finally:
            for partition_id in partition_ids:
                waiters = self._partition_waiters.get(partition_id)
                if waiters is not None:
                    waiters.discard(arrived)
                    if not waiters:
                        del self._partition_waiters[partition_id]

    # -- waiting on the broker clock ----------------------------------------------------------

    async def sleep_until(self, time_ms: int) -> None:
        """Wait until the broker clock reads ``time_ms`` (plugins' background tasks wait this way).

        On the system clock that is the remaining wall time; on a manual clock (``serve --manual-clock``)
        it is until LogwrightAdvanceClock moves the clock there: that request answers only after every
        sleeper it woke has run up to its next ``await``, with what it staged meanwhile durable.
        """
        while (remaining_ms := time_ms - self.clock.now_ms()) > 0:
            if self._clock_moved is None:
                self._clock_moved = asyncio.Event()
            moved = self._clock_moved.wait()
            if isinstance(self.clock, ManualClock):
                await moved
                continue
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining_ms / 1000):
                    await moved

    async def sleep(self, milliseconds: int) -> None:
        """`sleep_until` ``milliseconds`` from now on the broker clock."""
        await self.sleep_until(self.clock.now_ms() + milliseconds)

    def clock_advanced(self) -> None:
        """Wake every `sleep_until` to look at the clock again (after a manual clock moved)."""
        if self._clock_moved is not None:
            self._clock_moved.set()
            self._clock_moved = None
