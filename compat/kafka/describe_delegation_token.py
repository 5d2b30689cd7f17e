"""DescribeDelegationToken (key 41), versions 1-3 (v2+ flexible, v3 names each token's requester): the tokens
whose owner or a renewer is among the owners named, every token when none is named (null), none for an empty list
(`core.security.delegation_tokens.described`), each with its HMAC, as Kafka without an authorizer answers.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from logwright.compat.authorization import allowed
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.token_requests import may_manage_tokens, requester
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.security.delegation_tokens import DelegationToken, described

if TYPE_CHECKING:
    from kio.schema.describe_delegation_token import v1, v2, v3

    DescribeDelegationTokenRequest = (v1.DescribeDelegationTokenRequest | v2.DescribeDelegationTokenRequest
                                      | v3.DescribeDelegationTokenRequest)


@handler(41, "DescribeDelegationToken", 1, 3)
async def handle(context: RequestContext, request: DescribeDelegationTokenRequest) -> Any:
    module = response_module("describe_delegation_token", context.api_version)
    tokens = context.broker.delegation_tokens
    if not may_manage_tokens(context):
        code = ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    elif not tokens.settings.enabled:
        code = ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    else:
        code = ErrorCode.NONE
    found = [] if code != ErrorCode.NONE else visible(context, described(
        sorted(tokens.tokens(), key=lambda token: token.issue_ms),
        None if request.owners is None else [(owner.principal_type, owner.principal_name)
                                             for owner in request.owners]))
    return make(module.DescribeDelegationTokenResponse, error_code=code, throttle_time=datetime.timedelta(0),
                tokens=tuple(
        make(module.DescribedDelegationToken, principal_type=token.owner_type, principal_name=token.owner_name,
             token_requester_principal_type=token.requester[0],
             token_requester_principal_name=token.requester[1], issue_timestamp=token.issue_ms,
             expiry_timestamp=token.expiry_ms, max_timestamp=token.max_ms, token_id=token.token_id,
             hmac=tokens.hmac(token.token_id), renewers=tuple(
                 make(module.DescribedDelegationTokenRenewer, principal_type=kind, principal_name=name)
                 for kind, name in token.renewers))
        for token in found))


def visible(context: RequestContext, tokens: list[DelegationToken]) -> list[DelegationToken]:
    """With an authorizer, the tokens the principal may see, as Kafka filters them: its own (owner, requester or
    renewer), and others' with DESCRIBE on the token or DESCRIBE_TOKENS on its owner (a USER resource)."""
    if context.broker.authorizer is None:
        return tokens
    asker = requester(context)
    return [token for token in tokens
            if token.owner_or_renewer(asker) or token.requester == asker
            or allowed(context, AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token.token_id)
            or allowed(context, AclOperation.DESCRIBE_TOKENS, ResourceType.USER,
                       f"{token.owner_type}:{token.owner_name}")]
