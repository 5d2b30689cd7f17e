"""RenewDelegationToken (key 39), versions 1-2 (v2 flexible): the owner or a renewer moves a token's expiry on
(`core.security.delegation_tokens.renew`); the token is named by its HMAC. A refusal answers expiry 0, but
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED -1, as Kafka answers them.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.token_requests import may_manage_tokens, requester, timestamp
from logwright.core.security.delegation_tokens import renew

if TYPE_CHECKING:
    from kio.schema.renew_delegation_token import v1, v2

    RenewDelegationTokenRequest = v1.RenewDelegationTokenRequest | v2.RenewDelegationTokenRequest


@handler(39, "RenewDelegationToken", 1, 2)
async def handle(context: RequestContext, request: RenewDelegationTokenRequest) -> Any:
    module = response_module("renew_delegation_token", context.api_version)
    broker = context.broker
    if not may_manage_tokens(context):
        code, expiry_ms, event = int(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), -1, None
    else:
        tokens = broker.delegation_tokens
        code, expiry_ms, event = renew(tokens.settings, tokens.by_hmac(request.hmac), requester(context),
                                       int(request.renew_period.total_seconds() * 1000), broker.clock.now_ms())
    if event is not None:
        broker.stage([event])
        await broker.durable()
    return make(module.RenewDelegationTokenResponse, error_code=ErrorCode(code), expiry_timestamp=timestamp(expiry_ms),
                throttle_time=datetime.timedelta(0))
