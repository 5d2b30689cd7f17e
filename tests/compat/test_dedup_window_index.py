"""The broker's dedup `WindowIndex` follows the store: built from the ``dedup_window`` rows, extended by staged
appends, and forgotten when the store reloads, so the keys of a commit that failed are not taken for stored
originals (the rows, reloaded from disk, do not hold them either)."""

from __future__ import annotations

from pathlib import Path

from logwright.compat.key_dedup import remember, window_index
from logwright.core.events.keys import DedupKeysIndexed
from logwright.core.keys.dedup import DEDUP_WINDOW, key_digest
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.plugins.host import PluginHost

from tests.compat.brokers import in_process_broker

A, B = key_digest(b"a"), key_digest(b"b")


def test_the_index_is_rebuilt_from_the_rows_after_a_reload(tmp_path: Path) -> None:
    host = PluginHost.load(installed=False)
    store = RocksEventStore(tmp_path / "store", projections=host.projections(), types=host.type_registry())
    broker = in_process_broker(store, host=host, configs=host.config_registry())
    try:
        def index() -> dict[bytes, tuple[int, int]]:
            return dict(window_index(broker.plugin_memo, lambda: store.entities(DEDUP_WINDOW.name)).partition(1))

        committed = [DedupKeysIndexed(1, 0, 5_000, ((A, 0),))]
        store.append(committed)
        store.commit()
        assert index() == {A: (0, 5_000)}, "built from the rows"
        staged = [DedupKeysIndexed(1, 0, 5_000, ((B, 1),))]
        store.append(staged)
        remember(window_index(broker.plugin_memo, lambda: store.entities(DEDUP_WINDOW.name)), staged)
        assert index() == {A: (0, 5_000), B: (1, 5_000)}
        assert store.reopen()  # what a failed commit does: staged events dropped, state reloaded from disk
        assert index() == {A: (0, 5_000)}, "the dropped append's key is forgotten"
    finally:
        store.close()
