"""CreateDelegationToken (key 38), versions 1-3 (v2+ flexible, v3 names an owner): a token for the requester or
the owner it names (`core.security.delegation_tokens.create`), answered with its id and HMAC once durable.
Refusals as Kafka's: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (a PLAINTEXT or token-authenticated connection) and
INVALID_PRINCIPAL_TYPE (a renewer not a User) with every timestamp -1, DELEGATION_TOKEN_AUTH_DISABLED (no
``delegation.token.secret.key``) with timestamps 0.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from logwright.compat.authorization import allowed
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.token_requests import may_manage_tokens, requester, timestamp, written_requester
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.security.delegation_tokens import INVALID_PRINCIPAL_TYPE, NONE, create

if TYPE_CHECKING:
    from kio.schema.create_delegation_token import v1, v2, v3

    CreateDelegationTokenRequest = (v1.CreateDelegationTokenRequest | v2.CreateDelegationTokenRequest
                                    | v3.CreateDelegationTokenRequest)


_MILLISECOND = datetime.timedelta(milliseconds=1)


@handler(38, "CreateDelegationToken", 1, 3)
async def handle(context: RequestContext, request: CreateDelegationTokenRequest) -> Any:
    module = response_module("create_delegation_token", context.api_version)
    broker = context.broker
    asker = requester(context)
    written = written_requester(context)  # the name Kafka's controller creates the token for, and answers
    owner_name = getattr(request, "owner_principal_name", None)
    owner = (getattr(request, "owner_principal_type", None) or "", owner_name) if owner_name else None

    def answer(code: int, owner: tuple[str, str], stamps: tuple[int, int, int], token_id: str = "",
               hmac: bytes = b"") -> Any:
        return make(module.CreateDelegationTokenResponse, error_code=ErrorCode(code), principal_type=owner[0],
                    principal_name=owner[1], token_requester_principal_type=written[0],
                    token_requester_principal_name=written[1], issue_timestamp=timestamp(stamps[0]),
                    expiry_timestamp=timestamp(stamps[1]), max_timestamp=timestamp(stamps[2]), token_id=token_id,
                    hmac=hmac, throttle_time=datetime.timedelta(0))

    if not may_manage_tokens(context):
        return answer(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, owner or written, (-1, -1, -1))
    if owner is not None and owner != asker and not allowed(context, AclOperation.CREATE_TOKENS, ResourceType.USER,
                                                            f"{owner[0]}:{owner[1]}"):
        # a token for another principal needs CREATE_TOKENS on that user (one's own never does), as Kafka's broker
        return answer(ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED, owner, (-1, -1, -1))
    tokens = broker.delegation_tokens
    created = create(tokens.settings, written, owner,
                     [(renewer.principal_type, renewer.principal_name) for renewer in request.renewers],
                     request.max_lifetime // _MILLISECOND, broker.clock.now_ms(), tokens.new_token_id())
    event = created.event
    if event is None:
        stamps = (-1, -1, -1) if created.error == INVALID_PRINCIPAL_TYPE else (0, 0, 0)
        return answer(created.error, created.owner, stamps)
    broker.stage([event])
    await broker.durable()
    return answer(NONE, created.owner, (event.issue_ms, event.expiry_ms, event.max_ms), event.token_id,
                  tokens.hmac(event.token_id))
