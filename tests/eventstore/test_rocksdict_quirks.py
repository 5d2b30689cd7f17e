"""rocksdict 0.3.29 bugs we work around (reference/dependencies.md). Each test asserts the bug, so it FAILS
once an upgrade fixes it: then drop the workaround it names and turn the test around.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from logwright.eventstore.stored_reads import BoundedIterator
from rocksdict import Options, Rdict, ReadOptions

KEY = struct.Struct(">IQ")


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Rdict]:
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    db = Rdict(str(tmp_path / "db"), options, column_families={"records": Options(raw_mode=True)})
    records = db.get_column_family("records")
    for partition in range(3):
        for offset in range(0, 100, 10):
            records[KEY.pack(partition, offset)] = b"x" * 100
    del records
    yield db
    db.close()


def keys_of(iterator: object) -> list[bytes]:
    found = []
    while iterator.valid():  # type: ignore[attr-defined]
        found.append(bytes(iterator.key()))  # type: ignore[attr-defined]
        iterator.next()  # type: ignore[attr-defined]
    return found


def test_set_iterate_lower_bound_sets_the_upper_bound(db: Rdict) -> None:
    """Workaround: scans start with seek()/seek_for_prev() and use set_iterate_upper_bound only."""
    options = ReadOptions()
    options.set_iterate_lower_bound(KEY.pack(1, 0))
    iterator = db.get_column_family("records").iter(options)
    iterator.seek_to_first()
    found = keys_of(iterator)
    assert found == [KEY.pack(0, offset) for offset in range(0, 100, 10)], "the 'lower' bound acted as a lower bound"


def test_snapshot_iteration_ignores_the_snapshot_but_lookups_do_not(db: Rdict) -> None:
    """Workaround: consistent readers use a checkpoint, or bound scans by a recorded end sequence."""
    db[b"before"] = b"1"
    snapshot = db.snapshot()
    db[b"after"] = b"2"
    assert snapshot[b"before"] == b"1"
    with pytest.raises(Exception, match="key not found"):
        snapshot[b"after"]
    assert b"after" in [bytes(key) for key, _ in snapshot.items()], "snapshot iteration is isolated now"
    del snapshot


def _iterator_outliving_its_options(db: Rdict, upper_bound: bytes) -> object:
    options = ReadOptions()
    options.set_iterate_upper_bound(upper_bound)
    return db.get_column_family("records").iter(options)


def test_an_iterator_whose_read_options_were_collected_finds_nothing_on_seek(db: Rdict) -> None:
    """Workaround: `BoundedIterator` keeps the ReadOptions alive with the iterator.

    Reproduced 300 out of 300 times when this was written; the bound is a fresh (not interned) bytes object.
    """
    lost = 0
    for _ in range(50):
        iterator = _iterator_outliving_its_options(db, KEY.pack(2, 0))
        iterator.seek(KEY.pack(1, 0))  # type: ignore[attr-defined]
        lost += not iterator.valid()  # type: ignore[attr-defined]
    assert lost >= 45, f"seeks found the key {50 - lost} times out of 50: the options may be kept alive now"


def test_our_bounded_iterator_seeks_and_stops_at_its_bound(db: Rdict) -> None:
    for _ in range(50):
        iterator = BoundedIterator(db.get_column_family("records"), KEY.pack(2, 0))
        iterator.seek(KEY.pack(1, 0))
        assert keys_of(iterator) == [KEY.pack(1, offset) for offset in range(0, 100, 10)]
        iterator.seek_for_prev(KEY.pack(1, 55))
        assert iterator.key() == KEY.pack(1, 50)


def test_a_live_column_family_view_keeps_a_closed_database_locked(tmp_path: Path) -> None:
    """Workaround: `RocksEventStore` drops its views before close and after a failed open."""
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    families = {"records": Options(raw_mode=True)}
    path = str(tmp_path / "db")
    db = Rdict(path, options, column_families=families)
    view = db.get_column_family("records")
    db.close()
    with pytest.raises(Exception, match="lock"):
        Rdict(path, options, column_families=families).close()
    del view
    Rdict(path, options, column_families=families).close()
