"""InitProducerId decisions: fresh ids, KIP-360 epoch bumps, transactional ids left to core.transactions; no I/O."""

from __future__ import annotations

from typing import Any

import pytest
from logwright.core.errors import InvalidRequest
from logwright.core.events import Event, ProducerIdAllocated
from logwright.core.log.producers import COUNTER_KEY, MAX_EPOCH, PRODUCERS, ProducerState, epoch_key, init_producer_id
from logwright.core.projection import fold


def when(events: list[Event], transactional_id: str | None = None, producer_id: int = -1,
         producer_epoch: int = -1) -> ProducerIdAllocated:
    states: dict[str, Any] = fold(PRODUCERS, events)
    bumped = states.get(epoch_key(producer_id))
    return init_producer_id(states.get(COUNTER_KEY), bumped, transactional_id, producer_id, producer_epoch)


def test_ids_are_handed_out_in_order_and_never_again() -> None:
    first = when([])
    second = when([first])
    assert (first.producer_id, second.producer_id) == (0, 1)
    assert first.producer_epoch == second.producer_epoch == 0
    bumped = when([first, second], producer_id=0, producer_epoch=0)
    assert when([first, second, bumped]).producer_id == 2


def test_the_current_id_and_epoch_bump_the_epoch() -> None:
    allocated = when([])
    bumped = when([allocated], producer_id=0, producer_epoch=0)
    assert bumped == ProducerIdAllocated(0, 1)
    assert when([allocated, bumped], producer_id=0, producer_epoch=1) == ProducerIdAllocated(0, 2)
    assert fold(PRODUCERS, [allocated, bumped])[epoch_key(0)] == ProducerState(1)


@pytest.mark.parametrize(("producer_id", "producer_epoch"), [(0, 5), (7, 0)])
def test_a_stale_or_unknown_pair_gets_a_fresh_id(producer_id: int, producer_epoch: int) -> None:
    allocated = when([])
    assert when([allocated], producer_id=producer_id, producer_epoch=producer_epoch) == ProducerIdAllocated(1, 0)


def test_an_exhausted_epoch_gets_a_fresh_id() -> None:
    events: list[Event] = [ProducerIdAllocated(0, 0), ProducerIdAllocated(0, MAX_EPOCH)]
    assert when(events, producer_id=0, producer_epoch=MAX_EPOCH) == ProducerIdAllocated(1, 0)


def test_an_id_without_an_epoch_is_an_invalid_request() -> None:
    with pytest.raises(InvalidRequest, match="give both"):
        when([ProducerIdAllocated(0, 0)], producer_id=0)


def test_transactional_ids_are_not_decided_here() -> None:
    with pytest.raises(InvalidRequest, match="use init_transactional"):
        when([], transactional_id="tx")
