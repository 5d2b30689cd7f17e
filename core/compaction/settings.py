"""A topic's compaction settings, read from its effective configs, and the validation of those configs.

Names, defaults and rules are Kafka's (``LogConfig``): ``cleanup.policy`` is a list of ``compact`` and
``delete``; ``min.compaction.lag.ms`` may not exceed ``max.compaction.lag.ms``; on a compacted topic a segment
rolls after ``min(segment.ms, max.compaction.lag.ms)``, so the lag bound holds for the head as well.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from logwright.core.errors import PolicyViolation

POLICIES = ("compact", "delete")


def policies(value: str) -> tuple[str, ...]:
    """The entries of a ``cleanup.policy`` list, stripped and lower-cased as Kafka reads them."""
    return tuple(entry.strip().lower() for entry in value.split(",") if entry.strip())


def cleanup_policy(value: str) -> str | None:
    """Kafka 4.4's ``ValidList.in("compact", "delete")`` over its LIST parsing: blank is the empty list, which keeps
    every record (neither deleting nor compacting); otherwise every comma-separated entry, spaces around it dropped,
    is exactly ``compact`` or ``delete`` (an empty entry or another case is refused)."""
    if not value.strip():
        return None
    entries = [entry.strip() for entry in value.split(",")]
    unknown = [entry for entry in entries if entry not in POLICIES]
    if unknown:
        return f"{', '.join(map(repr, unknown))} is not one of compact, delete"
    return None


def is_compacted(value: str | None) -> bool:
    return value is not None and "compact" in policies(value)


def refuse_delete_records(value: str | None) -> None:
    """Raise `PolicyViolation` (POLICY_VIOLATION) for DeleteRecords on a compact-only topic, as Kafka 4.4 does: there a
    record goes only when a newer one of its key replaces it. ``compact,delete`` and the empty list allow it."""
    if value is not None and "compact" in (listed := policies(value)) and "delete" not in listed:
        raise PolicyViolation(f"records cannot be deleted from a topic whose cleanup.policy is {value!r}")


def compaction_lags_agree(values: Mapping[str, str]) -> str | None:
    """Kafka's ``LogConfig.validateValues``: the minimum lag may not exceed the maximum."""
    try:
        minimum = int(values.get("min.compaction.lag.ms", "0"))
        maximum = int(values.get("max.compaction.lag.ms", str(2**63 - 1)))
    except ValueError:
        return None
    if minimum > maximum:
        return f"conflict topic config setting min.compaction.lag.ms ({minimum}) > max.compaction.lag.ms ({maximum})"
    return None


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """What the cleaner needs of one compacted topic's configs, parsed once per decision."""

    segment_bytes: int
    segment_ms: int
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int
    min_cleanable_dirty_ratio: float
    delete_retention_ms: int

    @property
    def roll_ms(self) -> int:
        """Kafka's ``LogConfig.maxSegmentMs`` for a compacted topic: ``min(max.compaction.lag.ms, segment.ms)``."""
        return min(self.max_compaction_lag_ms, self.segment_ms) if self.max_compaction_lag_ms > 0 else self.segment_ms

    @classmethod
    def read(cls, config: Callable[[str], str | None]) -> CompactionSettings:
        """From a topic's effective configs (``config(name)``: override or default); validated values only."""

        def number(name: str, default: int) -> int:
            value = config(name)
            return int(value) if value is not None else default

        ratio = config("min.cleanable.dirty.ratio")
        return cls(
            segment_bytes=number("segment.bytes", 1073741824),
            segment_ms=number("segment.ms", 604800000),
            min_compaction_lag_ms=max(number("min.compaction.lag.ms", 0), 0),
            max_compaction_lag_ms=max(number("max.compaction.lag.ms", 2**63 - 1), 0),
            min_cleanable_dirty_ratio=float(ratio) if ratio is not None else 0.5,
            delete_retention_ms=number("delete.retention.ms", 86400000),
        )
