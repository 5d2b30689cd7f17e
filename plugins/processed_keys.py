"""Consumer-side idempotency for subscriptions (Pulsar F36): processed keys with a time-to-live.

Registers the group configs ``logwright.processed.key`` (``record-key`` or ``header:<name>``; empty: off) and
``logwright.processed.keys.ttl.ms``, the ``processed_keys`` projection and a sweep removing keys past their
time-to-live. Consumers record keys with LogwrightAcknowledgeProcessed (32020, the bundled client's
``acknowledge(msg, processed_key=...)``); the share coordinator acknowledges records whose key was processed
instead of delivering them (`logwright.core.keys.processed`).
"""

from __future__ import annotations

from logwright.core.keys.dedup import dedup_key_reader
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
)

SWEEP_INTERVAL_MS = 60_000
SWEEP_LIMIT = 10_000
PROCESSED_KEY_STATE_TAG = 2111


def _source(value: str) -> str | None:
    if value == "":
        return None
    try:
        dedup_key_reader(value)
    except ValueError as error:
        return str(error).replace("logwright.dedup.key", PROCESSED_KEY)
    return None


def _ttl(value: str) -> str | None:
    try:
        check_ttl(value)
    except ValueError as error:
        return str(error)
    return None


@hookimpl
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    register.add(ConfigKey(PROCESSED_KEY, "group", "", _source,
                           "How the broker reads a record's processed key: 'record-key' or 'header:<name>' (empty: "
                           "off). A record whose key a consumer acknowledged as processed is acknowledged by the "
                           "broker instead of delivered, until logwright.processed.keys.ttl.ms passes."))
    register.add(ConfigKey(PROCESSED_KEYS_TTL_MS, "group", str(DEFAULT_TTL_MS), _ttl,
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
    """Forever: remove expired keys, then wait a minute of broker time (lookups ignore expired keys anyway)."""
    while True:
        now = facade.now_ms()
        expired = expired_keys(((name, key) for name, key in facade.entities(PROCESSED_KEYS.name).items()
                                if isinstance(key, ProcessedKey)), now)
        for start in range(0, len(expired), SWEEP_LIMIT):
            facade.stage([ProcessedKeysExpired(expired[start:start + SWEEP_LIMIT])])
        if expired:
            await facade.durable()
        await facade.sleep(SWEEP_INTERVAL_MS)
