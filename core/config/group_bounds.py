"""Group configs whose default and bounds are the broker's, as Kafka 4.4 keeps them.

A consumer or share group's ``share.record.lock.duration.ms`` (and its session timeout, heartbeat interval, delivery
count limit, assignment interval, record lock limit) defaults to a broker config (``group.share.record.lock.
duration.ms``), and a group may only set it within two more (``group.share.min/max.record.lock.duration.ms``). The
broker's three are static: read at start, where a default outside its own bounds refuses to start. DescribeConfigs of
a group names the broker config as the synonym of its default. The refusals are Kafka's words, probed on 4.4.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class GroupBound:
    group_key: str
    broker_key: str
    """The value of groups that set none."""
    minimum_key: str
    maximum_key: str


def _bound(group_key: str, kind: str, setting: str) -> GroupBound:
    return GroupBound(group_key, f"group.{kind}.{setting}", f"group.{kind}.min.{setting}",
                      f"group.{kind}.max.{setting}")


GROUP_BOUNDS: Mapping[str, GroupBound] = MappingProxyType({bound.group_key: bound for bound in (
    _bound("consumer.session.timeout.ms", "consumer", "session.timeout.ms"),
    _bound("consumer.heartbeat.interval.ms", "consumer", "heartbeat.interval.ms"),
    _bound("consumer.assignment.interval.ms", "consumer", "assignment.interval.ms"),
    _bound("share.session.timeout.ms", "share", "session.timeout.ms"),
    _bound("share.heartbeat.interval.ms", "share", "heartbeat.interval.ms"),
    _bound("share.record.lock.duration.ms", "share", "record.lock.duration.ms"),
    _bound("share.delivery.count.limit", "share", "delivery.count.limit"),
    _bound("share.partition.max.record.locks", "share", "partition.max.record.locks"),
)})


def group_problem(group_key: str, value: str, broker_config: Callable[[str], str]) -> str | None:
    """Kafka's refusal of a group's value outside the broker's bounds; ``None`` if it fits (or is not bounded).
    ``value`` has passed the key's own validation (an integer)."""
    bound = GROUP_BOUNDS.get(group_key)
    if bound is None:
        return None
    minimum, maximum = int(broker_config(bound.minimum_key)), int(broker_config(bound.maximum_key))
    if minimum <= int(value) <= maximum:
        return None
    return f"{group_key} must be in the range {minimum} to {maximum} inclusive."


def broker_problem(bound: GroupBound, values: Mapping[str, str]) -> str | None:
    """Why the broker's default and bounds of one group config cannot start a broker (the default within the
    minimum and maximum), in Kafka's words; ``None`` if they can. ``values`` have passed each key's validation."""
    value, maximum = int(values[bound.broker_key]), int(values[bound.maximum_key])
    minimum = int(values[bound.minimum_key])
    if maximum < value:
        return f"{bound.maximum_key} must be greater than or equal to {bound.broker_key}"
    if value < minimum:
        return f"{bound.broker_key} must be greater than or equal to {bound.minimum_key}"
    return None
