"""Regular expressions clients send, compiled by RE2: matching time linear in the text, whatever the pattern.

Kafka compiles KIP-848's ``SubscribedTopicRegex`` and ListTransactions' ``TransactionalIdPattern`` with RE2J, so
RE2 accepts what Kafka accepts: a look-around or a back-reference is INVALID_REGULAR_EXPRESSION on both
(tests/integration/test_hostile_patterns.py, differential). Python's backtracking ``re`` let one ``(a+)+b`` hold
the event loop, and every client with it, for seconds (a hostile-input campaign in session 32). The google-re2 bindings
are Google's own; errors are not logged by RE2 (a client could fill stderr), and the compiled program is held to
``MAX_PROGRAM_BYTES``.
"""

from __future__ import annotations

import functools
import re

import re2
from logwright.core.consumer_groups.topic_patterns import CompiledPattern, PatternError

MAX_PROGRAM_BYTES = 8 << 20
"""RE2's own default memory budget for a compiled pattern, made explicit: a bigger pattern does not compile."""

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.max_mem = MAX_PROGRAM_BYTES


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> CompiledPattern:
    return re2.compile(pattern, _OPTIONS)  # type: ignore[no-any-return]


def compile_pattern(pattern: str) -> CompiledPattern:
    """``pattern`` compiled by RE2 (kept for the next heartbeat that names it), or `PatternError`."""
    try:
        return _compiled(pattern)
    except re2.error as error:
        reason = error.args[0] if error.args else error
        text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        raise PatternError(f"{pattern!r} does not compile: {text}") from None


class JavaPatternCheck:
    """Whether Java's ``Pattern`` would compile a regular expression (client-metrics ``match`` patterns, which Kafka
    compiles with it and never needs RE2's linear matching for): RE2 first, in time linear in the pattern; what
    RE2 refuses (a look-around, a back-reference) is compiled by Python's ``re`` when it is short, for at most
    `PYTHON_RE_FALLBACKS` patterns per check, and refused otherwise. ``re`` alone took 2 s to compile a pattern
    of 1 MB, holding the event loop. One instance per request: the fallbacks are its budget."""

    PYTHON_RE_MAX_LENGTH = 256
    PYTHON_RE_FALLBACKS = 16
    PATTERNS = 10_000
    PATTERN_CHARS = 256 * 1024
    """Patterns, and characters of patterns, one request may have compiled; those after are refused as illegal:
    100,000 patterns in one 1.5 MB value took RE2 0.6 s, one pattern of 1 MB (``(a|b)`` repeated) 0.38 s, and a
    request may carry 100 MB. Subscriptions' patterns are a few dozen characters."""

    def __init__(self) -> None:
        self.fallbacks = 0
        self.compiled = 0
        self.chars = 0

    def __call__(self, pattern: str) -> bool:
        self.compiled += 1
        self.chars += len(pattern)
        if self.compiled > self.PATTERNS or self.chars > self.PATTERN_CHARS:
            return False
        try:
            re2.compile(pattern, _OPTIONS)  # not kept: a request's patterns are checked once, and could be many
            return True
        except re2.error:
            pass
        if len(pattern) > self.PYTHON_RE_MAX_LENGTH or self.fallbacks >= self.PYTHON_RE_FALLBACKS:
            return False
        self.fallbacks += 1
        try:
            re.compile(pattern)
        except (re.error, RecursionError, OverflowError):
            return False
        return True
