"""Backlog quotas: the config keys, their validation, and the verdict on an append.

A quota has up to three limits (bytes, records, age of the oldest unsettled record) and one policy, read
from the topic's ``logwright.backlog.quota.*`` configs, each falling back to the broker's
``logwright.backlog.quota.default.*``. The verdict is taken at admission, against the backlog the append
would leave, so a quota is never overshot by more than the one request that crosses it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .backlog import Backlog

PREFIX = "logwright.backlog.quota."
BYTES_KEY = PREFIX + "bytes"
RECORDS_KEY = PREFIX + "records"
AGE_KEY = PREFIX + "age.ms"
POLICY_KEY = PREFIX + "policy"
TOPIC_KEYS = (BYTES_KEY, RECORDS_KEY, AGE_KEY, POLICY_KEY)


def broker_default_key(topic_key: str) -> str:
    """The broker-wide default of a topic key: ``logwright.backlog.quota.default.<limit>``."""
    return PREFIX + "default." + topic_key.removeprefix(PREFIX)


HOLD = "producer_request_hold"
EXCEPTION = "producer_exception"
EVICTION = "consumer_backlog_eviction"
POLICIES = (HOLD, EXCEPTION, EVICTION)
UNLIMITED = -1
EVICTION_TARGET = 0.9
"""Eviction leaves the backlog at no more than this share of each limit (Pulsar's reduction factor)."""


def limit_value(value: str) -> str | None:
    """A limit is -1 (none) or a positive number; 0 would refuse every append while anything is unread."""
    try:
        number = int(value)
    except ValueError:
        return "not a whole number"
    if number == UNLIMITED or 0 < number < 2**63:
        return None
    return "must be -1 (no limit) or a positive number (0 would refuse every append while a record is unread)"


def policy_value(value: str) -> str | None:
    return None if value in POLICIES else f"must be one of {', '.join(POLICIES)}"


@dataclass(frozen=True, slots=True)
class Quota:
    """A topic's effective limits (-1: none) and policy."""

    bytes: int = UNLIMITED
    records: int = UNLIMITED
    age_ms: int = UNLIMITED
    policy: str = HOLD

    @property
    def limited(self) -> bool:
        return self.bytes > 0 or self.records > 0 or self.age_ms > 0

    def exceeded_by(self, backlog: Backlog, now_ms: int) -> str | None:
        """Which limit ``backlog`` is over, said for a user; ``None`` within every limit."""
        if self.bytes > 0 and backlog.bytes > self.bytes:
            return f"{BYTES_KEY}={self.bytes} (backlog {backlog.bytes} bytes)"
        if self.records > 0 and backlog.records > self.records:
            return f"{RECORDS_KEY}={self.records} (backlog {backlog.records} records)"
        if self.age_ms > 0 and backlog.age_ms(now_ms) > self.age_ms:
            return f"{AGE_KEY}={self.age_ms} (oldest unsettled record {backlog.age_ms(now_ms)} ms old)"
        return None


def quota_of(topic_configs: Mapping[str, str], broker_config: Callable[[str], str | None]) -> Quota:
    """The effective quota: each topic key set on the topic, else the broker-wide default.

    A value that no longer parses (stored before validation existed), or a broker default the broker does not
    know (``None``), counts as no limit.
    """

    def value(key: str) -> str:
        return topic_configs.get(key) or broker_config(broker_default_key(key)) or ""

    def limit(key: str) -> int:
        text = value(key)
        return int(text) if limit_value(text) is None else UNLIMITED

    policy = value(POLICY_KEY)
    return Quota(limit(BYTES_KEY), limit(RECORDS_KEY), limit(AGE_KEY), policy if policy in POLICIES else HOLD)
