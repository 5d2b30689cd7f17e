"""InitProducerId decisions for idempotent producers: fresh ids, always (KIP-360 leaves their epoch bumps to the
client), transactional ids left to core.transactions; no I/O."""

from __future__ import annotations

from typing import Any

import pytest
from logwright.core.errors import InvalidRequest
from logwright.core.events import Event, ProducerIdAllocated
from logwright.core.log.producers import COUNTER_KEY, PRODUCERS, init_producer_id
from logwright.core.projection import fold


def when(events: list[Event], transactional_id: str | None = None, producer_id: int = -1,
         producer_epoch: int = -1) -> ProducerIdAllocated:
    states: dict[str, Any] = fold(PRODUCERS, events)
    return init_producer_id(states.get(COUNTER_KEY), transactional_id, producer_id, producer_epoch)


def test_ids_are_handed_out_in_order_and_never_again() -> None:
    first = when([])
    second = when([first])
    assert (first.producer_id, second.producer_id) == (0, 1)
    assert first.producer_epoch == second.producer_epoch == 0
    assert when([first, second]).producer_id == 2


@pytest.mark.parametrize(("producer_id", "producer_epoch"), [(0, 0), (0, 5), (7, 0)])
def test_a_named_id_and_epoch_get_a_fresh_id_as_on_kafka(producer_id: int, producer_epoch: int) -> None:
    allocated = when([])
    assert when([allocated], producer_id=producer_id, producer_epoch=producer_epoch) == ProducerIdAllocated(1, 0)


def test_a_bump_stored_before_fresh_ids_keeps_only_the_counter() -> None:
    """A store written when logwright bumped idempotent epochs holds `ProducerIdAllocated` at epoch 1+: it still
    moves the counter on, and no per-id row is kept for it."""
    states = fold(PRODUCERS, [ProducerIdAllocated(0, 0), ProducerIdAllocated(0, 1)])
    assert list(states) == [COUNTER_KEY]
    assert when([ProducerIdAllocated(0, 0), ProducerIdAllocated(0, 1)], producer_id=0, producer_epoch=1) \
        == ProducerIdAllocated(1, 0)


def test_an_id_without_an_epoch_is_an_invalid_request() -> None:
    with pytest.raises(InvalidRequest, match="give both"):
        when([ProducerIdAllocated(0, 0)], producer_id=0)


def test_transactional_ids_are_not_decided_here() -> None:
    with pytest.raises(InvalidRequest, match="use init_transactional"):
        when([], transactional_id="tx")
