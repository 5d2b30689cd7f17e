"""Records a subscription is about to hand out whose processed key it has already seen: acknowledged, not delivered.

`ShareCoordinator.acquire` asks `settle_processed` with the records it has chosen for a fetch and the stored
batches it has read for them, for subscriptions with ``logwright.processed.key`` set (others cost one dict
lookup). The chosen records' keys are read (`core.log.record_keys`, bounded) and looked up in the
``processed_keys`` projection; the ones found are acknowledged by the broker (`RecordsAcked` by consumer ""
with `ProcessedDuplicateAcked`, one WriteBatch) and left out of the acquisition. A batch whose keys cannot be
read is delivered as it is: consumers judge their records, this index never withholds them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from logwright.compat.broker import Broker
from logwright.compat.wire.compression import inflate
from logwright.core.events import Event
from logwright.core.events.cursors import RecordsAcked
from logwright.core.events.keys import ProcessedDuplicateAcked
from logwright.core.keys.dedup import dedup_key_reader
from logwright.core.keys.processed import PROCESSED_KEY, PROCESSED_KEYS, ProcessedKey, entity_key, processed_duplicates
from logwright.core.log.record_keys import KeyedRecord, UnreadableRecords, keyed_records
from logwright.core.rangeset import RangeSet

__all__ = ["settle_processed"]


def settle_processed(broker: Broker, settings: Mapping[str, str], group_id: str, topic: str, partition_id: int,
                     chosen: RangeSet, batches: Sequence[bytes],
                     apply: Callable[[str, int, Sequence[Event]], object]) -> RangeSet:
    """``chosen`` without the records whose processed key the subscription holds; those are acknowledged now."""
    source = settings.get(PROCESSED_KEY, "")
    if not source or not chosen:
        return chosen
    try:
        key_of = dedup_key_reader(source)
    except ValueError:
        return chosen
    records: list[KeyedRecord] = []
    for batch in batches:
        try:
            records.extend(record for record in keyed_records(batch, inflate) if record.offset in chosen)
        except UnreadableRecords:
            continue

    def recall(digest: bytes) -> ProcessedKey | None:
        state = broker.store.state(PROCESSED_KEYS.name, entity_key(group_id, topic, digest))
        return state if isinstance(state, ProcessedKey) else None

    found = processed_duplicates(records, key_of, recall, broker.clock.now_ms())
    if not found:
        return chosen
    settled = RangeSet.from_ranges((offset, offset) for offset, _, _ in found)
    apply(group_id, partition_id, [RecordsAcked(group_id, partition_id, "", settled.ranges),
                                   ProcessedDuplicateAcked(group_id, topic, partition_id, found)])
    return chosen.difference(settled)
