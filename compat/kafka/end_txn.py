"""EndTxn (key 26), versions 0-4: commit or abort the producer's transaction.

The markers go into every partition of the transaction, its pending group offsets become committed
offsets (or are dropped), in one WriteBatch, answered once durable. A retry of the outcome already
reached is answered NONE; the other outcome, or ending an Empty transaction, INVALID_TXN_STATE.
v5 (transaction version 2, epoch bumped on every end) is not served. PRODUCER_FENCED from v2.
"""

from __future__ import annotations

import datetime
import logging
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.coordinators.transaction_coordinator import check_not_ending, complete, wire_failure
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.errors import DomainError
from logwright.core.transactions.transactions import end_transaction

if TYPE_CHECKING:
    from kio.schema.end_txn import v0, v1, v2, v3, v4

    EndTxnRequest: TypeAlias = (
        v0.EndTxnRequest | v1.EndTxnRequest | v2.EndTxnRequest | v3.EndTxnRequest | v4.EndTxnRequest
    )
    """Every version served: mypy checks each field read against all of them."""

log = logging.getLogger(__name__)


@handler(26, "EndTxn", 0, 4)
async def handle(context: RequestContext, request: EndTxnRequest) -> Any:
    broker = context.broker
    module = response_module("end_txn", context.api_version)
    code = ErrorCode.NONE
    try:
        check_not_ending(broker, request.transactional_id)
        completion = end_transaction(broker.transaction(request.transactional_id), int(request.producer_id),
                                     int(request.producer_epoch), bool(request.committed), broker.clock.now_ms())
        if completion is not None:
            await complete(broker, completion)
    except DomainError as error:
        code, message = wire_failure(error, context.api_version, fenced_from_version=2)
        log.info("EndTxn of %r refused with %s: %s", request.transactional_id, code.name, message)
    else:
        await broker.durable()
    return make(module.EndTxnResponse, throttle_time=datetime.timedelta(0), error_code=code)
