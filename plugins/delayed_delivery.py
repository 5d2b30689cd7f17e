"""Delayed delivery (Pulsar's ``deliverAfter``/``deliverAt``) as a built-in plugin, through the index hooks.

``logwright_derive_events`` reads the delivery headers of every batch appended (a search of its headers first;
decoding only batches that carry ``logwright.deliver.``; compressed ones only with the topic config
``logwright.delayed.delivery.compressed.enable``) and stages one index row per append in its WriteBatch;
it drops rows once every entry is due (seen at the next change staged on the partition: an append, an
acquisition, an acknowledgement), truncated, or their topic deleted. ``logwright_hold_back`` tells share
groups, logwright subscriptions and Pop which offsets may not go yet and when they may. Disabled
(``plugins.disabled=delayed_delivery``), no index is written and every record is delivered at once.
"""

from __future__ import annotations

from typing import Any

from logwright.core.events import LogTruncated, TopicDeleted
from logwright.core.events.log import DelayedRecordsDropped, DelayedRecordsIndexed
from logwright.core.log.delayed_delivery import (
    COMPRESSED_KEY,
    DELAYED_RECORDS,
    HEADER_PREFIX,
    deliver_at,
    index_events,
)
from logwright.core.log.delayed_view import DelayedView

from .api import (
    AppendedBatch,
    ConfigKey,
    ConfigKeyRegister,
    Event,
    HeldBack,
    HoldBackQuery,
    ProjectionRegister,
    StagedChange,
    boolean,
    derives_from,
    hookimpl,
    names_partition,
)

_MEMO = "delayed_delivery"
_DERIVED_FROM = (DelayedRecordsIndexed, DelayedRecordsDropped, LogTruncated, TopicDeleted)
"""What `logwright_derive_events` reads besides the batches and the events naming a partition (whose due entries it
drops)."""
_SWEPT = "delayed_delivery.swept"
"""Set once this broker's first staged change dropped the rows a disabled spell of the plugin left behind."""


@hookimpl
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    register.add(ConfigKey(COMPRESSED_KEY, "topic", "false", boolean,
                           "Decompress compressed batches at produce to find delivery-delay headers (uncompressed "
                           "batches are always searched); off, a delay header in a compressed batch is ignored.",
                           "BOOLEAN"))


@hookimpl
def logwright_register_projections(register: ProjectionRegister) -> None:
    register.add(DELAYED_RECORDS, event_types=(DelayedRecordsIndexed, DelayedRecordsDropped))


def _view(memo: dict[str, Any], rows: Any) -> DelayedView:
    """This broker's view of the index rows (built from them after a start or a store reload)."""
    view = memo.get(_MEMO)
    if not isinstance(view, DelayedView):
        view = memo[_MEMO] = DelayedView.of(rows)
    return view


def _entries(batch: AppendedBatch, now_ms: int) -> list[tuple[int, int]]:
    if batch.control:
        return []
    open_compressed = batch.compressed and batch.topic_config(COMPRESSED_KEY) == "true"
    if not batch.compressed and not batch.headers_contain(HEADER_PREFIX):
        return []
    entries: list[tuple[int, int]] = []
    for record in batch.records(open_compressed):
        at = deliver_at(record.headers, now_ms)
        if at is not None:
            entries.append((record.offset, at))
    return entries


@hookimpl
@derives_from(lambda kind: issubclass(kind, _DERIVED_FROM) or names_partition(kind), batches=True)
def logwright_derive_events(staged: StagedChange) -> list[Event] | None:
    rows = staged.rows(DELAYED_RECORDS.name)
    view = _view(staged.memo, rows)
    derived: list[Event] = []
    touched: set[int] = set()
    if _SWEPT not in staged.memo:  # rows of partitions truncated or deleted while the plugin was off
        staged.memo[_SWEPT] = True
        for partition_id in view.partition_ids():
            log_start = staged.log_start_offset(partition_id)
            _keep(derived, view.drop_partition(partition_id, rows) if log_start is None
                  else view.drop_below(partition_id, log_start, rows))
            touched.add(partition_id)
    for event in staged.events:
        kind = type(event)
        if kind is DelayedRecordsIndexed or kind is DelayedRecordsDropped:
            view.note(event)
        elif isinstance(event, LogTruncated):
            _keep(derived, view.drop_below(event.partition_id, event.log_start_offset, rows))
        elif isinstance(event, TopicDeleted):
            for deleted in event.partition_ids:
                _keep(derived, view.drop_partition(deleted, rows))
        concerned = getattr(event, "partition_id", None)
        if isinstance(concerned, int) and view.has(concerned):
            touched.add(concerned)
    for batch in staged.batches:
        entries = _entries(batch, staged.now_ms)
        if entries:
            for indexed in index_events(batch.partition_id, staged.now_ms, entries):
                view.note(indexed)
                derived.append(indexed)
        elif view.has(batch.partition_id):
            touched.add(batch.partition_id)
    for partition_id in touched:
        _keep(derived, view.drop_due(partition_id, staged.now_ms, rows))
    return derived or None


def _keep(derived: list[Event], event: DelayedRecordsDropped | None) -> None:
    if event is not None:
        derived.append(event)


@hookimpl
def logwright_hold_back(query: HoldBackQuery) -> HeldBack | None:
    if query.in_order:
        return None
    view = _view(query.memo, query.rows(DELAYED_RECORDS.name))
    offsets, next_due, spans = view.held(query.partition_id, query.first, query.last, query.now_ms, query.detailed)
    return HeldBack(offsets, next_due, spans) if offsets else None
