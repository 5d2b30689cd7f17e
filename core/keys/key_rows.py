"""What the key indexes share: durations checked the same way, a config validator made from a check that raises,
and for a projection with one row per key and an expiry, the event's row -> offset map built once.

`processed` (a subscription's processed keys) keeps one row per key digest, written from an event naming many
keys; `offsets_by_row` builds the event's row -> offset map once per event instead of once per row it folds.
(`dedup`'s window keeps one row per appended batch instead.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Generic, TypeVar

MAX_DURATION_MS: Final = 365 * 24 * 3600 * 1000

E = TypeVar("E")


def check_duration(name: str, value: str) -> int:
    """A config of whole milliseconds, 1 to a year; ``ValueError`` naming ``name`` otherwise."""
    try:
        milliseconds = int(value)
    except ValueError:
        raise ValueError(f"{name} must be a whole number of milliseconds, not {value!r}") from None
    if not 1 <= milliseconds <= MAX_DURATION_MS:
        raise ValueError(f"{name} must be between 1 and {MAX_DURATION_MS} (a year), not {milliseconds}")
    return milliseconds


def validator(check: Callable[[str], object], empty_is_off: bool = False) -> Callable[[str], str | None]:
    """A `ConfigKey` validator from a check that raises ``ValueError``; with ``empty_is_off`` an empty value is
    valid (the feature is off)."""
    def validate(value: str) -> str | None:
        if value == "" and empty_is_off:
            return None
        try:
            check(value)
        except ValueError as error:
            return str(error)
        return None
    return validate


class offsets_by_row(Generic[E]):  # noqa: N801 - used as a function
    """``rows(event)`` -> ``{row: offset}``, built once per event (the fold asks once per row the event names)."""

    __slots__ = ("_build", "_event", "_rows")

    def __init__(self, build: Callable[[E], dict[str, int]]) -> None:
        self._build = build
        self._event: E | None = None
        self._rows: dict[str, int] = {}

    def __call__(self, event: E) -> dict[str, int]:
        if self._event is not event:
            self._rows = self._build(event)
            self._event = event
        return self._rows
