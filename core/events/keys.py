"""Events of the key index (tags 110-119): business-key deduplication and consumers' processed keys.

Keys are kept as 16-byte BLAKE2b digests (`core.keys.dedup.key_digest`): a business key may be long, and
the index only needs to recognise it again. Each event is written in the WriteBatch of the change it
describes (the append, the acknowledgement), so the index never disagrees with the log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from logwright.core.events.base import Event


@dataclass(frozen=True, slots=True)
class DedupKeysIndexed(Event):
    """Records appended to a deduplicating partition, remembered until ``expires_at_ms`` (broker clock).

    ``entries`` are ``(key digest, offset)``: a later record with the same key before the expiry is dropped
    and answered with that offset.
    """

    TAG: ClassVar[int] = 110
    partition_id: int
    appended_at_ms: int
    expires_at_ms: int
    entries: tuple[tuple[bytes, int], ...]


@dataclass(frozen=True, slots=True)
class DuplicateDropped(Event):
    """Records of one produced batch were not stored: their key was appended within the window.

    ``duplicates`` are ``(index in the batch as sent, key digest, the original's offset)``. The producer's
    sequence range (``base_sequence`` .. + ``sent_record_count`` - 1, when ``producer_id`` is idempotent) is
    remembered as appended at ``answered_offset``, so its retry is a sequence duplicate and its next batch in
    order, however many records were dropped.
    """

    TAG: ClassVar[int] = 111
    partition_id: int
    appended_at_ms: int
    answered_offset: int
    sent_record_count: int
    duplicates: tuple[tuple[int, bytes, int], ...]
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1


@dataclass(frozen=True, slots=True)
class DedupKeysExpired(Event):
    """Index entries past their window, removed: ``(partition id, key digest)``."""

    TAG: ClassVar[int] = 112
    expired: tuple[tuple[int, bytes], ...]


@dataclass(frozen=True, slots=True)
class ProcessedKeysRecorded(Event):
    """A consumer acknowledged records of a subscription with their processed keys, kept until ``expires_at_ms``.

    ``keys`` are ``(key digest, offset)``; written with the acknowledgement (`RecordsAcked`) in one WriteBatch.
    """

    TAG: ClassVar[int] = 113
    subscription: str
    topic: str
    partition_id: int
    expires_at_ms: int
    keys: tuple[tuple[bytes, int], ...]


@dataclass(frozen=True, slots=True)
class ProcessedDuplicateAcked(Event):
    """Records the subscription was about to deliver, acknowledged by the broker instead: their key was processed.

    ``records`` are ``(offset, key digest, the offset whose acknowledgement recorded the key)``; written with the
    broker's `RecordsAcked` of them.
    """

    TAG: ClassVar[int] = 114
    subscription: str
    topic: str
    partition_id: int
    records: tuple[tuple[int, bytes, int], ...]


@dataclass(frozen=True, slots=True)
class ProcessedKeysExpired(Event):
    """Processed keys past their time-to-live, removed: ``(subscription, topic, key digest)``."""

    TAG: ClassVar[int] = 115
    expired: tuple[tuple[str, str, bytes], ...]


KEY_EVENT_TYPES: tuple[type[Event], ...] = (
    DedupKeysIndexed, DuplicateDropped, DedupKeysExpired, ProcessedKeysRecorded, ProcessedDuplicateAcked,
    ProcessedKeysExpired,
)
