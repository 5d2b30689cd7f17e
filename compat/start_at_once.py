"""Run a request's handler up to its first ``await`` in the turn that read the request, not a turn later.

Why: a task's first step runs in the loop's next turn, behind everything already queued. A Produce request spent
four turns in the broker (its read, its task's first step, the commit, the task's end) and its answer a fifth, and
each turn of a busy loop lasts as long as all the work queued in it. Python 3.12's ``eager_task_factory`` does this
natively; 3.11 has no way to start a ``Task`` without scheduling its first step, hence this module.

How: the coroutine is stepped once by hand, in a copy of the current context as a task would be. If it finishes,
the result is a finished future (its done callbacks still run a turn later, so the caller is never re-entered). If
it waits, a `Task` takes it over through a proxy that yields what the coroutine yields and passes back what the task
sends or throws: the task waits on the same future, delivers the same results and exceptions, and its ``cancel``
reaches the coroutine as it would have from the first step. The context copy goes with it, so context variables set
in the first step are seen after every ``await``.

The first step runs outside any task: ``asyncio.current_task()`` is ``None`` there, so ``asyncio.timeout`` and
anything else that needs the current task must come after the first ``await``. That is why handlers opt in
(`registry.handler`'s ``at_once``) rather than all of them starting this way.

The second step, when the first awaits a future, is run by hand too, and a `Task` takes the coroutine over only if
it awaits again. Most handlers await one thing, the commit of what they staged (`Broker.durable`), whose future is
an `InTurnFuture`: the commit runs the second steps itself, right after its write, and ``when_done`` sends each
answer there. A request then spends two turns in the broker (its read; the commit and its answer) where it spent
four (its read; the commit and its task's first step, which only waited on the commit's future; the task's
wake-up; the done callback that sent the answer), and each turn of a busy loop lasts as long as all the work queued
in it. So the second step, too, needs no current task (an opted-in handler's contract: no ``asyncio.timeout``
before its second ``await``). Cancelling the future returned before the second step hands the coroutine to a task
and cancels that, so the coroutine sees `asyncio.CancelledError` at its ``await`` and the future ends as the task
does, as a task's own cancel behaves.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")
log = logging.getLogger(__name__)


def start_at_once(loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, T],
                  when_done: Callable[[asyncio.Future[T]], object] | None = None,
                  tell_if_done_now: bool = True) -> asyncio.Future[T]:
    """Step ``coroutine`` now; a future of its result (a finished one, or one its second step or a task settles).

    ``when_done`` is called once with that future when it is done: where it is settled when that is a loop callback
    of its own (the second step, a task's end), otherwise as a done callback (never before this returns). Without
    ``tell_if_done_now``, a future already done when this returns is not told of: the caller sees it is done and
    acts on it itself, in this turn rather than the next (the server sends such an answer from the read).
    """
    context = contextvars.copy_context()
    try:
        awaited = context.run(coroutine.send, None)
    except StopIteration as finished:
        future: asyncio.Future[T] = loop.create_future()
        future.set_result(finished.value)
        return _notifying(future, when_done if tell_if_done_now else None)
    except asyncio.CancelledError:
        future = loop.create_future()
        future.cancel()
        return _notifying(future, when_done if tell_if_done_now else None)
    except (KeyboardInterrupt, SystemExit):  # leave the loop, as they do from a task's step
        raise
    except BaseException as error:  # noqa: BLE001 - the coroutine's own failure, delivered as a task would
        future = loop.create_future()
        future.set_exception(error)
        return _notifying(future, when_done if tell_if_done_now else None)
    if getattr(awaited, "_asyncio_future_blocking", None) and isinstance(awaited, asyncio.Future):
        return _SecondStepByHand(loop, coroutine, awaited, context, when_done).answer
    return _notifying(loop.create_task(_Resumed(coroutine, awaited), context=context), when_done)


def _notifying(future: asyncio.Future[T], when_done: Callable[[asyncio.Future[T]], object] | None) -> asyncio.Future[T]:
    if when_done is not None:
        future.add_done_callback(when_done)
    return future


class InTurnFuture(asyncio.Future[T]):
    """A future whose `then` continuations run where it is settled (`settle`), in that turn, instead of a loop turn
    later as done callbacks do. Only for a future settled from a loop callback of its own, where nothing is half
    done that a continuation could see (`Broker` settles its commit waiters so)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop=loop)
        self._continuations: list[tuple[Callable[[InTurnFuture[T]], object], contextvars.Context]] = []

    def then(self, continuation: Callable[[InTurnFuture[T]], object], context: contextvars.Context) -> None:
        self._continuations.append((continuation, context))

    def forget(self, continuation: Callable[[InTurnFuture[T]], object]) -> None:
        self._continuations = [(c, context) for c, context in self._continuations if c != continuation]

    def settle(self, result: T, error: BaseException | None = None, now: bool = True) -> None:
        """Set the result (or ``error``), then run the continuations: here when ``now``, else each a turn later."""
        if self.done():
            return
        if error is None:
            self.set_result(result)
        else:
            self.set_exception(error)
        continuations, self._continuations = self._continuations, []
        for continuation, context in continuations:
            if not now:
                self.get_loop().call_soon(continuation, self, context=context)
                continue
            try:
                context.run(continuation, self)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException:  # noqa: BLE001 - one continuation's failure is not the settler's, nor the others'
                log.exception("a continuation of a settled future failed")


