"""A ``firstresult`` decision hook resolved once into one plain callable, so per-request work skips pluggy.

The plugin host resolves ``logwright_decide_release`` and ``logwright_admit_append`` this way at start-up
(`PluginHost.release_decider`, `PluginHost.admission`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

BUILTIN_DEFAULTS = frozenset({"redelivery", "admission", "dead_letter", "pop"})
"""Built-in plugins whose decision the core applies itself when no other plugin implements the hook."""


def resolved(caller: pluggy.HookCaller, argument: str, answers: tuple[type[Any], ...],
              default: Callable[[Any], Any], always: bool = False) -> Callable[[Any], Any] | None:
    """One callable for a ``firstresult`` hook, resolved once; ``None`` if only a built-in default implements it
    (unless ``always``: then the built-in's own implementation is the chain).

    Plain implementations become a loop over their functions in pluggy's call order (no pluggy machinery
    per call); wrappers need pluggy's generator protocol, so with any wrapper the hook caller itself is
    used. A ``None`` from every plugin gives ``default(value)``; an answer of another type than
    ``answers`` raises a `TypeError` naming the hook.
    """
    implementations = caller.get_hookimpls()
    if not always and all(impl.plugin_name in BUILTIN_DEFAULTS for impl in implementations):
        return None
    chain: Callable[[Any], Any]
    if any(impl.wrapper or impl.hookwrapper for impl in implementations):
        def chain(value: Any) -> Any:
            return caller(**{argument: value})
    else:
        functions = tuple((impl.function, bool(impl.argnames)) for impl in reversed(implementations))

        def chain(value: Any) -> Any:
            for function, takes_value in functions:
                result = function(value) if takes_value else function()
                if result is not None:
                    return result
            return None

    expected = " or ".join(cls.__name__ for cls in answers)

    def call(value: Any) -> Any:
        answer = chain(value)
        if answer is None:
            return default(value)
        if not isinstance(answer, answers):
            raise TypeError(f"{caller.name} returned {answer!r}; expected {expected} or None")
        return answer

    return call
