"""A pop over many delayed records asks the plugins for each held offset's time only for the stretch it reads,
not for its whole window up to the last stable offset (500,000 waiting: 100-675 ms a pop)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from logwright.compat.broker import Broker
from logwright.compat.coordinators.pop_coordinator import pop_coordinator
from logwright.compat.wire.records import Record
from logwright.core.events import ConfigChanged
from logwright.core.pop.pop_commands import MAX_IN_FLIGHT_KEY, PopLimits

from tests.compat.test_share_handlers import TOPIC, Harness, run

DELAYED = 20_000
HELD_ROOM = 100
LIMITS = PopLimits(max_messages=8, invisible_time_ms=120_000)
AFTER = "logwright.deliver.after.ms"


def test_a_pop_asks_each_held_offsets_time_only_for_what_it_reads(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[int, int]] = []
    held_back = Broker.held_back

    def counted(self: Broker, partition_id: int, first: int, last: int, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("detailed"):
            asked.append((first, last))
        return held_back(self, partition_id, first, last, *args, **kwargs)

    monkeypatch.setattr(Broker, "held_back", counted)

    async def scenario(h: Harness) -> None:
        h.broker.create_topic(TOPIC, 1)
        topic = h.broker.topic(TOPIC)
        assert topic is not None
        h.broker.stage([ConfigChanged("group", "g", ((MAX_IN_FLIGHT_KEY, str(HELD_ROOM)),))])
        coordinator = pop_coordinator(h.broker)
        assert await coordinator.pop("g", topic, "c1", LIMITS) == [], "the group starts at the end (empty)"
        plain = [Record(i, 1_000, None, b"now") for i in range(3)]
        delayed = [Record(3 + i, 1_000, None, b"later", ((AFTER, b"60000"),)) for i in range(DELAYED)]
        await h.produce_records(*plain, *delayed, Record(DELAYED + 3, 1_000, None, b"behind"))
        popped = await coordinator.pop("g", topic, "c1", LIMITS)
        assert [message.record.offset for message in popped] == [0, 1, 2], "the delayed records are held back"
        assert asked and asked[0][0] == 3, "asked from the first held offset the read met"
        assert sum(last - first + 1 for first, last in asked) <= 4 * HELD_ROOM, asked

        asked.clear()
        h.clock.advance(60_000)
        pop_coordinator(h.broker).tick()
        due = await coordinator.pop("g", topic, "c2", LIMITS)
        assert [message.record.offset for message in due] == list(range(3, 11)), "parked records go at their time"

    run(tmp_path, scenario)
