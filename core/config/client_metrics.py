"""Client-metrics subscriptions (KIP-714) as Kafka 4.4 keeps them: the CLIENT_METRICS config resource.

``kafka-client-metrics --alter --name NAME --metrics ... --interval ... --match ...`` stores a named subscription as
the configs of a CLIENT_METRICS resource (type 16): ``metrics`` (metric name prefixes), ``interval.ms`` (how often a
client pushes, 100 ms to an hour) and ``match`` (``selector=regex`` pairs a client must match). Kafka checks them
in its own words, codes and order (probed against Kafka 4.4; `tests/integration/test_client_metrics.py`), lists a
subscription while it has any config, describes any name with the defaults, and stores list values without the
spaces around their commas. Like Kafka without a metrics reporter plugin, logwright serves no telemetry APIs
(GetTelemetrySubscriptions, PushTelemetry): the subscriptions are kept, described and listed, and nothing pushes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from logwright.core.config.configs import ConfigKey, any_value
from logwright.core.errors import InvalidConfig, InvalidRequest

KIND = "client_metrics"
"""The resource kind of the catalog's `ResourceConfig` rows and of `ConfigChanged` events."""
INTERVAL_MS_MIN, INTERVAL_MS_MAX = 100, 3_600_000
SELECTORS = ("client_instance_id", "client_id", "client_software_name", "client_software_version",
             "client_source_address", "client_source_port")
"""What a ``match`` pattern may select on (Kafka's ``ClientMetricsConfigs.ALLOWED_MATCH_PARAMS``)."""
_COMMA_WITH_SPACES = re.compile(r"\s*,\s*")

KEYS = (
    ConfigKey("interval.ms", KIND, "300000", any_value,
              "How often a matching client pushes its metrics, 100 ms to 3600000 (an hour).", "INT"),
    ConfigKey("match", KIND, "", any_value,
              "selector=regex pairs a client must all match (selectors: " + ", ".join(SELECTORS) + "); empty: every "
              "client.", "LIST"),
    ConfigKey("metrics", KIND, "", any_value,
              "Prefixes of the metric names the subscription asks for; '*' for all, empty for none.", "LIST"),
)
_KNOWN = {key.name for key in KEYS}
_LIST_KEYS = {key.name for key in KEYS if key.value_type == "LIST"}


def check_name(name: str, describing: bool = False) -> None:
    if not name:
        raise InvalidRequest("Client metrics subscription name must not be empty" if describing
                             else "Subscription name can't be empty")


def checked_value(name: str, operation: str | None, value: str | None, compiles: Callable[[str], bool]) -> str | None:
    """One requested change of a subscription (``operation`` is an IncrementalAlterConfigs op's name, ``None`` for
    the legacy AlterConfigs), checked as Kafka checks it; the value to store (a list without the spaces around its
    commas), ``None`` for a DELETE."""
    if operation == "DELETE":
        return None
    if value is None:
        raise InvalidRequest(f"Null value not supported for : {name}")
    if operation in ("APPEND", "SUBTRACT"):  # Kafka's words, though two of the keys are lists
        raise InvalidConfig(f"Can't {operation} to key {name} because its type is not LIST.")
    if name not in _KNOWN:
        raise InvalidRequest(f"Unknown client metrics configuration: {name}")
    if name == "interval.ms":
        return _interval(value)
    items = _list(value)
    if name == "match":
        for pattern in items:
            _check_pattern(pattern, compiles)
    return ",".join(items) if name in _LIST_KEYS else value


def _interval(value: str) -> str:
    text = value.strip()
    if not re.fullmatch(r"[+-]?\d{1,10}", text) or not -2**31 <= int(text) < 2**31:
        raise InvalidConfig(f"Invalid value {value} for configuration interval.ms: Not a number of type INT")
    if not INTERVAL_MS_MIN <= int(text) <= INTERVAL_MS_MAX:
        raise InvalidRequest(f"Invalid value {int(text)} for interval.ms, interval must be between "
                             f"{INTERVAL_MS_MIN} and {INTERVAL_MS_MAX} (1 hour)")
    return str(int(text))


def _list(value: str) -> list[str]:
    """A list value as Kafka's ConfigDef reads one: split at commas, the spaces around them dropped."""
    trimmed = value.strip()
    return _COMMA_WITH_SPACES.split(trimmed) if trimmed else []


def _check_pattern(pattern: str, compiles: Callable[[str], bool]) -> None:
    """``selector=regex``: a known selector and a regular expression ``compiles`` accepts (Kafka compiles it with
    Java's ``Pattern``; the broker supplies its compiler, the core stays without one)."""
    selector, equals, regex = pattern.partition("=")
    if not equals or selector.strip() not in SELECTORS or not compiles(regex.strip()):
        raise InvalidConfig(f"Illegal client matching pattern: {pattern}")


def checked_changes(changes: Sequence[tuple[str, str | None, str | None]], compiles: Callable[[str], bool]
                    ) -> list[tuple[str, str | None]]:
    """``(key, operation name or None, value)`` requested of one subscription, each checked (`checked_value`)."""
    return [(name, checked_value(name, operation, value, compiles)) for name, operation, value in changes]
