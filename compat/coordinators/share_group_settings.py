"""A share group's state and what it is configured to do: its group configs (stored overrides over the registry's
defaults), the plugins' check of a config change, its subscription mode, whether a release needs the plugins'
decision, and the record lock limits and durations Kafka's share groups read from group and broker configs.

A mixin of `ShareCoordinator`, which acquires, acknowledges and times out by these settings.
"""

from __future__ import annotations

from collections.abc import Callable

from logwright.compat.broker import Broker
from logwright.core.config import group_bounds
from logwright.core.config.group_bounds import GROUP_BOUNDS
from logwright.core.cursors.plugin_decisions import (
    DEAD_LETTER_LIMIT_KEYS,
    GroupConfigChange,
    GroupConfigCheck,
    ReleaseContext,
    ReleaseDecider,
)
from logwright.core.cursors.redelivery_backoff import POLICY_KEY as BACKOFF_POLICY_KEY
from logwright.core.cursors.subscription_mode import DEFAULT_MODE, SUBSCRIPTION_MODE_KEY, SubscriptionMode
from logwright.core.errors import InvalidConfig
from logwright.core.log.catalog import ResourceConfig, resource_key
from logwright.core.share_groups import record_locks
from logwright.core.share_groups.share_groups import ShareGroupState


class ShareGroupSettings:
    """Share groups' state and settings (`ShareCoordinator` inherits them)."""

    broker: Broker
    _modes: Callable[[str], SubscriptionMode]
    _release_decider: ReleaseDecider | None
    _backoff_decider: ReleaseDecider | None
    _group_config_check: GroupConfigCheck | None

    def group(self, group_id: str) -> ShareGroupState | None:
        state = self.broker.store.state("share_groups", group_id)
        return state if isinstance(state, ShareGroupState) else None

    def groups(self) -> list[ShareGroupState]:
        return [s for s in self.broker.store.entities("share_groups").values() if isinstance(s, ShareGroupState)]

    def group_config(self, group_id: str, name: str) -> str:
        stored = self.broker.store.state("catalog", resource_key("group", group_id))
        if isinstance(stored, ResourceConfig):
            for key, value in stored.overrides:
                if key == name:
                    return value
        bound = GROUP_BOUNDS.get(name)
        if bound is not None and self.broker.configs.get("broker", bound.broker_key) is not None:
            return self.broker.broker_config(bound.broker_key)  # the broker's default for groups, as Kafka's
        key_info = self.broker.configs.get("group", name)
        assert key_info is not None and key_info.default is not None, f"unknown group config {name!r}"
        return key_info.default

    def group_settings(self, group_id: str) -> dict[str, str]:
        stored = self.broker.store.state("catalog", resource_key("group", group_id))
        overrides = dict(stored.overrides) if isinstance(stored, ResourceConfig) else {}
        effective = self.broker.configs.effective("group", overrides)
        settings = {name: value for name, (value, _) in effective.items() if value is not None}
        for name, (_, default) in effective.items():
            if default and name in GROUP_BOUNDS:
                settings[name] = self.group_config(group_id, name)
        return settings

    def _check_group_bounds(self) -> None:
        """Refuse to start (`InvalidConfig`) with a broker default of a group config, or its bounds, that Kafka refuses
        (``serve --config``): each value invalid alone, or the default outside the bounds."""
        for bound in GROUP_BOUNDS.values():
            keys = [self.broker.configs.get("broker", name)
                    for name in (bound.broker_key, bound.minimum_key, bound.maximum_key)]
            values: dict[str, str] = {}
            for key in keys:
                if key is None:
                    break  # a registry without them (a test's own)
                value = values[key.name] = self.broker.broker_config(key.name)
                problem = key.validate(value)
                if problem is not None:
                    raise InvalidConfig(f"invalid value {value!r} for broker config {key.name!r}: {problem}")
            else:
                problem = group_bounds.broker_problem(bound, values)
                if problem is not None:
                    raise InvalidConfig(problem)

    def check_config_change(self, group_id: str, overrides: dict[str, str], changed: tuple[str, ...]) -> None:
        """Let the plugins refuse a group config change (``overrides``: the group's overrides after it) with
        `InvalidConfig` before it is stored; a value the broker bounds (`GROUP_BOUNDS`) is checked against them
        first."""
        for name in changed:
            bound = GROUP_BOUNDS.get(name)
            if bound is None or name not in overrides or self.broker.configs.get("broker", bound.minimum_key) is None:
                continue
            problem = group_bounds.group_problem(name, overrides[name], self.broker.broker_config)
            if problem is not None:
                raise InvalidConfig(problem)
        check = self._group_config_check
        if check is None:
            return
        effective = self.broker.configs.effective("group", overrides)
        group = self.group(group_id)
        topics = sorted({t for member in group.members for t in member.subscribed_topics}) if group else []

        def broker_config(name: str) -> str | None:
            return self.broker.broker_config(name) if self.broker.configs.get("broker", name) else None

        def topic_config(topic: str, name: str) -> str | None:
            state = self.broker.topic(topic)
            return self.broker.topic_config(state, name) if state is not None else None

        check(GroupConfigChange(group_id, {name: value for name, (value, _) in effective.items() if value is not None},
                                changed, tuple(topics), broker_config, topic_config))

    def mode(self, group_id: str) -> SubscriptionMode:
        """The group's subscription mode from the plugins (``logwright.subscription.mode``, shared by default)."""
        settings = self.group_settings(group_id)
        return self._modes(settings.get(SUBSCRIPTION_MODE_KEY, DEFAULT_MODE))

    def release_context(self, group_id: str, topic: str, partition_id: int) -> ReleaseContext | None:
        """What a plugin's ``logwright_decide_release`` needs for records of this partition; ``None`` (and
        nothing computed) when no plugin but the built-in default decides and the group has no backoff policy."""
        decide = self._release_decider
        if decide is None:
            if self._backoff_decider is None or not self._needs_builtin_release(group_id):
                return None
            decide = self._backoff_decider
        located = self.broker.topic_of_partition(partition_id)
        index = located[1] if located is not None and located[0].name == topic else 0
        return ReleaseContext(decide, index, self.group_settings(group_id))

    def _needs_builtin_release(self, group_id: str) -> bool:
        """Whether the built-in plugins' release decision must run for the group: it has a redelivery backoff
        policy, its subscription mode asks for it (``decides_release``), or a dead-letter limit of Pulsar's kind
        (``logwright.dead.letter.max.deliveries`` or ``.max.redeliver.count``)."""
        if self._backoff_policy(group_id) != "none":
            return True
        if getattr(self.mode(group_id), "decides_release", False):
            return True  # a mode whose plugin decides every release of its groups (pop: RocketMQ's retry table)
        return any(self.broker.configs.get("group", key) is not None and int(self.group_config(group_id, key) or 0) > 0
                   for key in DEAD_LETTER_LIMIT_KEYS)

    def _backoff_policy(self, group_id: str) -> str:
        """The group's ``logwright.redelivery.backoff.policy`` (``none`` if no plugin registered the key)."""
        if self.broker.configs.get("group", BACKOFF_POLICY_KEY) is None:
            return "none"
        return self.group_config(group_id, BACKOFF_POLICY_KEY)

    def lock_duration_ms(self, group_id: str, member_id: str | None = None) -> int:
        """The member's own lock duration (its ack timeout) if it declared one, else the group's."""
        if member_id is not None:
            group = self.group(group_id)
            member = group.member(member_id) if group is not None else None
            if member is not None and member.lock_duration_ms > 0:
                return member.lock_duration_ms
        return int(self.group_config(group_id, "share.record.lock.duration.ms"))

    def record_lock_limit(self, group_id: str) -> int:
        """Records one share-partition of the group may hold in flight: the group's own
        ``share.partition.max.record.locks``, else the broker's ``group.share.partition.max.record.locks``."""
        return int(self.group_config(group_id, record_locks.GROUP_KEY))

    def delivery_count_limit(self, group_id: str) -> int:
        return int(self.group_config(group_id, "share.delivery.count.limit"))
