"""`start_at_once`: the first step runs before it returns, and from there on the coroutine behaves as in a task
started the usual way (results, exceptions, cancellation, context variables)."""

from __future__ import annotations

import asyncio
import contextvars

import pytest
from logwright.compat.start_at_once import InTurnFuture, start_at_once

seen = contextvars.ContextVar[str]("seen", default="unset")


def test_a_coroutine_that_never_waits_is_finished_before_anything_else_runs() -> None:
    async def run() -> None:
        steps: list[str] = []

        async def answer() -> int:
            steps.append("ran")
            return 7

        asyncio.get_running_loop().call_soon(steps.append, "next turn")
        future = start_at_once(asyncio.get_running_loop(), answer())
        assert steps == ["ran"] and future.done() and future.result() == 7
        await asyncio.sleep(0)
        assert steps == ["ran", "next turn"]

    asyncio.run(run())


def test_a_failure_in_the_first_step_is_the_futures_exception() -> None:
    async def run() -> None:
        async def failing() -> None:
            raise LookupError("no such thing")

        future = start_at_once(asyncio.get_running_loop(), failing())
        with pytest.raises(LookupError, match="no such thing"):
            future.result()

    asyncio.run(run())


def test_the_first_step_runs_now_the_second_by_hand_and_the_rest_in_a_task() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        gate: asyncio.Future[str] = loop.create_future()
        steps: list[str] = []

        async def handler() -> str:
            steps.append(f"first, in a task: {asyncio.current_task() is not None}")
            opened = await gate
            steps.append(f"after {opened}, in a task: {asyncio.current_task() is not None}")
            await asyncio.sleep(0)
            steps.append(f"third, in a task: {asyncio.current_task() is not None}")
            return opened.upper()

        started: asyncio.Future[asyncio.Future[str]] = loop.create_future()
        loop.call_soon(lambda: started.set_result(start_at_once(loop, handler())))  # as the server's read does
        future = await started
        assert steps == ["first, in a task: False"]
        await asyncio.sleep(0)
        assert not future.done()
        gate.set_result("open")
        assert await future == "OPEN"
        assert steps == ["first, in a task: False", "after open, in a task: False", "third, in a task: True"]

    asyncio.run(run())


def test_an_awaited_futures_exception_is_raised_inside_the_coroutine() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        gate: asyncio.Future[None] = loop.create_future()

        async def handler() -> str:
            try:
                await gate
            except KeyError as error:
                return f"caught {error}"
            return "not caught"

        future = start_at_once(loop, handler())
        gate.set_exception(KeyError("k"))
        assert await future == "caught 'k'"

    asyncio.run(run())


def test_cancelling_reaches_the_coroutine_which_may_clean_up() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        gate: asyncio.Future[None] = loop.create_future()
        cleaned: list[bool] = []

        async def handler() -> None:
            try:
                await gate
            finally:
                cleaned.append(gate.cancelled())

        future = start_at_once(loop, handler())
        future.cancel()
        with pytest.raises(asyncio.CancelledError):
            await future
        assert cleaned == [True], "the awaited future was cancelled and the coroutine's finally ran"

    asyncio.run(run())


def test_cancelling_while_the_awaited_future_is_already_done_still_cancels_the_coroutine() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        gate: asyncio.Future[str] = loop.create_future()
        outcome: list[str] = []

        async def handler() -> None:
            try:
                await gate
                outcome.append("went on")
            except asyncio.CancelledError:
                outcome.append("cancelled")
                raise

        future = start_at_once(loop, handler())
        gate.set_result("done")  # the task's wake-up is queued, then it is cancelled before it runs
        future.cancel()
        with pytest.raises(asyncio.CancelledError):
            await future
        assert outcome == ["cancelled"]

    asyncio.run(run())


def test_context_variables_set_in_the_first_step_are_seen_after_each_await_and_not_by_the_caller() -> None:
    async def run() -> None:
        async def handler() -> list[str]:
            seen.set("first step")
            values = [seen.get()]
            await asyncio.sleep(0)
            values.append(seen.get())
            await asyncio.sleep(0)
            values.append(seen.get())
            return values

        future = start_at_once(asyncio.get_running_loop(), handler())
        assert seen.get() == "unset"
        assert await future == ["first step"] * 3

    asyncio.run(run())


def test_a_coroutine_that_ends_in_its_second_step_never_becomes_a_task() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        gate: asyncio.Future[int] = loop.create_future()
        tasks_before = len(asyncio.all_tasks())

        async def handler() -> int:
            return await gate + 1

        future = start_at_once(loop, handler())
        assert len(asyncio.all_tasks()) == tasks_before
        gate.set_result(41)
        assert await future == 42
        assert len(asyncio.all_tasks()) == tasks_before

    asyncio.run(run())


def test_a_failure_in_the_second_step_is_the_futures_exception() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        gate: asyncio.Future[None] = loop.create_future()

        async def handler() -> None:
            await gate
            raise LookupError("after the gate")

        future = start_at_once(loop, handler())
        gate.set_result(None)
        with pytest.raises(LookupError, match="after the gate"):
            await future

    asyncio.run(run())


