"""RenewDelegationToken (key 39), versions 1-2 (v2 flexible): the owner or a renewer moves a token's expiry on
(`core.security.delegation_tokens.renew`); the token is named by its HMAC. A refusal answers expiry 0, but
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED -1, as Kafka answers them.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.token_requests import change_token, timestamp
from logwright.core.security.delegation_tokens import renew

if TYPE_CHECKING:
    from kio.schema.renew_delegation_token import v1, v2

    RenewDelegationTokenRequest = v1.RenewDelegationTokenRequest | v2.RenewDelegationTokenRequest


@handler(39, "RenewDelegationToken", 1, 2)
async def handle(context: RequestContext, request: RenewDelegationTokenRequest) -> Any:
    module = response_module("renew_delegation_token", context.api_version)
    code, expiry_ms = await change_token(context, request.hmac, request.renew_period, renew)
    return make(module.RenewDelegationTokenResponse, error_code=ErrorCode(code), expiry_timestamp=timestamp(expiry_ms),
                throttle_time=datetime.timedelta(0))
