"""DescribeUserScramCredentials (key 50), version 0 (flexible): each user's SCRAM mechanisms and iterations (never
the salt or keys), as Kafka's ScramImage answers (`core.security.scram_credentials.describe`): no users named
means every user that has a credential.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.security.scram_credentials import describe

if TYPE_CHECKING:
    from kio.schema.describe_user_scram_credentials.v0.request import DescribeUserScramCredentialsRequest


@handler(50, "DescribeUserScramCredentials", 0, 0)
async def handle(context: RequestContext, request: DescribeUserScramCredentialsRequest) -> Any:
    module = response_module("describe_user_scram_credentials", context.api_version)
    users = None if request.users is None else [user.name for user in request.users]
    described = describe(users, context.broker.store.entities("scram_credentials").values())
    return make(module.DescribeUserScramCredentialsResponse, throttle_time=datetime.timedelta(0),
                error_code=ErrorCode.NONE, error_message="", results=tuple(
                    make(module.DescribeUserScramCredentialsResult, user=user.user, error_code=user.error_code,
                         error_message=user.message, credential_infos=tuple(
                             make(module.CredentialInfo, mechanism=mechanism, iterations=iterations)
                             for mechanism, iterations in user.mechanisms))
                    for user in described))
