"""TxnOffsetCommit (key 28), versions 0-5: a transaction's consumer offsets, pending until it ends.

Up to v4 the group must have been added with AddOffsetsToTxn (else INVALID_TXN_STATE; TRANSACTION_ABORTABLE from
v4); v5 is transaction version 2's (KIP-890 part 2): the commit adds the group to the transaction itself, in the
WriteBatch of its offsets.
Offsets are `TransactionalOffsetCommitted` events held by the transaction: OffsetFetch shows them only once the
transaction commits (and answers UNSTABLE_OFFSET_COMMIT to ``require_stable`` meanwhile); an abort drops them. v3+
carry the member's generation (a KIP-848 member's epoch), checked as OffsetCommit checks it unless the producer sent
none (generation -1, no member id), as Kafka does. A producer epoch that is not the transaction's is
INVALID_PRODUCER_EPOCH in every version, and a share group's id GROUP_ID_NOT_FOUND (group ids are one namespace), as
Kafka 4.4 answers.
"""

from __future__ import annotations

import datetime
import logging
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.coordinators.transaction_coordinator import check_not_ending, wire_failure
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka.offset_commit import check_committer, check_not_share_group, commit_partitions
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.core.errors import DomainError, NotInTransaction
from logwright.core.events import Event
from logwright.core.events.transactions import TransactionalOffsetCommitted
from logwright.core.transactions.transactions import add_group, check_producer
from logwright.core.transactions.transactions import check_offset_commit as check_transaction

if TYPE_CHECKING:
    from kio.schema.txn_offset_commit import v0, v1, v2, v3, v4, v5
    from typing_extensions import TypeIs

    TxnOffsetCommitRequest: TypeAlias = (
        v0.TxnOffsetCommitRequest | v1.TxnOffsetCommitRequest | v2.TxnOffsetCommitRequest | v3.TxnOffsetCommitRequest
        | v4.TxnOffsetCommitRequest | v5.TxnOffsetCommitRequest
    )
    """Every version served: mypy checks each field read against all of them."""

log = logging.getLogger(__name__)


ABORTABLE_FROM_VERSION = 4
"""v4+ clients (KIP-890) get TRANSACTION_ABORTABLE for a group their transaction did not add (Kafka 4.4)."""

FENCED_FROM_VERSION = 6
"""Kafka 4.4 answers a stale or wrong producer epoch with INVALID_PRODUCER_EPOCH in every version served here (0-5),
never PRODUCER_FENCED; clients take either as fenced."""

JOINS_FROM_VERSION = 5
"""v5+ (transaction version 2) add the group to the transaction, as AddOffsetsToTxn did."""


@handler(28, "TxnOffsetCommit", 0, 5)
async def handle(context: RequestContext, request: TxnOffsetCommitRequest) -> Any:
    broker = context.broker
    module = response_module("txn_offset_commit", context.api_version)
    group_id = request.group_id
    transaction = None
    joined: list[Event] = []

    def refusal() -> ErrorCode | None:
        nonlocal transaction
        try:
            check_not_ending(broker, request.transactional_id)
            state = broker.transaction(request.transactional_id)
            if context.api_version >= JOINS_FROM_VERSION:
                transaction = check_producer(state, int(request.producer_id), int(request.producer_epoch))
                added = add_group(state, int(request.producer_id), int(request.producer_epoch), group_id,
                                  broker.clock.now_ms())
                joined[:] = [added] if added is not None else []
            else:
                transaction = check_transaction(state, int(request.producer_id), int(request.producer_epoch),
                                                group_id)
            generation = int(request.generation_id) if _names_member(request) else -1
            member_id = request.member_id if _names_member(request) else ""
            instance_id = request.group_instance_id if _names_member(request) else None
            check_not_share_group(broker, group_id)
            if generation >= 0 or member_id or instance_id is not None:
                check_committer(broker, group_id, generation, member_id, instance_id)
        except DomainError as error:
            code, message = wire_failure(error, context.api_version, fenced_from_version=FENCED_FROM_VERSION)
            if isinstance(error, NotInTransaction) and context.api_version >= ABORTABLE_FROM_VERSION:
                code = ErrorCode.TRANSACTION_ABORTABLE
            log.info("TxnOffsetCommit of %r for group %r refused with %s: %s", request.transactional_id, group_id,
                     code.name, message)
            return code
        return None

    commits, topics = await commit_partitions(broker, request.topics, group_id, refusal, broker.clock.now_ms(),
                                              module.TxnOffsetCommitResponseTopic,
                                              module.TxnOffsetCommitResponsePartition, context=context)
    events: list[Event] = [TransactionalOffsetCommitted(transaction.transactional_id, transaction.producer_id,
                                                        transaction.producer_epoch, commit)
                           for commit in commits if transaction is not None]
    if events:
        broker.stage([*joined, *events])
        await broker.durable()
    return make(module.TxnOffsetCommitResponse, throttle_time=datetime.timedelta(0), topics=topics)


def _names_member(request: TxnOffsetCommitRequest) -> TypeIs[
    v3.TxnOffsetCommitRequest | v4.TxnOffsetCommitRequest | v5.TxnOffsetCommitRequest
]:
    """v3+ carry the committing member (id, generation, instance id), checked as OffsetCommit's (KIP-447)."""
    return has_field(request, "member_id")
