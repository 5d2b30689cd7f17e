"""Consumer-side idempotency (Pulsar F36, W8): keys a subscription has processed, and the records not delivered again.

A consumer that processed a record acknowledges it with its processed key (a business id); the subscription
keeps the key until its time-to-live ends (``logwright.processed.keys.ttl.ms``). A record of the subscription
about to be delivered whose key (read as ``logwright.processed.key`` says: the record key or a header) was
processed is acknowledged by the broker instead (`ProcessedDuplicateAcked`), whichever partition of the topic
it is on: a redelivery after a lost acknowledgement, or a duplicate another producer wrote. The keys are the
``processed_keys`` projection, one row per subscription, topic and key digest, so they survive restarts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from logwright.core.events import Event
from logwright.core.events.keys import ProcessedKeysExpired, ProcessedKeysRecorded
from logwright.core.keys.dedup import KeyOf, key_digest
from logwright.core.keys.key_rows import check_duration, offsets_by_row
from logwright.core.log.record_keys import KeyedRecord
from logwright.core.projection import Projection

PROCESSED_KEY: Final = "logwright.processed.key"
PROCESSED_KEYS_TTL_MS: Final = "logwright.processed.keys.ttl.ms"
DEFAULT_TTL_MS: Final = 86_400_000
MAX_KEY_BYTES: Final = 16_384


@dataclass(frozen=True, slots=True)
class ProcessedKey:
    """A processed key: the offset whose acknowledgement recorded it, and when it is forgotten (broker clock)."""

    offset: int
    expires_at_ms: int


def check_ttl(value: str) -> None:
    """``logwright.processed.keys.ttl.ms``: a whole number of milliseconds, 1 to a year."""
    check_duration(PROCESSED_KEYS_TTL_MS, value)


def entity_key(subscription: str, topic: str, digest: bytes) -> str:
    """Digest first (fixed width), then the topic (no '/' in a legal name), then the subscription (anything)."""
    return f"{digest.hex()}/{topic}/{subscription}"


def _split(name: str) -> tuple[str, str, bytes]:
    digest, topic, subscription = name.split("/", 2)
    return subscription, topic, bytes.fromhex(digest)


def recorded(subscription: str, topic: str, partition_id: int, keys: Iterable[tuple[bytes, int]], now_ms: int,
             ttl_ms: int) -> ProcessedKeysRecorded:
    """The event for keys acknowledged now: ``keys`` are ``(processed key, offset)``; empty keys are refused."""
    digests = []
    for key, offset in keys:
        if not key or len(key) > MAX_KEY_BYTES:
            raise ValueError(f"a processed key is 1 to {MAX_KEY_BYTES} bytes, got {len(key)} for offset {offset}")
        digests.append((key_digest(key), offset))
    return ProcessedKeysRecorded(subscription, topic, partition_id, now_ms + ttl_ms, tuple(digests))


def processed_duplicates(records: Sequence[KeyedRecord], key_of: KeyOf, recall: Callable[[bytes], ProcessedKey | None],
                         now_ms: int) -> tuple[tuple[int, bytes, int], ...]:
    """``(offset, key digest, recording offset)`` of the records whose key was processed and not yet forgotten."""
    found = []
    for record in records:
        key = key_of(record)
        if not key:
            continue
        digest = key_digest(key)
        seen = recall(digest)
        if seen is not None and now_ms < seen.expires_at_ms:
            found.append((record.offset, digest, seen.offset))
    return tuple(found)


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, ProcessedKeysRecorded):
        return tuple(dict.fromkeys(entity_key(event.subscription, event.topic, digest) for digest, _ in event.keys))
    if isinstance(event, ProcessedKeysExpired):
        return tuple(entity_key(subscription, topic, digest) for subscription, topic, digest in event.expired)
    return ()


def _rows(event: ProcessedKeysRecorded) -> dict[str, int]:
    return {entity_key(event.subscription, event.topic, digest): offset for digest, offset in event.keys}


_offsets = offsets_by_row(_rows)


def _evolve(state: ProcessedKey | None, event: Event, key: str) -> ProcessedKey | None:
    if isinstance(event, ProcessedKeysRecorded):
        return ProcessedKey(_offsets(event)[key], event.expires_at_ms)
    if isinstance(event, ProcessedKeysExpired):
        return None
    return state


PROCESSED_KEYS: Projection[ProcessedKey] = Projection(
    name="processed_keys", entity_keys=_keys, evolve=_evolve,
    handles=frozenset({ProcessedKeysRecorded, ProcessedKeysExpired}))
"""One row per subscription, topic and processed key digest; registered by the ``processed_keys`` plugin."""


def expired_keys(entities: Iterable[tuple[str, ProcessedKey]], now_ms: int) -> tuple[tuple[str, str, bytes], ...]:
    """The rows past their time-to-live, as `ProcessedKeysExpired` names them."""
    return tuple(_split(name) for name, key in entities if key.expires_at_ms <= now_ms)
