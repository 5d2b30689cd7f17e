"""EndTxn (key 26), versions 0-5: commit or abort the producer's transaction.

The markers go into every partition of the transaction, its pending group offsets become committed
offsets (or are dropped), in one WriteBatch, answered once durable. Up to v4 (transaction version 1) a retry of
the outcome already reached is answered NONE; the other outcome, or ending an Empty transaction,
INVALID_TXN_STATE. v5 is transaction version 2's (KIP-890 part 2): every end bumps the producer epoch, and the
answer names the producer id and epoch to go on with (`end_transaction_v2`). PRODUCER_FENCED from v2.
"""

from __future__ import annotations

import datetime
import logging
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.coordinators.transaction_coordinator import check_not_ending, complete, wire_failure
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.core.errors import DomainError, InvalidRequest
from logwright.core.log.producers import COUNTER_KEY, ProducerIdCounter
from logwright.core.transactions.transactions import Completion, end_transaction, end_transaction_v2

if TYPE_CHECKING:
    from kio.schema.end_txn import v0, v1, v2, v3, v4, v5

    EndTxnRequest: TypeAlias = (
        v0.EndTxnRequest | v1.EndTxnRequest | v2.EndTxnRequest | v3.EndTxnRequest | v4.EndTxnRequest
        | v5.EndTxnRequest
    )
    """Every version served: mypy checks each field read against all of them."""

log = logging.getLogger(__name__)

TRANSACTION_VERSION_2_FROM = 5
"""EndTxn v5 is the end of a transaction version 2 client."""


@handler(26, "EndTxn", 0, 5)
async def handle(context: RequestContext, request: EndTxnRequest) -> Any:
    broker = context.broker
    module = response_module("end_txn", context.api_version)
    code = ErrorCode.NONE
    producer = (-1, -1)
    try:
        if not request.transactional_id:
            raise InvalidRequest("the transactional id is empty")
        check_not_ending(broker, request.transactional_id)
        state = broker.transaction(request.transactional_id)
        completion: Completion | None
        if context.api_version >= TRANSACTION_VERSION_2_FROM:
            counter = broker.store.state("producers", COUNTER_KEY)
            completion = end_transaction_v2(state, counter if isinstance(counter, ProducerIdCounter) else None,
                                            int(request.producer_id), int(request.producer_epoch),
                                            bool(request.committed), broker.clock.now_ms())
        else:
            completion = end_transaction(state, int(request.producer_id), int(request.producer_epoch),
                                         bool(request.committed), broker.clock.now_ms())
        if completion is not None:
            producer = completion.next_producer_id_and_epoch
            await complete(broker, completion)
        elif state is not None:  # a retry: the producer id and epoch it reached
            producer = (state.producer_id, state.producer_epoch)
    except DomainError as error:
        code, message = wire_failure(error, context.api_version, fenced_from_version=2)
        producer = (-1, -1)
        log.info("EndTxn of %r refused with %s: %s", request.transactional_id, code.name, message)
    else:
        await broker.durable()
    if not has_field(module.EndTxnResponse, "producer_id"):
        return make(module.EndTxnResponse, throttle_time=datetime.timedelta(0), error_code=code)
    return make(module.EndTxnResponse, throttle_time=datetime.timedelta(0), error_code=code,
                producer_id=producer[0], producer_epoch=producer[1])
