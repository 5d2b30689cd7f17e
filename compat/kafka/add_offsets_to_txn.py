"""AddOffsetsToTxn (key 25), versions 0-4: a consumer group's offsets join the producer's transaction.

The offsets themselves come with TxnOffsetCommit and are committed or dropped with the transaction.
PRODUCER_FENCED is answered from v2 (KIP-588), INVALID_PRODUCER_EPOCH before.
"""

from __future__ import annotations

import datetime
import logging
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.coordinators.transaction_coordinator import check_not_ending, wire_failure
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.errors import DomainError
from logwright.core.transactions.transactions import add_group

if TYPE_CHECKING:
    from kio.schema.add_offsets_to_txn import v0, v1, v2, v3, v4

    AddOffsetsToTxnRequest: TypeAlias = (
        v0.AddOffsetsToTxnRequest | v1.AddOffsetsToTxnRequest | v2.AddOffsetsToTxnRequest | v3.AddOffsetsToTxnRequest
        | v4.AddOffsetsToTxnRequest
    )
    """Every version served: mypy checks each field read against all of them."""

log = logging.getLogger(__name__)


@handler(25, "AddOffsetsToTxn", 0, 4)
async def handle(context: RequestContext, request: AddOffsetsToTxnRequest) -> Any:
    broker = context.broker
    module = response_module("add_offsets_to_txn", context.api_version)
    code = ErrorCode.NONE
    try:
        check_not_ending(broker, request.transactional_id)
        event = add_group(broker.transaction(request.transactional_id), int(request.producer_id),
                          int(request.producer_epoch), request.group_id, broker.clock.now_ms())
    except DomainError as error:
        code, message = wire_failure(error, context.api_version, fenced_from_version=2)
        log.info("AddOffsetsToTxn of %r refused with %s: %s", request.transactional_id, code.name, message)
    else:
        if event is not None:
            broker.stage([event])
            await broker.durable()
    return make(module.AddOffsetsToTxnResponse, throttle_time=datetime.timedelta(0), error_code=code)
