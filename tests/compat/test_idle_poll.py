"""The idle-poll selector: events come back as from epoll, the poll never outlasts the loop's timeout, and its
window grows when events come soon after a poll and shrinks to nothing when the broker is idle."""

from __future__ import annotations

import selectors
import socket
import time
from collections.abc import Iterator

import pytest
from logwright.compat.idle_poll import SMALLEST_WINDOW_S, IdlePollSelector


class SteppingClock:
    """Each reading is ``step`` seconds after the last: a poll of a window ends after window / step readings."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    left, right = socket.socketpair()
    yield left, right
    left.close()
    right.close()


def test_a_ready_socket_is_returned_and_an_idle_one_is_not(pair: tuple[socket.socket, socket.socket]) -> None:
    left, right = pair
    selector = IdlePollSelector(200e-6)
    selector.register(right, selectors.EVENT_READ)
    left.send(b"x")
    assert [key.fileobj for key, _ in selector.select(1.0)] == [right]
    right.recv(1)
    assert selector.select(0.01) == []  # polled, then slept out the rest of the timeout
    assert selector.select(0) == []


class _SendsOnceAsleep(selectors.EpollSelector):
    """Below `IdlePollSelector` in the MRO: its blocking wait (any but ``select(0)``) first sends ``wake`` a byte,
    so the event comes once the poll has given up, however late a thread of the test would have been scheduled."""

    wake: socket.socket | None = None

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout != 0 and self.wake is not None:
            self.wake.send(b"x")
        return super().select(timeout)


class _WokenWhileAsleep(IdlePollSelector, _SendsOnceAsleep):
    pass


def test_the_window_shrinks_to_nothing_while_idle_and_grows_back(pair: tuple[socket.socket, socket.socket]) -> None:
    left, right = pair
    selector = _WokenWhileAsleep(1.0)
    selector.register(right, selectors.EVENT_READ)
    for _ in range(20):  # each wait ends by its timeout with no event: polling only cost
        selector.select(0.001)
    assert selector.window == 0.0
    windows = []
    selector.wake = left
    for _ in range(4):  # an event while asleep, past the poll, well within the longest window
        selector.select(5.0)
        right.recv(1)
        windows.append(selector.window)
    selector.wake = None
    assert windows == pytest.approx([SMALLEST_WINDOW_S * 2**n for n in range(4)])
    left.send(b"x")  # caught by the poll itself: the window stays
    selector.select(5.0)
    assert selector.window == pytest.approx(windows[-1])


def test_the_poll_never_outlasts_the_loops_timeout(pair: tuple[socket.socket, socket.socket]) -> None:
    _, right = pair
    selector = IdlePollSelector(0.05)  # a long window: the timeout, shorter, bounds it
    selector.register(right, selectors.EVENT_READ)
    started = time.monotonic()
    assert selector.select(0.002) == []
    assert time.monotonic() - started < 0.04


def test_zero_never_polls(pair: tuple[socket.socket, socket.socket]) -> None:
    _, right = pair
    clock = SteppingClock(1.0)
    selector = IdlePollSelector(0.0, clock)
    selector.register(right, selectors.EVENT_READ)
    assert selector.select(0.001) == []
    assert clock.now == 0.0  # the clock was never read
