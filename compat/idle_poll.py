"""A selector that polls a little before it sleeps: the broker's vCPU stays awake across a request/answer gap.

On this machine's guest (Firecracker, ``haltpoll.guest_halt_poll_ns=0``) a vCPU with nothing to run halts at once,
and the request that wakes it pays for it: in process, one produce after a 200 us sleep cost 112-152 us of CPU
against 66-69 after a 200 us spin (bench/results/probes-s32.md). So when the event loop would block, this
selector first polls ``epoll_wait(0)`` for up to a window, as Seastar's reactor (Redpanda's
``--idle-poll-time-us``) and the kernel's own haltpoll do; off unless asked for (`DEFAULT_IDLE_POLL_US`).
Four alternated pairs of brokers, one client at a time: a one-record produce 227-289 us a round trip against
295-384, a 10-partition librdkafka commit 0.32-0.41 ms against 0.42-0.48, and no more broker CPU per request
(226-286 us against 248-320).

The window adapts as haltpoll's: an event that came soon after the poll gave up (within the longest window) doubles
it; a long sleep, or a wake-up with no event (a timer of the loop's own), halves it, down to none. An idle broker
therefore polls not at all, and one serving a steady stream of requests polls only across the gaps between them.
Time is only measured here (a monotonic clock bounds the poll); what the loop waits for, and when its timers fire,
is unchanged: the poll is taken out of the timeout the loop asked for.
"""

from __future__ import annotations

import selectors
import time
from collections.abc import Callable

DEFAULT_IDLE_POLL_US = 0
"""The longest poll before sleeping (``logwright serve --idle-poll-us``; 0 never polls). Off by default: one client
at a time gains ~20% of a round trip, but in the whole comparison of session 32 (compare-s32.md), with the poll at
200 us, the rows where several busy processes share the two vCPUs went the other way (1,000 groups' commit p99
2.39x Kafka's against 1.05 the run before, the share consumer under load 0.92 against 1.34, the 10-partition commit
beside a pinger 2.72 against 2.00): a polling broker takes time its clients need."""
SMALLEST_WINDOW_S = 10e-6
"""A window below this is none; a grown window starts here."""


class IdlePollSelector(selectors.EpollSelector):
    """`selectors.EpollSelector` that polls for up to its adaptive window before a blocking wait."""

    def __init__(self, max_poll_s: float, clock: Callable[[], float] = time.perf_counter) -> None:
        super().__init__()
        self._max = max(0.0, max_poll_s)
        self._window = self._max
        self._clock = clock

    @property
    def window(self) -> float:
        """Seconds the next blocking wait polls first."""
        return self._window

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if self._max <= 0 or (timeout is not None and timeout <= 0):
            return super().select(timeout)
        clock, window = self._clock, self._window
        started = clock()
        now = started
        if window > 0:
            limit = started + (window if timeout is None else min(window, timeout))
            while True:
                ready = super().select(0)
                if ready:
                    return ready
                now = clock()
                if now >= limit:
                    break
        remaining = None if timeout is None else max(0.0, timeout - (now - started))
        ready = super().select(remaining)
        if ready and clock() - started < self._max:  # a longer poll would have caught it
            self._window = min(self._max, max(2 * window, SMALLEST_WINDOW_S))
        else:  # a long sleep, or the loop's own timer: polling only cost
            self._window = window / 2 if window / 2 >= SMALLEST_WINDOW_S else 0.0
        return ready
