"""The key_dedup and processed_keys sweeps: rows past their time are removed by an event, live ones kept, and
the sweep then waits a minute of broker time."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import pytest
from logwright.core.events import Event
from logwright.core.events.keys import DedupKeysExpired, ProcessedKeysExpired
from logwright.core.keys.dedup import SeenKey, key_digest
from logwright.core.keys.dedup import entity_key as window_row
from logwright.core.keys.processed import ProcessedKey
from logwright.core.keys.processed import entity_key as processed_row
from logwright.plugins import facade as facade_module
from logwright.plugins import key_dedup, processed_keys


class Stop(Exception):
    pass


class FakeFacade:
    """Only what a sweep uses: the clock, a projection's rows, staging and one sleep (then it stops)."""

    def __init__(self, rows: dict[str, object]) -> None:
        self.rows = rows
        self.staged: list[Event] = []
        self.slept: list[int] = []
        self.given_way = 0

    def now_ms(self) -> int:
        return 1_000

    def entities(self, projection: str) -> Mapping[str, object]:
        return self.rows

    def stage(self, events: Sequence[Event]) -> None:
        self.staged.extend(events)

    async def durable(self) -> None:
        return None

    async def give_way(self) -> None:
        self.given_way += 1

    async def sleep(self, milliseconds: int) -> None:
        self.slept.append(milliseconds)
        raise Stop


def test_the_dedup_sweep_removes_only_ended_windows() -> None:
    old, live = key_digest(b"old"), key_digest(b"live")
    facade = FakeFacade({window_row(3, old): SeenKey(1, 1_000), window_row(3, live): SeenKey(2, 1_001)})
    with pytest.raises(Stop):
        asyncio.run(key_dedup.sweep(facade))  # type: ignore[arg-type]
    assert facade.staged == [DedupKeysExpired(((3, old),))] and facade.slept == [60_000]


def test_the_processed_keys_sweep_removes_only_keys_past_their_ttl() -> None:
    old, live = key_digest(b"old"), key_digest(b"live")
    facade = FakeFacade({processed_row("billing", "orders", old): ProcessedKey(1, 999),
                         processed_row("billing", "orders", live): ProcessedKey(2, 5_000)})
    with pytest.raises(Stop):
        asyncio.run(processed_keys.sweep(facade))  # type: ignore[arg-type]
    assert facade.staged == [ProcessedKeysExpired((("billing", "orders", old),))] and facade.slept == [60_000]


def test_a_large_backlog_of_ended_windows_goes_in_bounded_events(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_dedup, "SWEEP_LIMIT", 2)
    facade = FakeFacade({window_row(1, key_digest(bytes([n]))): SeenKey(n, 0) for n in range(5)})
    with pytest.raises(Stop):
        asyncio.run(key_dedup.sweep(facade))  # type: ignore[arg-type]
    assert [len(event.expired) for event in facade.staged if isinstance(event, DedupKeysExpired)] == [2, 2, 1]
    assert facade.given_way == 0, "one slice of rows, its events staged in its turn"


def test_the_rows_are_looked_at_in_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """100,000 expired keys were read and staged in one stretch (167 ms)."""
    monkeypatch.setattr(facade_module, "SWEEP_ROWS_PER_TURN", 3)
    facade = FakeFacade({window_row(1, key_digest(bytes([n]))): SeenKey(n, 0 if n % 2 else 5_000)
                         for n in range(10)})
    with pytest.raises(Stop):
        asyncio.run(key_dedup.sweep(facade))  # type: ignore[arg-type]
    assert [len(event.expired) for event in facade.staged if isinstance(event, DedupKeysExpired)] == [1, 2, 1, 1]
    assert facade.given_way == 3, "ten rows, three a slice"


def test_a_row_refreshed_while_the_sweep_gives_way_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each slice is decided from the rows as they are then: a key recorded again meanwhile keeps its row."""
    monkeypatch.setattr(facade_module, "SWEEP_ROWS_PER_TURN", 2)
    keys = [processed_row("billing", "orders", key_digest(bytes([n]))) for n in range(4)]
    facade = FakeFacade({key: ProcessedKey(n, 0) for n, key in enumerate(keys)})
    refresh = facade.give_way

    async def refreshing() -> None:
        await refresh()
        facade.rows[keys[3]] = ProcessedKey(9, 5_000)  # recorded again while the sweep gave way

    facade.give_way = refreshing  # type: ignore[method-assign]
    with pytest.raises(Stop):
        asyncio.run(processed_keys.sweep(facade))  # type: ignore[arg-type]
    expired = [name for event in facade.staged if isinstance(event, ProcessedKeysExpired) for name in event.expired]
    assert [digest for _, _, digest in expired] == [key_digest(bytes([n])) for n in range(3)]
