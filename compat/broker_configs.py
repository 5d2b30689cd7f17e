"""What the broker's configs are in effect: a broker config through Kafka's precedence (stored per broker, stored
cluster-wide, the command line, the registry's default), a topic's through its overrides and broker synonyms, and
every set config of a topic as admission plugins see it, built once per distinct set of overrides.

A mixin of `Broker`: the lookups read the broker's store, settings and registry, and handlers call them on the
broker they are given.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from logwright.core.config.configs import ConfigRegistry
from logwright.core.config.topic_synonyms import topic_default
from logwright.core.cursors.plugin_decisions import TopicScope
from logwright.core.log.catalog import ResourceConfig, TopicState, resource_key
from logwright.eventstore.rocksdb import RocksEventStore

if TYPE_CHECKING:
    from logwright.compat.broker import BrokerSettings

_TOPIC_CONFIGS_KEPT = 1024
"""Distinct topic override sets `BrokerConfigs.topic_configs` keeps built (all are dropped past it)."""


class BrokerConfigs:
    """The broker's config lookups (`Broker` inherits them)."""

    store: RocksEventStore
    settings: BrokerSettings
    configs: ConfigRegistry
    node_id: int
    _admission_scope: TopicScope | None
    _topic_configs: dict[tuple[Any, int], tuple[Mapping[str, str], bool]]

    def broker_config(self, name: str) -> str:
        """Effective broker config: this broker's stored override, the cluster-wide stored default (""),
        the command-line override, then the registry default (Kafka's precedence)."""
        for resource_name in (str(self.node_id), ""):
            stored = self.store.state("catalog", resource_key("broker", resource_name))
            if isinstance(stored, ResourceConfig):
                for key, value in stored.overrides:
                    if key == name:
                        return value
        if name in self.settings.overrides:
            return self.settings.overrides[name]
        key_info = self.configs.get("broker", name)
        if key_info is None or key_info.default is None:
            raise KeyError(f"unknown broker config {name!r}")
        return key_info.default

    def topic_config(self, topic: TopicState, name: str) -> str | None:
        """The topic's override, else its broker synonyms' value (``log.segment.bytes`` for ``segment.bytes``,
        `core.config.topic_synonyms`), else the registry default."""
        value = topic.config(name)
        if value is not None:
            return value
        inherited = topic_default(name, self._broker_value)
        if inherited is not None:
            return inherited
        key_info = self.configs.get("topic", name)
        return key_info.default if key_info else None

    def _broker_value(self, name: str) -> str | None:
        try:
            return self.broker_config(name)
        except KeyError:
            return None

    def topic_configs(self, topic: TopicState) -> Mapping[str, str]:
        """Every set config of ``topic`` (its overrides over its broker synonyms' values and the registry's
        defaults, as `topic_config` gives each), as admission plugins see it.

        Built once per distinct set of overrides and registered keys (a config change makes a new TopicState, a
        plugin's key a larger registry; a broker config change drops them all) rather than per Produce request:
        building it sorted every known key.
        """
        return self._topic_memo(topic)[0]

    def admission_applies(self, topic: TopicState) -> bool:
        """Whether the plugins' admission chain acts on appends to ``topic`` (the scopes they declare,
        ``logwright.plugins.api.acts_on_topics``), answered once per distinct topic configs like `topic_configs`."""
        return self._topic_memo(topic)[1]

    def _topic_memo(self, topic: TopicState) -> tuple[Mapping[str, str], bool]:
        memo_key = (topic.configs, len(self.configs.keys))
        found = self._topic_configs.get(memo_key)
        if found is None:
            if len(self._topic_configs) >= _TOPIC_CONFIGS_KEPT:
                self._topic_configs.clear()
            values: dict[str, str] = {}
            for name, (value, is_default) in self.configs.effective("topic", dict(topic.configs)).items():
                if is_default:
                    value = topic_default(name, self._broker_value) or value
                if value is not None:
                    values[name] = value
            configs = MappingProxyType(values)
            scope = self._admission_scope
            found = self._topic_configs[memo_key] = (configs, scope is None or scope(configs, self._broker_value))
        return found
