"""`JavaPatternCheck`: client-metrics match patterns compiled by RE2 first, Python's re only for short ones."""

from __future__ import annotations

from logwright.compat.topic_regex import JavaPatternCheck


def test_java_patterns_re2_refuses_get_a_short_budget_of_pythons_re() -> None:
    check = JavaPatternCheck()
    assert check("a" * 100_000)  # RE2: linear, no fallback spent
    assert not check("(")
    assert check("(?!x).*")  # a look-ahead: RE2 refuses it, re compiles it
    assert check.fallbacks == 2
    assert not check("(?!x)" + "a" * JavaPatternCheck.PYTHON_RE_MAX_LENGTH)  # too long for the fallback
    check.fallbacks = JavaPatternCheck.PYTHON_RE_FALLBACKS
    assert not check("(?!y).*")  # the request's budget is spent


def test_a_request_compiles_so_many_patterns_and_characters() -> None:
    """A request may carry 100 MB of patterns: past the budget they are refused, not compiled."""
    check = JavaPatternCheck()
    assert all(check("a") for _ in range(JavaPatternCheck.PATTERNS))
    assert not check("a")
    check = JavaPatternCheck()
    assert check("b" * JavaPatternCheck.PATTERN_CHARS)
    assert not check("b")
