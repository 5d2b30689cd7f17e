"""Setting GROUP configs through confluent-kafka's AdminClient, as a user would before a group joins."""

from __future__ import annotations

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource


def set_group_configs(bootstrap: str, group: str, configs: dict[str, str]) -> None:
    """IncrementalAlterConfigs SET of every key of ``configs`` on ``group``; raises on any refusal."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = [ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET) for key, value in configs.items()]
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(30)
