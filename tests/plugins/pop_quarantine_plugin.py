"""A third-party dead-letter policy for pop groups, written as an outside author would: records of a pop group
past its max reconsume times go to the quarantine topic the group names, with the plugin's own headers, instead
of RocketMQ's ``%DLQ%<group>`` (``DLQ.<group>``). Other groups keep the built-in answer (``None`` here)."""

from __future__ import annotations

from logwright.plugins.api import (
    SUBSCRIPTION_MODE_KEY,
    ArchivedRecords,
    ConfigKey,
    ConfigKeyRegister,
    DeadLetter,
    any_value,
    hookimpl,
)

QUARANTINE_KEY = "quarantine.topic"


@hookimpl
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    register.add(ConfigKey(QUARANTINE_KEY, "group", "", any_value,
                           "Where a pop group's records past its max reconsume times go (empty: the built-in one)."))


@hookimpl
def logwright_decide_archive(archived: ArchivedRecords) -> DeadLetter | None:
    quarantine = archived.settings.get(QUARANTINE_KEY, "")
    if archived.settings.get(SUBSCRIPTION_MODE_KEY) != "pop" or not quarantine:
        return None
    return DeadLetter(quarantine, copy_record=True, headers=(
        ("quarantine.reason", "{reason}"), ("quarantine.deliveries", "{delivery_count}"),
        ("quarantine.by", archived.consumer or "invisible time ran out"),
        ("quarantine.from", "{group}/{topic}-{partition}@{offset}")))
