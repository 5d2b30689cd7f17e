"""What delayed delivery costs a query once due times start passing, in process (no sockets).

Two measures, each with N delayed records waiting in one partition:
- ``view``: the delayed view alone (`core/log/delayed_view.py`), N entries in rows of 100, due times rising with
  the offsets or at random; the clock moves N/1000 ms between queries, so entries come due at every one. It times
  the plain question a share fetch asks (the partition's held offsets) and a detailed one over 64 offsets.
- ``pop``: pops of up to 8 records (the real coordinator, store and plugins of `tests.compat.test_share_handlers`'
  harness) on a topic of N delayed records then 1,000 plain ones, the clock moving between pops (the first pop
  parks 20,000 held records, the group's room for records in flight: later pops find it full until some are due).

    .venv/bin/python bench/delayed_view.py [--sizes 100000,500000] [--only view|pop]

Before the view kept each partition's held offsets as entries come due (session 38), every question after a due
time passed rescanned every waiting entry: 46-56 ms a plain question at 500,000, and a pop asked the detailed
spans of its whole window: 90 ms a pop at 100,000, 549 ms at 500,000.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from logwright.compat.coordinators.pop_coordinator import pop_coordinator  # noqa: E402
from logwright.compat.wire.records import Record  # noqa: E402
from logwright.core.log.delayed_delivery import DelayedIndex, index_events, row_key  # noqa: E402
from logwright.core.log.delayed_view import DelayedView  # noqa: E402
from logwright.core.pop.pop_commands import PopLimits  # noqa: E402

from tests.compat.test_share_handlers import TOPIC, Harness  # noqa: E402

PARTITION = 7
AFTER = "logwright.deliver.after.ms"


def rows_of(count: int, rising: bool) -> dict[str, object]:
    """Stored index rows of ``count`` entries in rows of 100, due from 10 s on."""
    rng = random.Random(1)
    rows: dict[str, object] = {}
    for base in range(0, count, 100):
        entries = tuple((offset, 10_000 + (offset if rising else rng.randrange(count)))
                        for offset in range(base, min(base + 100, count)))
        for event in index_events(PARTITION, 0, entries):
            rows[row_key(PARTITION, event.entries[0][0])] = DelayedIndex(PARTITION, event.entries)
    return rows


def measure_view(count: int) -> None:
    for rising in (True, False):
        rows = rows_of(count, rising)
        view = DelayedView.of(rows)
        started = time.perf_counter()
        view.held(PARTITION, 0, count, 0)
        first = time.perf_counter() - started
        plain: list[float] = []
        detailed: list[float] = []
        now = 10_000
        for _ in range(30):
            now += max(count // 1000, 1)
            started = time.perf_counter()
            view.held(PARTITION, 0, count, now)
            plain.append(time.perf_counter() - started)
            started = time.perf_counter()
            view.held(PARTITION, now - 10_000, now - 10_000 + 63, now, detailed=True)
            detailed.append(time.perf_counter() - started)
            view.drop_due(PARTITION, now, rows)
        print(f"view  {count:>9,} {'rising' if rising else 'random'}: first question {first * 1e3:.1f} ms; "
              f"plain median {statistics.median(plain) * 1e3:.3f} ms (max {max(plain) * 1e3:.3f}); "
              f"detailed(64) median {statistics.median(detailed) * 1e3:.3f} ms", flush=True)


async def pops(path: Path, count: int) -> None:
    harness = Harness(path)
    harness.broker.create_topic(TOPIC, 1)
    topic = harness.broker.topic(TOPIC)
    assert topic is not None
    coordinator = pop_coordinator(harness.broker)
    limits = PopLimits(max_messages=8, invisible_time_ms=43_200_000)
    await coordinator.pop("g", topic, "c1", limits)  # the group starts at the end
    for base in range(0, count, 10_000):
        await harness.produce_records(*(Record(offset, 1_000, None, b"x", ((AFTER, str(10_000_000 + offset).encode()),))
                                        for offset in range(base, min(base + 10_000, count))))
    await harness.produce_records(*(Record(count + index, 1_000, None, b"now") for index in range(1_000)))
    times: list[float] = []
    popped = 0
    for _ in range(20):
        harness.clock.advance(max(count // 40, 1))
        started = time.perf_counter()
        popped += len(await coordinator.pop("g", topic, "c1", limits))
        times.append(time.perf_counter() - started)
    print(f"pop   {count:>9,}: first {times[0] * 1e3:.1f} ms (parks up to 20,000 held records); "
          f"median {statistics.median(times) * 1e3:.1f} ms, max of the rest {max(times[1:]) * 1e3:.1f} ms; "
          f"{popped} records popped",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,500000")
    parser.add_argument("--only", choices=("view", "pop"))
    args = parser.parse_args()
    for count in (int(size) for size in args.sizes.split(",")):
        if args.only != "pop":
            measure_view(count)
        if args.only != "view":
            with tempfile.TemporaryDirectory() as directory:
                asyncio.run(pops(Path(directory), count))


if __name__ == "__main__":
    main()
