"""The store's own errors: a failed write (the store reloads and refuses writes until reopened), a database that
cannot be opened again at all, and a write to a store opened read-only."""

from __future__ import annotations

from logwright.core.errors import StorageUnavailable


class StoreFailed(StorageUnavailable):
    """A write to RocksDB failed (disk full, I/O error). What the failed commit carried was dropped and the
    projections reloaded from disk, so memory never runs ahead of disk; writes are refused until `reopen`
    opens the database for writing again. Reads keep working."""


class StoreLost(RuntimeError):
    """The database could not be opened again at all, not even read-only: the process must stop."""


class ReadOnlyStore(RuntimeError):
    pass
