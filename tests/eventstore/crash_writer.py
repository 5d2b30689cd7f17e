"""The child of the crash test: appends and commits forever, printing each commit once it has returned. Half the
commits have their batch files written ahead on the writer thread first (`RocksEventStore.write_records_ahead`), so a
kill can land while that thread writes; half of those are pipelined, an event staged after the sealed first part,
so a kill can land between the two parts' writes.

Run as ``python -m tests.eventstore.crash_writer DATA_DIR DURABILITY SEED`` from the repository root; the
parent kills it with SIGKILL. A printed line ``sequence partition base_offset record_count`` promises that
everything up to ``sequence`` was committed under the durability setting.
"""

from __future__ import annotations

import random
import sys

from logwright.core.events import OffsetCommitted
from logwright.core.log.catalog import topic_key
from logwright.eventstore.rocksdb import RocksEventStore

from .support import new_topic, produce

TOPIC = "crash"
PARTITIONS = 2


def main(data_dir: str, durability: str, seed: int) -> None:
    chance = random.Random(seed)
    store = RocksEventStore(data_dir, durability=durability)
    if store.state("catalog", topic_key(TOPIC)) is None:
        new_topic(store, TOPIC, PARTITIONS)
        store.commit()
    topic = store.state("catalog", topic_key(TOPIC))
    appends = 0
    while True:
        partition_id = topic.partition_ids[appends % PARTITIONS]
        event = produce(store, partition_id, record_count=chance.randint(1, 50),
                        payload_size=chance.choice([100, 1_024, 16_384]))
        offset_commit = [OffsetCommitted("g", TOPIC, appends % PARTITIONS, event.last_offset + 1)
                         ] if appends % 3 == 2 else []
        roll = chance.random()
        pipelined = roll < 0.25
        if not pipelined:
            store.append(offset_commit)
        if roll < 0.5:  # as the broker's commit of 256 KiB or more: its files written on their thread
            store.write_records_ahead(seal=pipelined)
        if pipelined:  # staged while the sealed part's files are written: the commit's second part
            store.append(offset_commit)
        store.commit()
        sys.stdout.write(f"{store.committed_sequence} {partition_id} {event.base_offset} {event.record_count}\n")
        sys.stdout.flush()
        appends += 1


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
