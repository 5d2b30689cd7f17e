"""The store's RocksDB database seen from outside the store: raw mode with its column families.

Each helper opens, works and closes. A column family view keeps rocksdict's database (and its LOCK) open
even after ``close()``, so no view ever escapes a helper.
"""

from __future__ import annotations

from pathlib import Path

from logwright.eventstore import keys
from rocksdict import Options, Rdict


def _open(path: Path) -> Rdict:
    families = {name: Options(raw_mode=True) for name in keys.COLUMN_FAMILIES}
    return Rdict(str(path), Options(raw_mode=True), column_families=families)


def put(path: Path, family: str, key: bytes, value: bytes) -> None:
    db = _open(path)
    try:
        db.get_column_family(family)[key] = value
    finally:
        db.close()


def delete(path: Path, family: str, doomed: list[bytes]) -> None:
    db = _open(path)
    try:
        view = db.get_column_family(family)
        for key in doomed:
            del view[key]
        del view
    finally:
        db.close()


def items(path: Path, family: str) -> dict[bytes, bytes]:
    db = _open(path)
    try:
        return dict(db.get_column_family(family).items())
    finally:
        db.close()


def state_sequence_key(projection: str) -> bytes:
    """Where the store records the sequence a projection's state covers (``meta`` family)."""
    return keys.META_STATE_SEQUENCE + b"." + projection.encode()
