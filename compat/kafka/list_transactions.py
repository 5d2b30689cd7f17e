"""ListTransactions (key 66), versions 0-2: transactional ids the coordinator knows, filtered.

Filters: states (v0; names logwright never uses, such as PrepareCommit, match nothing, and names Kafka
does not know are returned in ``unknown_state_filters``), producer ids (v0), transactions running longer
than ``duration_filter`` ms on the broker clock (v1; an id that never started one passes, as on Kafka
4.4: `_running_longer`), a regular expression on the id (v2, Java syntax
read as Python's; an invalid one is INVALID_REGULAR_EXPRESSION).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.compat.topic_regex import compile_pattern
from logwright.compat.turns import Slices
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.consumer_groups.topic_patterns import PatternError
from logwright.core.transactions.transactions import TransactionState

if TYPE_CHECKING:
    from kio.schema.list_transactions import v0, v1, v2
    from typing_extensions import TypeIs

    ListTransactionsRequest: TypeAlias = (
        v0.ListTransactionsRequest | v1.ListTransactionsRequest | v2.ListTransactionsRequest
    )
    """Every version served: mypy checks each field read against all of them."""

KAFKA_STATES = frozenset({"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
                          "Dead", "PrepareEpochFence"})


@handler(66, "ListTransactions", 0, 2)
async def handle(context: RequestContext, request: ListTransactionsRequest) -> Any:
    broker = context.broker
    module = response_module("list_transactions", context.api_version)
    states = set(request.state_filters)
    producer_ids = {int(producer_id) for producer_id in request.producer_id_filters}
    duration_ms = int(request.duration_filter) if _filters_duration(request) else -1
    pattern_text = request.transactional_id_pattern if _filters_pattern(request) else None
    try:
        pattern = compile_pattern(pattern_text) if pattern_text else None
    except PatternError:
        return make(module.ListTransactionsResponse, throttle_time=datetime.timedelta(0),
                    error_code=ErrorCode.INVALID_REGULAR_EXPRESSION, unknown_state_filters=(),
                    transaction_states=())
    now = broker.clock.now_ms()

    def wanted(state: TransactionState) -> bool:
        return ((not states or state.status in states)
                and (not producer_ids or state.producer_id in producer_ids)
                and (duration_ms < 0 or _running_longer(state, now, duration_ms))
                and (pattern is None or pattern.fullmatch(state.transactional_id) is not None)
                and allowed(context, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, state.transactional_id))

    slices = Slices()  # every transactional id may be read and listed: 100,000 held every client 184 ms
    found: list[TransactionState] = []
    for state in list(broker.store.entities("transactions").values()):
        if isinstance(state, TransactionState) and wanted(state):
            found.append(state)
        await slices.done()
    found.sort(key=lambda state: state.transactional_id)
    listed = []
    for state in found:
        listed.append(make(module.TransactionState, transactional_id=state.transactional_id,
                           producer_id=state.producer_id, transaction_state=state.status))
        await slices.done()
    return make(module.ListTransactionsResponse, throttle_time=datetime.timedelta(0), error_code=ErrorCode.NONE,
                unknown_state_filters=tuple(sorted(states - KAFKA_STATES)), transaction_states=tuple(listed))


def _running_longer(state: TransactionState, now_ms: int, duration_ms: int) -> bool:
    """The duration filter, as Kafka 4.4 applies it: now less the transaction's start, where an id that never
    started one (Empty) starts at -1, so it always passes, and a finished one is measured from its last start."""
    return now_ms - state.started_ms > duration_ms


def _filters_duration(request: ListTransactionsRequest) -> TypeIs[
    v1.ListTransactionsRequest | v2.ListTransactionsRequest
]:
    """v1+ may filter by how long a transaction has run."""
    return has_field(request, "duration_filter")


def _filters_pattern(request: ListTransactionsRequest) -> TypeIs[v2.ListTransactionsRequest]:
    """v2 may filter by a regular expression on the id."""
    return has_field(request, "transactional_id_pattern")
