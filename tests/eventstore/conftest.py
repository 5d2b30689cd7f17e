"""Fixtures of the tests that open one store directory several times (batch files, shared batch files)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from logwright.eventstore.rocksdb import RocksEventStore


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """The store's directory."""
    return tmp_path / "store"


@pytest.fixture
def opened() -> Iterator[list[RocksEventStore]]:
    """The stores a test opened (`support.open_store`), closed when it ends."""
    stores: list[RocksEventStore] = []
    yield stores
    for store in stores:
        store.close()
