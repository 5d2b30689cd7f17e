"""`start_at_once`: the first step runs before it returns, and from there on the coroutine behaves as in a task
started the usual way (results, exceptions, cancellation, context variables)."""

from __future__ import annotations

import asyncio
import contextvars

import pytest
from logwright.compat.start_at_once import start_at_once

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


def test_the_first_step_runs_now_and_the_rest_after_the_awaited_future() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        gate: asyncio.Future[str] = loop.create_future()
        steps: list[str] = []

        async def handler() -> str:
            steps.append(f"first, in a task: {asyncio.current_task() is not None}")
            opened = await gate
            steps.append(f"after {opened}, in a task: {asyncio.current_task() is not None}")
            await asyncio.sleep(0)
            return opened.upper()

        started: asyncio.Future[asyncio.Future[str]] = loop.create_future()
        loop.call_soon(lambda: started.set_result(start_at_once(loop, handler())))  # as the server's read does
        future = await started
        assert steps == ["first, in a task: False"]
        await asyncio.sleep(0)
        assert not future.done()
        gate.set_result("open")
        assert await future == "OPEN"
        assert steps == ["first, in a task: False", "after open, in a task: True"]

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
