"""InitProducerId (key 22), versions 0-5: producer ids for idempotent producers; no transactions yet.

A producer without a transactional id gets a fresh id at epoch 0 from the ``producers`` projection's
counter (a `ProducerIdAllocated` event, durable before the answer, so an id is never handed out twice,
even across restarts). From v3 a producer may name its current id and epoch (KIP-360): the epoch is
bumped, fencing older instances; a stale pair gets a fresh id, as Kafka does for idempotent producers.

Transactions are not supported: a transactional id is refused with UNSUPPORTED_VERSION and the reason
is logged (the response has no message field). Java, aiokafka and kafka-python fail at once ("Unexpected
error in InitProducerIdResponse"); librdkafka logs "Failed to acquire transactional PID ...: API version
not supported: retrying" and fails ``init_transactions`` with UNSUPPORTED_VERSION at its timeout (its
only immediately fatal codes are authorization and timeout errors, which would lie). COORDINATOR_NOT_AVAILABLE
would send every client looking for another coordinator. v6 (two-phase commit, KIP-939) is not served.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from logwright.core.errors import DomainError
from logwright.core.producers import COUNTER_KEY, ProducerIdCounter, ProducerState, epoch_key, init_producer_id

from .config_resources import failure
from .errors import ErrorCode
from .registry import RequestContext, handler, make, response_module

log = logging.getLogger(__name__)


@handler(22, "InitProducerId", 0, 5)
async def handle(context: RequestContext, request: Any) -> Any:
    broker = context.broker
    module = response_module("init_producer_id", context.api_version)
    producer_id = int(getattr(request, "producer_id", -1))
    counter = broker.store.state("producers", COUNTER_KEY)
    bumped = broker.store.state("producers", epoch_key(producer_id)) if producer_id >= 0 else None
    try:
        event = init_producer_id(
            counter if isinstance(counter, ProducerIdCounter) else None,
            bumped if isinstance(bumped, ProducerState) else None,
            request.transactional_id, producer_id, int(getattr(request, "producer_epoch", -1)),
        )
    except DomainError as error:
        code, message = failure(error)
        log.warning("InitProducerId from %s (client id %r) refused with %s: %s", context.client_host,
                    context.client_id, code.name, message)
        return make(module.InitProducerIdResponse, throttle_time=datetime.timedelta(0), error_code=code,
                    producer_id=-1, producer_epoch=-1)
    broker.stage([event])
    await broker.durable()
    return make(module.InitProducerIdResponse, throttle_time=datetime.timedelta(0), error_code=ErrorCode.NONE,
                producer_id=event.producer_id, producer_epoch=event.producer_epoch)
