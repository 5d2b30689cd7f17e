"""Business-key deduplication for topics that ask for it: ``logwright.dedup.key`` and ``logwright.dedup.window.ms``.

A topic with ``logwright.dedup.key`` = ``record-key`` or ``header:<name>`` drops a produced record whose key
was appended to the same partition within ``logwright.dedup.window.ms``, answering the produce with the
original's offset (`logwright.core.keys.dedup` has the semantics, `logwright.compat.key_dedup` the rewrite).
This plugin only says which partitions are deduplicated and how (``Admission.deduplicate``), registers the
configs, the ``dedup_window`` projection and a sweep that removes index entries once their window ended.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping

from logwright.core.keys.dedup import (
    DEDUP_KEY,
    DEDUP_WINDOW,
    DEDUP_WINDOW_MS,
    SeenKey,
    check_window,
    dedup_key_reader,
    expired_entries,
)
from logwright.core.keys.key_rows import validator

from .api import (
    Admission,
    AppendRequest,
    BackgroundTask,
    BackgroundTaskRegister,
    BrokerFacade,
    ConfigKey,
    ConfigKeyRegister,
    DedupKeysExpired,
    Deduplication,
    ProjectionRegister,
    acts_on_topics,
    hookimpl,
    sweep_expired,
)

DEFAULT_WINDOW_MS = 3_600_000
SWEEP_INTERVAL_MS = 60_000
SWEEP_LIMIT = 10_000
"""Entries removed per event: a sweep of a large backlog stages several events rather than one huge one."""
SEEN_KEY_STATE_TAG = 2110


@hookimpl
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    register.add(ConfigKey(DEDUP_KEY, "topic", "", validator(dedup_key_reader, empty_is_off=True),
                           "What identifies a record for deduplication: 'record-key' or 'header:<name>' (empty: off). "
                           "A record whose dedup key was appended to the partition within logwright.dedup.window.ms "
                           "is not stored again; its produce is answered with the original's offset."))
    register.add(ConfigKey(DEDUP_WINDOW_MS, "topic", str(DEFAULT_WINDOW_MS), validator(check_window),
                           "How long (broker clock, from the original's append) a dedup key drops later records "
                           "with the same key; a change applies to keys appended after it.", "LONG"))


@hookimpl
def logwright_register_projections(register: ProjectionRegister) -> None:
    register.add(DEDUP_WINDOW, state_types={SEEN_KEY_STATE_TAG: SeenKey})


@hookimpl
def logwright_register_background_tasks(register: BackgroundTaskRegister) -> None:
    register.add(BackgroundTask("key_dedup", sweep,
                                "removes dedup index entries whose window ended, once a minute of broker time"))


def _deduplicates(topic_configs: Mapping[str, str], broker_config: Callable[[str], str | None]) -> bool:
    return bool(topic_configs.get(DEDUP_KEY))


@hookimpl(wrapper=True)
@acts_on_topics(_deduplicates)
def logwright_admit_append(request: AppendRequest) -> Generator[None, Admission, Admission]:
    admission = yield
    deduplications = []  # given at once: one admission a partition was quadratic in a Produce's partitions
    for append in request.appends:
        source = append.topic_configs.get(DEDUP_KEY, "")
        if source and admission.error_for(append.partition_id) is None:
            window_ms = int(append.topic_configs.get(DEDUP_WINDOW_MS, DEFAULT_WINDOW_MS))
            deduplications.append((append.partition_id, Deduplication(dedup_key_reader(source), window_ms, source)))
    return admission.deduplicating(deduplications)


async def sweep(facade: BrokerFacade) -> None:
    """Forever: remove index entries whose window ended (lookups ignore them anyway, so the sweep only bounds the
    index's size), then wait a minute of broker time."""
    await sweep_expired(facade, DEDUP_WINDOW.name, lambda rows, now: expired_entries(
        [(name, seen) for name, seen in rows if isinstance(seen, SeenKey)], now, len(rows)), DedupKeysExpired,
        SWEEP_INTERVAL_MS, SWEEP_LIMIT)
