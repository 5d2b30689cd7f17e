"""ShareFetch (key 78), versions 1-2: acquire records for a share group member, with piggy-backed acks.

Order within one request: the share session moves (epoch 0 opens, positive continues, -1 closes),
acknowledgements are applied (per partition, all or nothing), then records are acquired from the
session's partitions within ``max_records``, ``max_bytes`` and ``batch_size`` as Kafka 4.x applies them
(`core.fetch_budget`: whole stored batches, a soft record limit in the batch-optimized acquire mode of
v1 and of v2's ``share_acquire_mode`` 0, an exact one in record-limit mode 1; the first batch of the
response goes even over ``max_bytes``, itself capped by the broker's ``fetch.max.bytes``),
under the group's ``share.record.lock.duration.ms`` or the
member's own lock duration. Stored batches go out untouched; ``AcquiredRecords`` say which offsets of
them the member holds and how often each was delivered, and the client drops the rest. Nothing is
sent before the acquisitions are durable, so a delivery count a client saw survives a crash.

Long polls wait, up to ``max_wait``, for records to be appended, released, to come back after a lock
ran out or a delay ended, or for a Failover switch delay to end. ``max_wait`` is a network wait and is
measured in wall time even on a ``--manual-clock`` broker (the client's own request timeout is wall
time too, and a clock nobody advances would otherwise hold the request for ever); what the broker
waits *for* is decided on the broker clock, and advancing a manual clock wakes the long polls at once.

librdkafka reads the records field as a compact array and fails on null, so it is always bytes (maybe
empty). Partitions are answered only when they have records, an error or an acknowledgement outcome.
v2 adds ``is_renew_ack`` (RENEW acks; such a request acquires nothing) and ``share_acquire_mode``
(0 batch-optimized, 1 record-limit; anything else is INVALID_REQUEST).
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import uuid
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.coordinators.share_coordinator import Acquired, ShareCoordinator, share_coordinator
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.kafka.share_wire import (
    ack_batches,
    apply_acks,
    by_topic,
    leader,
    node_endpoints,
    resolve,
    topic_id_bytes,
)
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.errors import DomainError, InvalidRequest
from logwright.core.log.fetch_budget import BATCH_OPTIMIZED, RECORD_LIMIT, FetchBudget
from logwright.core.share_groups.share_sessions import CLOSE_EPOCH, OPEN_EPOCH, PartitionRef

if TYPE_CHECKING:
    from kio.schema.share_fetch import v1, v2
    from typing_extensions import TypeIs

    ShareFetchRequest: TypeAlias = v1.ShareFetchRequest | v2.ShareFetchRequest
    """Every version served: mypy checks each field read against all of them."""

MAX_RESPONSE_BYTES = 2**31 - 1
"""The byte budget of a request whose ``max_bytes`` is not positive."""

log = logging.getLogger(__name__)


@handler(78, "ShareFetch", 1, 2)
async def handle(context: RequestContext, request: ShareFetchRequest) -> Any:
    broker = context.broker
    module = response_module("share_fetch", context.api_version)
    coordinator = share_coordinator(broker)
    group_id, member_id = request.group_id or "", request.member_id or ""
    epoch = int(request.share_session_epoch)
    renew = bool(request.is_renew_ack) if _v2(request) else False
    lock_ms = coordinator.lock_duration_ms(group_id, member_id) if group_id else 0

    def refusal(code: ErrorCode, message: str) -> Any:  # Kafka 4.4 gives the code alone: the reason is logged
        log.debug("ShareFetch of %r / %r refused: %s", group_id, member_id, message)
        return make(module.ShareFetchResponse, throttle_time=datetime.timedelta(0), error_code=code,
                    error_message=None, acquisition_lock_timeout=datetime.timedelta(milliseconds=lock_ms),
                    responses=(), node_endpoints=())

    acquire_mode = int(request.share_acquire_mode) if _v2(request) else BATCH_OPTIMIZED
    if acquire_mode not in (BATCH_OPTIMIZED, RECORD_LIMIT):
        return refusal(ErrorCode.INVALID_REQUEST, f"share_acquire_mode {acquire_mode} is not 0 (batch_optimized) "
                                                  "or 1 (record_limit)")
    acks = ack_batches(request.topics)
    added: list[PartitionRef] = [(topic_id_bytes(topic.topic_id), int(partition.partition_index))
                                 for topic in request.topics for partition in topic.partitions]
    forgotten = [(topic_id_bytes(topic.topic_id), int(index))
                 for topic in request.forgotten_topics_data for index in topic.partitions]
    try:
        if not group_id or not member_id:
            raise InvalidRequest("ShareFetch needs a group id and a member id")
        if epoch == OPEN_EPOCH and acks:
            raise InvalidRequest("a request opening a share session (epoch 0) cannot carry acknowledgements")
        partitions = coordinator.advance_session(group_id, member_id, epoch, added, forgotten, context.connection_id)
    except DomainError as error:
        return refusal(error_code_for(error), str(error))
    ack_outcomes = apply_acks(broker, coordinator, group_id, member_id, acks, renew_allowed=context.api_version >= 2,
                              context=context)
    if epoch == CLOSE_EPOCH:
        coordinator.release_closed_session(group_id, member_id)
    errors: dict[PartitionRef, tuple[ErrorCode, str | None]] = {}
    acquired: dict[PartitionRef, Acquired] = {}
    max_records = int(request.max_records)
    max_bytes = min(int(request.max_bytes) if int(request.max_bytes) > 0 else MAX_RESPONSE_BYTES,
                    int(broker.broker_config("fetch.max.bytes")))
    if epoch != CLOSE_EPOCH and not renew and max_records > 0:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(request.max_wait.total_seconds(), 0.0)
        partition_ids = [resolved[1] for ref in partitions if (resolved := resolve(broker, ref)) is not None]
        while True:
            budget = FetchBudget(max_records, max_bytes, acquire_mode == BATCH_OPTIMIZED, int(request.batch_size))
            acquired = _acquire_round(context, coordinator, group_id, member_id, partitions, budget, errors)
            remaining = deadline - loop.time()
            if acquired or errors or remaining <= 0:
                break
            await coordinator.wait_for_records(remaining, partition_ids)
    await broker.durable()
    answered = dict.fromkeys((*acquired, *errors, *ack_outcomes))
    responses = []
    for topic_id, indexes in by_topic(answered).items():
        parts = []
        for index in indexes:
            ref = (topic_id, index)
            code, message = errors.get(ref, (ErrorCode.NONE, None))
            ack_code, ack_message = ack_outcomes.get(ref, (ErrorCode.NONE, None))
            got = acquired.get(ref)
            parts.append(make(
                module.PartitionData, partition_index=index, error_code=code, error_message=message,
                acknowledge_error_code=ack_code, acknowledge_error_message=ack_message,
                current_leader=leader(module, broker), records=got.records if got else b"",
                acquired_records=tuple(make(module.AcquiredRecords, first_offset=first, last_offset=last,
                                            delivery_count=count) for first, last, count in got.ranges) if got else (),
            ))
        responses.append(make(module.ShareFetchableTopicResponse, topic_id=uuid.UUID(bytes=topic_id),
                              partitions=tuple(parts)))
    return make(module.ShareFetchResponse, throttle_time=datetime.timedelta(0), error_code=ErrorCode.NONE,
                error_message=None, acquisition_lock_timeout=datetime.timedelta(milliseconds=lock_ms),
                responses=tuple(responses), node_endpoints=node_endpoints(module, context))


def _acquire_round(context: RequestContext, coordinator: ShareCoordinator, group_id: str, member_id: str,
                   partitions: tuple[PartitionRef, ...], budget: FetchBudget,
                   errors: dict[PartitionRef, tuple[ErrorCode, str | None]]) -> dict[PartitionRef, Acquired]:
    """One pass over the session's partitions, starting after the last one served so none is starved."""
    acquired: dict[PartitionRef, Acquired] = {}
    last: PartitionRef | None = None
    for ref in coordinator.round_order(group_id, member_id, partitions):
        resolved = resolve(context.broker, ref)
        if resolved is None:
            errors[ref] = (ErrorCode.UNKNOWN_TOPIC_ID, None)  # Kafka 4.4's partition errors have no words
            continue
        topic, partition_id = resolved
        if not allowed(context, AclOperation.READ, ResourceType.TOPIC, topic.name):
            errors[ref] = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
            continue
        got = coordinator.acquire(group_id, member_id, topic.name, partition_id, budget)
        if got is None:
            continue
        acquired[ref] = got
        last = ref
        if budget.exhausted:
            break
    if last is not None:  # once a round: each call searches the session's partitions for the one served
        coordinator.served(group_id, member_id, last)
    return acquired


def _v2(request: ShareFetchRequest) -> TypeIs[v2.ShareFetchRequest]:
    """v2 adds ``is_renew_ack`` and ``share_acquire_mode``."""
    return has_field(request, "share_acquire_mode")
