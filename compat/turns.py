"""How work split into slices gives way to other requests between its slices.

A request read while a long task runs needs three event-loop turns to be answered: its read (which starts its task),
its task's step, and the done callback that writes its answer (two for a handler started at once,
`start_at_once`; one when that handler ends in its first step, answered from the read). Each of these goes to the
back of the loop's ready queue, behind the long task's next slice when that task yielded for one turn only
(``asyncio.sleep(0)``): a ping during a 5,000-partition OffsetCommit waited behind three more slices than the one
running when it arrived. Waiting
`TURNS_GIVEN_WAY` turns between slices lets it through behind that one slice only; each extra turn costs the long
task one pass of the loop (an epoll_wait(0) and whatever else is ready), microseconds against the slices' milliseconds.

Measured in process, a ping on its own connection during each 5,000-partition request, 4 runs, one turn against
four: OffsetCommit 27-35 against 18-30 ms (median 30 against 19), DeleteRecords 32-47 against 21-25, OffsetFetch
(after its first use) 8-10 against 2.5-5.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator, Iterable
from typing import Any, TypeVar

from logwright.compat.wire.encoder import OnceAnswered

_Name = TypeVar("_Name")
_Result = TypeVar("_Result")

TURNS_GIVEN_WAY = 4
ANSWERS_PER_TURN = 2_000
"""Entries a request answers before it gives way (`Slices`: a few milliseconds of building them)."""


async def give_way() -> None:
    """Let the loop run `TURNS_GIVEN_WAY` turns before going on with the next slice of a long piece of work."""
    for _ in range(TURNS_GIVEN_WAY):
        await asyncio.sleep(0)


class Slices:
    """Counts a request's work as it goes and gives way every ``per_turn`` units: for the admin APIs whose entries a
    client may send by the hundred thousand, each answered with an entry (and a message) of its own. 250,000
    partitions of one ElectLeaders, DescribeQuorum or AlterPartitionReassignments held every client 300-440 ms in
    one stretch."""

    __slots__ = ("_done", "_per_turn")

    def __init__(self, per_turn: int | None = None) -> None:
        self._per_turn = ANSWERS_PER_TURN if per_turn is None else per_turn
        self._done = 0

    async def done(self, units: int = 1) -> None:
        self._done += units
        if self._done >= self._per_turn:
            self._done = 0
            await give_way()


async def answered_once_in_turns(names: Iterable[_Name], describe: Callable[[_Name], Any],
                                 per_turn: int | None = None) -> tuple[Any, ...]:
    """`encoder.answered_once`, giving way every ``per_turn`` names (`ANSWERS_PER_TURN`): the describe APIs take up
    to a million names (`bounds.MAX_ELEMENTS`), and a DescribeGroups of a million held every client 235 ms."""
    answer, slices = OnceAnswered(describe), Slices(per_turn)
    answers: list[Any] = []
    for name in names:
        answers.append(answer(name))
        await slices.done()
    return tuple(answers)


async def in_turns(steps: Generator[None, None, _Result]) -> _Result:
    """Run a sans-I/O piece of work written as steps (a generator that yields between them) to its end, giving way
    after each step; its return value (`messages.encode_response_frame_in_steps`)."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            result: _Result = done.value
            return result
        await give_way()
