"""ExpireDelegationToken (key 40), versions 1-2 (v2 flexible): the owner or a renewer ends a token now (a negative
period, answered with the time now, as Kafka 4.4 answers it) or moves its expiry to now plus the period
(`core.security.delegation_tokens.expire`); the token is named by its HMAC.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.token_requests import change_token, timestamp
from logwright.core.security.delegation_tokens import expire

if TYPE_CHECKING:
    from kio.schema.expire_delegation_token import v1, v2

    ExpireDelegationTokenRequest = v1.ExpireDelegationTokenRequest | v2.ExpireDelegationTokenRequest


@handler(40, "ExpireDelegationToken", 1, 2)
async def handle(context: RequestContext, request: ExpireDelegationTokenRequest) -> Any:
    module = response_module("expire_delegation_token", context.api_version)
    code, expiry_ms = await change_token(context, request.hmac, request.expiry_time_period, expire)
    return make(module.ExpireDelegationTokenResponse, error_code=ErrorCode(code), expiry_timestamp=timestamp(expiry_ms),
                throttle_time=datetime.timedelta(0))