class _Answer(asyncio.Future[T]):
    """The future `start_at_once` returns while the coroutine's second step is run by hand: cancelling it cancels
    the coroutine."""

    def __init__(self, loop: asyncio.AbstractEventLoop, driver: _SecondStepByHand[T]) -> None:
        super().__init__(loop=loop)
        self._driver: _SecondStepByHand[T] | None = driver

    def cancel(self, msg: Any = None) -> bool:
        """As `asyncio.Task.cancel`: before the second step, the coroutine sees the cancellation at its ``await``
        (in a task that takes it over) and this future ends as the coroutine then does."""
        driver, self._driver = self._driver, None
        if driver is None or self.done() or (task := driver.hand_over_cancelled(msg)) is None:
            return super().cancel(msg)
        driver.settle_with(task)
        return True


class _SecondStepByHand(Generic[T]):
    """Waits for the future the first step awaits, then steps the coroutine once more by hand: its result (or
    exception) goes to ``answer``; should it await again, a `Task` carries it on and its outcome goes there."""

    __slots__ = ("_loop", "_coroutine", "_awaited", "_context", "_when_done", "answer")

    def __init__(self, loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, T],
                 awaited: asyncio.Future[Any], context: contextvars.Context,
                 when_done: Callable[[asyncio.Future[T]], object] | None) -> None:
        self._loop = loop
        self._coroutine = coroutine
        self._awaited: asyncio.Future[Any] | None = awaited
        self._context = context
        self._when_done = when_done
        self.answer: _Answer[T] = _Answer(loop, self)
        awaited._asyncio_future_blocking = False  # taken, as a task takes the future its coroutine yields
        if isinstance(awaited, InTurnFuture):
            awaited.then(self._resume, context)
        else:
            awaited.add_done_callback(self._resume, context=context)

    def _resume(self, awaited: asyncio.Future[Any]) -> None:
        """The awaited future is done: the coroutine's second step, in the context of its first."""
        if self._awaited is None:  # cancelled meanwhile: a task has the coroutine
            return
        self._awaited = None
        answer = self.answer
        answer._driver = None
        try:
            if awaited.cancelled():
                again = self._coroutine.throw(asyncio.CancelledError())
            elif (error := awaited.exception()) is not None:
                again = self._coroutine.throw(error)
            else:
                again = self._coroutine.send(None)
        except StopIteration as finished:
            answer.set_result(finished.value)
        except asyncio.CancelledError:
            answer.cancel()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as error:  # noqa: BLE001 - the coroutine's own failure, delivered as a task would
            answer.set_exception(error)
        else:
            self.settle_with(self._loop.create_task(_Resumed(self._coroutine, again), context=self._context))
            return
        self._done()

    def _done(self) -> None:
        if self._when_done is not None:
            self._when_done(self.answer)

    def hand_over_cancelled(self, msg: Any) -> asyncio.Task[T] | None:
        """``answer`` is cancelled before the second step: a task takes the coroutine over and is cancelled, which
        cancels the awaited future and throws `asyncio.CancelledError` in at the coroutine's ``await``."""
        awaited, self._awaited = self._awaited, None
        if awaited is None:
            return None
        if isinstance(awaited, InTurnFuture):
            awaited.forget(self._resume)
        else:
            awaited.remove_done_callback(self._resume)
        task = self._loop.create_task(_Resumed(self._coroutine, awaited), context=self._context)
        task.cancel(msg)
        return task

    def settle_with(self, task: asyncio.Task[T]) -> None:
        """``answer`` ends as ``task`` ends; cancelling ``answer`` then cancels ``task``."""
        answer = self.answer

        def done(finished: asyncio.Task[T]) -> None:
            if answer.done():
                return
            if finished.cancelled():
                answer.cancel()
            elif (error := finished.exception()) is not None:
                answer.set_exception(error)
            else:
                answer.set_result(finished.result())
            self._done()

        def cancelled(_: asyncio.Future[T]) -> None:
            if answer.cancelled():
                task.cancel()

        task.add_done_callback(done)
        answer.add_done_callback(cancelled)


class _Resumed(Coroutine[Any, Any, T]):
    """What the task runs: first the future the coroutine already awaits, then the coroutine itself.

    Not a generator: an exception thrown in before the task's first step (``cancel`` right away) must reach the
    coroutine, where a generator not yet started would raise it without running at all.
    """

    __slots__ = ("_coroutine", "_awaited", "_resumed")

    def __init__(self, coroutine: Coroutine[Any, Any, T], awaited: Any) -> None:
        self._coroutine = coroutine
        self._awaited = awaited
        self._resumed = False

    def send(self, value: Any) -> Any:
        if not self._resumed:
            self._resumed = True
            return self._awaited  # the task now waits on it, as if it had run the first step itself
        return self._coroutine.send(value)

    def throw(self, error: Any, value: Any = None, traceback: Any = None) -> Any:
        if not self._resumed:
            self._resumed = True
            if isinstance(error, asyncio.CancelledError) and isinstance(self._awaited, asyncio.Future):
                self._awaited.cancel()  # what a task's cancel does to the future it waits on
        if value is None and traceback is None:
            return self._coroutine.throw(error)
        return self._coroutine.throw(error, value, traceback)  # the deprecated three-argument form, passed on

    def close(self) -> None:
        self._coroutine.close()

    def __await__(self) -> Generator[Any, None, T]:
        raise TypeError("a resumed coroutine is run by its task, never awaited")
