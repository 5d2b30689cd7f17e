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
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

T = TypeVar("T")


def start_at_once(loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
    """Step ``coroutine`` now; a future of its result (a finished one, or the task that carries it on)."""
    context = contextvars.copy_context()
    try:
        awaited = context.run(coroutine.send, None)
    except StopIteration as finished:
        future: asyncio.Future[T] = loop.create_future()
        future.set_result(finished.value)
        return future
    except asyncio.CancelledError:
        future = loop.create_future()
        future.cancel()
        return future
    except (KeyboardInterrupt, SystemExit):  # leave the loop, as they do from a task's step
        raise
    except BaseException as error:  # noqa: BLE001 - the coroutine's own failure, delivered as a task would
        future = loop.create_future()
        future.set_exception(error)
        return future
    return loop.create_task(_Resumed(coroutine, awaited), context=context)


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
