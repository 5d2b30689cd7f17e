"""ShareAcknowledge (key 79), versions 1-2: acknowledgements without fetching (and the closing request).

librdkafka sends it for ``commit_sync``/``commit_async`` when no fetch is due and, with epoch -1, on
close: its acknowledgements are applied, then what the member still holds is released (Kafka's
``releaseSession``). The share session must exist (epoch 0 is refused: acknowledgements need an open session);
the epoch moves as in ShareFetch. v2 allows RENEW (4) and reports the lock duration. An acknowledgement that
names records the member does not hold gets INVALID_RECORD_STATE for that partition only.
"""

from __future__ import annotations

import datetime
import logging
import uuid
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.kafka.share_wire import ack_batches, apply_acks, by_topic, leader, node_endpoints
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.errors import DomainError, InvalidRequest, InvalidShareSessionEpoch
from logwright.core.share_groups.share_sessions import CLOSE_EPOCH, OPEN_EPOCH

if TYPE_CHECKING:
    from kio.schema.share_acknowledge import v1, v2

    ShareAcknowledgeRequest: TypeAlias = v1.ShareAcknowledgeRequest | v2.ShareAcknowledgeRequest
    """Every version served: mypy checks each field read against all of them."""


log = logging.getLogger(__name__)


@handler(79, "ShareAcknowledge", 1, 2)
async def handle(context: RequestContext, request: ShareAcknowledgeRequest) -> Any:
    broker = context.broker
    module = response_module("share_acknowledge", context.api_version)
    coordinator = share_coordinator(broker)
    group_id, member_id = request.group_id or "", request.member_id or ""
    epoch = int(request.share_session_epoch)
    lock_ms = coordinator.lock_duration_ms(group_id, member_id) if group_id else 0

    def response(code: ErrorCode, message: str | None, responses: tuple[Any, ...]) -> Any:
        return make(module.ShareAcknowledgeResponse, throttle_time=datetime.timedelta(0), error_code=code,
                    error_message=message, acquisition_lock_timeout=datetime.timedelta(milliseconds=lock_ms),
                    responses=responses, node_endpoints=node_endpoints(module, context) if not code else ())

    acks = ack_batches(request.topics)
    try:
        if not group_id or not member_id:
            raise InvalidRequest("ShareAcknowledge needs a group id and a member id")
        if epoch == OPEN_EPOCH:
            raise InvalidShareSessionEpoch("ShareAcknowledge cannot open a share session (epoch 0)")
        coordinator.advance_session(group_id, member_id, epoch, (), (), context.connection_id)
    except DomainError as error:  # Kafka 4.4 gives the code alone
        log.debug("ShareAcknowledge of %r / %r refused: %s", group_id, member_id, error)
        return response(error_code_for(error), None, ())
    outcomes = apply_acks(broker, coordinator, group_id, member_id, acks, renew_allowed=context.api_version >= 2,
                              context=context)
    if epoch == CLOSE_EPOCH:
        coordinator.release_closed_session(group_id, member_id)
    await broker.durable()
    responses = tuple(
        make(module.ShareAcknowledgeTopicResponse, topic_id=uuid.UUID(bytes=topic_id), partitions=tuple(
            make(module.PartitionData, partition_index=index, error_code=outcomes[(topic_id, index)][0],
                 error_message=outcomes[(topic_id, index)][1], current_leader=leader(module, broker))
            for index in indexes))
        for topic_id, indexes in by_topic(outcomes).items()
    )
    return response(ErrorCode.NONE, None, responses)