def test_cancelling_after_a_task_took_over_cancels_the_task() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        gate: asyncio.Future[None] = loop.create_future()
        second_gate: asyncio.Future[None] = loop.create_future()
        outcome: list[str] = []

        async def handler() -> None:
            await gate
            try:
                await second_gate
                outcome.append("went on")
            except asyncio.CancelledError:
                outcome.append(f"cancelled in a task: {asyncio.current_task() is not None}")
                raise

        future = start_at_once(loop, handler())
        gate.set_result(None)
        for _ in range(3):  # the second step by hand, then the task's first step waits on second_gate
            await asyncio.sleep(0)
        assert not future.done()
        future.cancel()
        with pytest.raises(asyncio.CancelledError):
            await future
        for _ in range(3):
            await asyncio.sleep(0)
        assert outcome == ["cancelled in a task: True"] and second_gate.cancelled()

    asyncio.run(run())


def test_a_coroutine_that_swallows_its_cancellation_ends_with_its_own_result() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        gate: asyncio.Future[None] = loop.create_future()
        outcome: list[str] = []

        async def handler() -> str:
            try:
                await gate
            except asyncio.CancelledError:
                outcome.append("swallowed")
            await asyncio.sleep(0)
            outcome.append("finished")
            return "done"

        future = start_at_once(loop, handler())
        assert future.cancel()
        assert await future == "done", "as a task that swallows its cancellation, it ends with its result"
        assert outcome == ["swallowed", "finished"]

    asyncio.run(run())


def test_an_in_turn_future_runs_the_second_step_and_when_done_where_it_is_settled() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        written: InTurnFuture[None] = InTurnFuture(loop)
        steps: list[str] = []

        async def handler() -> str:
            await written
            steps.append("second step")
            return "answer"

        future = start_at_once(loop, handler(), lambda done: steps.append(f"when_done: {done.result()}"))
        assert steps == []
        written.settle(None)
        steps.append("settled")
        assert steps == ["second step", "when_done: answer", "settled"], "all of it inside settle, in order"
        await asyncio.sleep(0)
        assert steps == ["second step", "when_done: answer", "settled"], "and when_done only once"
        assert future.result() == "answer"

    asyncio.run(run())


def test_an_in_turn_future_settled_not_now_continues_a_turn_later() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        written: InTurnFuture[None] = InTurnFuture(loop)
        steps: list[str] = []

        async def handler() -> None:
            try:
                await written
            except OSError as error:
                steps.append(f"second step saw {error}")

        future = start_at_once(loop, handler(), lambda _: steps.append("when_done"))
        written.settle(None, OSError("disk full"), now=False)
        assert steps == [] and written.done()
        await asyncio.sleep(0)
        assert steps == ["second step saw disk full", "when_done"] and future.done()

    asyncio.run(run())


def test_when_done_of_a_coroutine_that_never_waits_comes_a_turn_later() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        steps: list[str] = []

        async def handler() -> int:
            return 1

        start_at_once(loop, handler(), lambda _: steps.append("when_done"))
        assert steps == [], "never before start_at_once returns: the caller is not re-entered"
        await asyncio.sleep(0)
        assert steps == ["when_done"]

    asyncio.run(run())


def test_cancelling_before_an_in_turn_future_is_settled_leaves_it_to_the_task() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        written: InTurnFuture[None] = InTurnFuture(loop)
        outcome: list[str] = []

        async def handler() -> None:
            try:
                await written
                outcome.append("went on")
            except asyncio.CancelledError:
                outcome.append("cancelled")
                raise

        future = start_at_once(loop, handler(), lambda _: outcome.append("when_done"))
        future.cancel()
        with pytest.raises(asyncio.CancelledError):
            await future
        written.settle(None)  # already cancelled by the task: nothing more runs
        await asyncio.sleep(0)
        assert outcome == ["cancelled", "when_done"] and written.cancelled()

    asyncio.run(run())


def test_a_failing_continuation_does_not_stop_the_others() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        written: InTurnFuture[None] = InTurnFuture(loop)
        ran: list[str] = []

        def failing(_: InTurnFuture[None]) -> None:
            raise RuntimeError("a broken continuation")

        written.then(failing, contextvars.copy_context())
        written.then(lambda _: ran.append("second"), contextvars.copy_context())
        written.settle(None)
        assert ran == ["second"]

    asyncio.run(run())


@pytest.mark.parametrize("ending", ["returns", "raises", "is cancelled"])
def test_a_coroutine_done_in_its_first_step_is_left_to_the_caller_when_it_asks_not_to_be_told(ending: str) -> None:
    """``tell_if_done_now=False``: the caller sees the future done and acts on it itself (the server sends the answer
    from the read); ``when_done`` is neither called nor queued, while a coroutine that waits still gets it."""
    async def run() -> None:
        loop = asyncio.get_running_loop()
        steps: list[str] = []
        gate = loop.create_future()

        async def at_once() -> int:
            if ending == "raises":
                raise OSError("refused")
            if ending == "is cancelled":
                raise asyncio.CancelledError
            return 1

        async def waits() -> int:
            await gate
            return 2

        done_now = start_at_once(loop, at_once(), lambda _: steps.append("told of the first"), tell_if_done_now=False)
        later = start_at_once(loop, waits(), lambda _: steps.append("told of the second"), tell_if_done_now=False)
        assert done_now.done() and not later.done()
        gate.set_result(None)
        for _ in range(3):
            await asyncio.sleep(0)
        assert steps == ["told of the second"] and later.result() == 2
        if ending == "raises":
            assert isinstance(done_now.exception(), OSError)
        else:
            assert done_now.cancelled() or done_now.result() == 1

    asyncio.run(run())
