"""ExpireDelegationToken (key 40), versions 1-2 (v2 flexible): the owner or a renewer ends a token now (a negative
period, answered with the time now, as Kafka 4.4 answers it) or moves its expiry to now plus the period
(`core.security.delegation_tokens.expire`); the token is named by its HMAC.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.token_requests import may_manage_tokens, requester, timestamp
from logwright.core.security.delegation_tokens import expire

if TYPE_CHECKING:
    from kio.schema.expire_delegation_token import v1, v2

    ExpireDelegationTokenRequest = v1.ExpireDelegationTokenRequest | v2.ExpireDelegationTokenRequest


@handler(40, "ExpireDelegationToken", 1, 2)
async def handle(context: RequestContext, request: ExpireDelegationTokenRequest) -> Any:
    module = response_module("expire_delegation_token", context.api_version)
    broker = context.broker
    if not may_manage_tokens(context):
        code, expiry_ms, event = int(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), -1, None
    else:
        tokens = broker.delegation_tokens
        code, expiry_ms, event = expire(tokens.settings, tokens.by_hmac(request.hmac), requester(context),
                                        int(request.expiry_time_period.total_seconds() * 1000), broker.clock.now_ms())
    if event is not None:
        broker.stage([event])
        await broker.durable()
    return make(module.ExpireDelegationTokenResponse, error_code=ErrorCode(code),
                expiry_timestamp=timestamp(expiry_ms), throttle_time=datetime.timedelta(0))
