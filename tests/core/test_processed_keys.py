"""Consumer-side idempotency, pure: recording processed keys, recognising them in records, the fold and its expiry."""

from __future__ import annotations

import pytest
from logwright.core.events.keys import ProcessedKeysExpired
from logwright.core.keys.dedup import dedup_key_reader, key_digest
from logwright.core.keys.processed import (
    PROCESSED_KEYS,
    ProcessedKey,
    check_ttl,
    entity_key,
    expired_keys,
    processed_duplicates,
    recorded,
)
from logwright.core.log.record_keys import KeyedRecord
from logwright.core.projection import fold


def test_recorded_keys_are_digests_kept_until_the_ttl_ends() -> None:
    event = recorded("billing", "orders", 7, [(b"order-1", 3), (b"order-2", 4)], 1_000, 500)
    assert event.expires_at_ms == 1_500 and event.keys == ((key_digest(b"order-1"), 3), (key_digest(b"order-2"), 4))
    states = fold(PROCESSED_KEYS, [event, recorded("billing", "orders", 8, [(b"order-1", 9)], 1_200, 500)])
    assert states == {entity_key("billing", "orders", key_digest(b"order-1")): ProcessedKey(9, 1_700),
                      entity_key("billing", "orders", key_digest(b"order-2")): ProcessedKey(4, 1_500)}
    assert expired_keys(states.items(), 1_500) == (("billing", "orders", key_digest(b"order-2")),)
    swept = fold(PROCESSED_KEYS, [event, ProcessedKeysExpired(expired_keys(states.items(), 1_500))])
    assert list(swept) == [entity_key("billing", "orders", key_digest(b"order-1"))]


def test_a_subscription_name_with_slashes_survives_the_entity_key() -> None:
    event = recorded("team/a/b", "orders", 0, [(b"k", 1)], 0, 10)
    [(name, key)] = fold(PROCESSED_KEYS, [event]).items()
    assert expired_keys([(name, key)], 10) == (("team/a/b", "orders", key_digest(b"k")),)


@pytest.mark.parametrize("key", [b"", b"x" * 16_385])
def test_empty_and_oversized_keys_are_refused(key: bytes) -> None:
    with pytest.raises(ValueError, match="1 to 16384 bytes"):
        recorded("s", "t", 0, [(key, 1)], 0, 10)


@pytest.mark.parametrize("value", ["0", "x", str(366 * 24 * 3600 * 1000)])
def test_a_bad_ttl_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="logwright.processed.keys.ttl.ms"):
        check_ttl(value)


def test_records_whose_key_was_processed_and_not_forgotten_are_found() -> None:
    known = {key_digest(b"a"): ProcessedKey(1, 100), key_digest(b"b"): ProcessedKey(2, 50)}
    records = [KeyedRecord(10, 0, b"a", False), KeyedRecord(11, 0, b"b", False), KeyedRecord(12, 0, None, False),
               KeyedRecord(13, 0, b"c", False, (("id", b"a"),))]
    assert processed_duplicates(records, dedup_key_reader("record-key"), known.get, 60) == (
        (10, key_digest(b"a"), 1),)
    assert processed_duplicates(records, dedup_key_reader("header:id"), known.get, 60) == (
        (13, key_digest(b"a"), 1),)
