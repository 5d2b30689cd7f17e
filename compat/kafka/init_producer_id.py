"""InitProducerId (key 22), versions 0-5: producer ids for idempotent and transactional producers.

A producer without a transactional id gets a fresh id at epoch 0 from the ``producers`` projection's
counter (a `ProducerIdAllocated` event, durable before the answer, so an id is never handed out twice,
even across restarts). From v3 a producer may name its current id and epoch (KIP-360): the epoch is
bumped, fencing older instances; a stale pair gets a fresh id, as Kafka does for idempotent producers.

With a transactional id this broker is the transaction coordinator (`core.transactions`): the id keeps
its producer id and each call bumps the epoch, aborting a transaction the previous instance left open
(its markers are written in the same WriteBatch). ``transaction_timeout`` must be positive and at most
``transaction.max.timeout.ms`` (INVALID_TRANSACTION_TIMEOUT). PRODUCER_FENCED is answered from v4
(KIP-588), INVALID_PRODUCER_EPOCH before. v6 (two-phase commit, KIP-939) is not served.
"""

from __future__ import annotations

import datetime
import logging
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.coordinators.transaction_coordinator import (
    MARKERS_PER_TURN,
    check_not_ending,
    complete,
    stage_completion,
    transaction_timer,
    wire_failure,
)
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.core.errors import ConcurrentTransactions, DomainError, InvalidRequest, quoted
from logwright.core.events import Event, ProducerIdAllocated
from logwright.core.events.transactions import TransactionalProducerInitialized
from logwright.core.log.producers import COUNTER_KEY, ProducerIdCounter, init_producer_id
from logwright.core.transactions.transactions import Completion, init_transactional

if TYPE_CHECKING:
    from kio.schema.init_producer_id import v0, v1, v2, v3, v4, v5
    from typing_extensions import TypeIs

    InitProducerIdRequest: TypeAlias = (
        v0.InitProducerIdRequest | v1.InitProducerIdRequest | v2.InitProducerIdRequest | v3.InitProducerIdRequest
        | v4.InitProducerIdRequest | v5.InitProducerIdRequest
    )
    """Every version served: mypy checks each field read against all of them."""

log = logging.getLogger(__name__)


@handler(22, "InitProducerId", 0, 5)
async def handle(context: RequestContext, request: InitProducerIdRequest) -> Any:
    broker = context.broker
    module = response_module("init_producer_id", context.api_version)
    producer_id = int(request.producer_id) if _names_producer(request) else -1
    producer_epoch = int(request.producer_epoch) if _names_producer(request) else -1
    counter = broker.store.state("producers", COUNTER_KEY)
    counter = counter if isinstance(counter, ProducerIdCounter) else None
    transactional_id = request.transactional_id
    events: tuple[Event, ...]
    try:
        if transactional_id is None:
            events = (init_producer_id(counter, None, producer_id, producer_epoch),)
        else:
            if not transactional_id:
                raise InvalidRequest("the transactional id is empty")
            transaction_timer(broker)
            check_not_ending(broker, transactional_id)
            timeout_ms = int(request.transaction_timeout.total_seconds() * 1000)

            def decide() -> tuple[Completion | None, tuple[Event, ...]]:
                counter = broker.store.state("producers", COUNTER_KEY)
                return init_transactional(
                    broker.transaction(transactional_id), counter if isinstance(counter, ProducerIdCounter) else None,
                    transactional_id, timeout_ms, int(broker.broker_config("transaction.max.timeout.ms")),
                    broker.clock.now_ms(), producer_id, producer_epoch)

            completion, events = decide()
            if completion is not None:
                log.info("InitProducerId for %r aborts the transaction its previous instance left open",
                         transactional_id)
                if len(completion.partition_ids) <= MARKERS_PER_TURN:
                    stage_completion(broker, completion)
                else:  # ended over turns: other requests ran meanwhile (a producer id allocated), so decide again
                    await complete(broker, completion)
                    completion, events = decide()
                    if completion is not None:  # not ended after all: never drop an abort for the events after it
                        raise ConcurrentTransactions(f"the transaction of {quoted(transactional_id)} is still being "
                                                     "ended; retry")
    except DomainError as error:
        code, message = wire_failure(error, context.api_version, fenced_from_version=4)
        log.warning("InitProducerId from %s (client id %r) refused with %s: %s", context.client_host,
                    context.client_id, code.name, message)
        return make(module.InitProducerIdResponse, throttle_time=datetime.timedelta(0), error_code=code,
                    producer_id=-1, producer_epoch=-1)
    broker.stage(events)
    await broker.durable()
    granted = events[-1]
    assert isinstance(granted, ProducerIdAllocated | TransactionalProducerInitialized)
    return make(module.InitProducerIdResponse, throttle_time=datetime.timedelta(0), error_code=ErrorCode.NONE,
                producer_id=granted.producer_id, producer_epoch=granted.producer_epoch)


def _names_producer(request: InitProducerIdRequest) -> TypeIs[
    v3.InitProducerIdRequest | v4.InitProducerIdRequest | v5.InitProducerIdRequest
]:
    """v3+ name the producer id and epoch to bump (KIP-360)."""
    return has_field(request, "producer_id")
