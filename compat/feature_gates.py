"""Requests a finalized feature level turns off, refused as Kafka 4.4 refuses them before anything else.

At group.version 0 Kafka 4.4 answers ConsumerGroupHeartbeat and ConsumerGroupDescribe UNSUPPORTED_VERSION
(``KafkaApis``'s consumer-protocol check), and at share.version 0 every share-group API, first thing, before any
authorization; the keys stay in ApiVersions, and the groups, their committed offsets and their timers stay, so
members that can no longer heartbeat expire. The answer is the request's error response (Kafka's
``getErrorResponse``): a top-level error or one per group asked, with no message but for AlterShareGroupOffsets and
DeleteShareGroupOffsets, which carry the exception's ("The version of API is not supported."), as probed on Kafka
4.4 (tests/integration/test_update_features.py runs on both).
"""

from __future__ import annotations

import datetime
from typing import Any

from logwright.compat.broker import Broker
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, make, response_module
from logwright.compat.turns import answered_once_in_turns
from logwright.core.log.features import KIP_848_GROUPS, SHARE_GROUPS

GATED: dict[int, str] = {
    68: KIP_848_GROUPS, 69: KIP_848_GROUPS,  # ConsumerGroupHeartbeat, ConsumerGroupDescribe
    76: SHARE_GROUPS, 77: SHARE_GROUPS, 78: SHARE_GROUPS, 79: SHARE_GROUPS,  # heartbeat, describe, fetch, ack
    90: SHARE_GROUPS, 91: SHARE_GROUPS, 92: SHARE_GROUPS,  # Describe, Alter and DeleteShareGroupOffsets
}
"""The API keys a feature at level 0 turns off, and the feature."""

UNSUPPORTED_MESSAGE = "The version of API is not supported."
UNKNOWN_OPERATIONS = -(2**31)
"""The authorized operations of a described group Kafka's error response leaves at their default."""


def turned_off(broker: Broker, api_key: int) -> bool:
    """Whether ``api_key`` is one `GATED` and its feature is at level 0 now."""
    feature = GATED.get(api_key)
    return feature is not None and broker.finalized_features().level(feature) == 0


async def refused(context: RequestContext, request: Any) -> Any | None:
    """The UNSUPPORTED_VERSION answer Kafka 4.4 gives where its response is not the plain error response (a
    message, or one entry per group asked, made in turns: a request may name a million); ``None``: the plain one
    (`wire.fallback.error_response`)."""
    code = ErrorCode.UNSUPPORTED_VERSION
    if context.api_key in (91, 92):
        name = "alter_share_group_offsets" if context.api_key == 91 else "delete_share_group_offsets"
        module = response_module(name, context.api_version)
        response = (module.AlterShareGroupOffsetsResponse if context.api_key == 91
                    else module.DeleteShareGroupOffsetsResponse)
        return make(response, throttle_time=datetime.timedelta(0), error_code=code, error_message=UNSUPPORTED_MESSAGE,
                    responses=())
    if context.api_key in (69, 77):  # each group asked, every other field Kafka's default
        name = "consumer_group_describe" if context.api_key == 69 else "share_group_describe"
        module = response_module(name, context.api_version)
        response = (module.ConsumerGroupDescribeResponse if context.api_key == 69
                    else module.ShareGroupDescribeResponse)
        return make(response, throttle_time=datetime.timedelta(0), groups=await answered_once_in_turns(
            request.group_ids, lambda group_id: make(
                module.DescribedGroup, error_code=code, error_message=None, group_id=group_id, group_state="",
                group_epoch=0, assignment_epoch=0, assignor_name="", members=(),
                authorized_operations=UNKNOWN_OPERATIONS)))
    if context.api_key == 90:
        module = response_module("describe_share_group_offsets", context.api_version)
        groups = await answered_once_in_turns((group.group_id for group in request.groups), lambda group_id: make(
            module.DescribeShareGroupOffsetsResponseGroup, group_id=group_id, error_code=code, error_message=None,
            topics=()))
        return make(module.DescribeShareGroupOffsetsResponse, throttle_time=datetime.timedelta(0), groups=groups)
    return None
