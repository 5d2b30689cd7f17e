"""The regular expressions a consumer subscribes with, as a port: which engine compiles them is the caller's.

A KIP-848 member may subscribe with ``SubscribedTopicRegex``; Kafka compiles it with RE2J, whose matching time is
linear in the name. Python's ``re`` backtracks: ``(a+)+b`` against 27 ``a``s held a broker's only event loop for
9 s. Core stays standard-library only, so it names what it needs of a compiled pattern, and the broker hands it
RE2 (`logwright.compat.topic_regex`); tests of the decisions may hand it ``re.compile``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class CompiledPattern(Protocol):
    def fullmatch(self, text: str) -> object | None: ...


class PatternError(ValueError):
    """The pattern does not compile (the engine's own error, translated by the compiler)."""


PatternCompiler = Callable[[str], CompiledPattern]
"""Compiles a pattern, or raises `PatternError`."""
