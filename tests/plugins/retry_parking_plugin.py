"""A third-party retry policy, written as an outside author would: a record reconsumed past the group's
``logwright.retry.max.reconsume.times`` is parked on one topic the group names, instead of Pulsar's
``<topic>-<subscription>-DLQ``. Groups without the key keep the built-in policy (the plugin answers ``None``)."""

from __future__ import annotations

from logwright.plugins.api import ArchivedRecords, ConfigKey, ConfigKeyRegister, DeadLetter, any_value, hookimpl

PARKING_KEY = "parking.retry.topic"


@hookimpl
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    register.add(ConfigKey(PARKING_KEY, "group", "", any_value,
                           "Where records reconsumed too often are parked (empty: the built-in dead-letter topic)."))


@hookimpl
def logwright_decide_archive(archived: ArchivedRecords) -> DeadLetter | None:
    parking = archived.settings.get(PARKING_KEY, "")
    if archived.reconsume_times <= 0 or not parking:
        return None
    return DeadLetter(parking, copy_record=True, headers=(
        ("parked.after", str(archived.reconsume_times)), ("parked.reason", "{reason}"),
        ("parked.from", f"{archived.real_topic}/{{topic}}-{{partition}}@{{offset}}")))
