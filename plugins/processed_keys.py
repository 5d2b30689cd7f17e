"""Consumer-side idempotency for subscriptions (Pulsar F36): processed keys with a time-to-live.

Registers the group configs ``logwright.processed.key`` (``record-key`` or ``header:<name>``; empty: off) and
``logwright.processed.keys.ttl.ms``, the ``processed_keys`` projection and a sweep removing keys past their
time-to-live. Consumers record keys with LogwrightAcknowledgeProcessed (32020, the bundled client's
``acknowledge(msg, processed_key=...)``); the share coordinator acknowledges records whose key was processed
instead of delivering them (`logwright.core.keys.processed`).
"""

from __future__ import annotations

from logwright.core.keys.dedup import dedup_key_reader
from logwright.core.keys.key_rows import validator
from logwright.core.keys.processed import (
    DEFAULT_TTL_MS,
    PROCESSED_KEY,
    PROCESSED_KEYS,
    PROCESSED_KEYS_TTL_MS,
    ProcessedKey,
    check_ttl,
    expired_keys,
)

from .api import (
    BackgroundTask,
    BackgroundTaskRegister,
    BrokerFacade,
    ConfigKey,
    ConfigKeyRegister,
    ProcessedKeysExpired,
    ProjectionRegister,
    hookimpl,
    sweep_expired,
)

PROCESSED_KEY_STATE_TAG = 2111


def _source(value: str) -> None:
    try:
        dedup_key_reader(value)
    except ValueError as error:
        raise ValueError(str(error).replace("logwright.dedup.key", PROCESSED_KEY)) from None


@hookimpl
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    register.add(ConfigKey(PROCESSED_KEY, "group", "", validator(_source, empty_is_off=True),
                           "How the broker reads a record's processed key: 'record-key' or 'header:<name>' (empty: "
                           "off). A record whose key a consumer acknowledged as processed is acknowledged by the "
                           "broker instead of delivered, until logwright.processed.keys.ttl.ms passes."))
    register.add(ConfigKey(PROCESSED_KEYS_TTL_MS, "group", str(DEFAULT_TTL_MS), validator(check_ttl),
                           "How long (broker clock) a processed key is remembered after its acknowledgement.",
                           "LONG"))


@hookimpl
def logwright_register_projections(register: ProjectionRegister) -> None:
    register.add(PROCESSED_KEYS, state_types={PROCESSED_KEY_STATE_TAG: ProcessedKey})


@hookimpl
def logwright_register_background_tasks(register: BackgroundTaskRegister) -> None:
    register.add(BackgroundTask("processed_keys", sweep,
                                "removes processed keys past their time-to-live, once a minute of broker time"))


async def sweep(facade: BrokerFacade) -> None:
    """Forever: remove processed keys past their time-to-live (lookups ignore them anyway), once a minute."""
    await sweep_expired(facade, PROCESSED_KEYS.name, lambda rows, now: expired_keys(
        ((name, key) for name, key in rows if isinstance(key, ProcessedKey)), now), ProcessedKeysExpired)
