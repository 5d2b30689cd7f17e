"""AlterUserScramCredentials (key 51), version 0 (flexible): set and remove users' SCRAM credentials
(`UserScramCredentialsAltered`), as Kafka's controller decides (`core.security.scram_credentials`): a user named
twice is refused whole, each other change checked alone, the answer in Kafka's order. The answer comes once the
event is durable; SCRAM authentication on a SASL listener uses the new credentials from that commit on.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.security.scram_credentials import Upsertion, decide_alterations

if TYPE_CHECKING:
    from kio.schema.alter_user_scram_credentials.v0.request import AlterUserScramCredentialsRequest


@handler(51, "AlterUserScramCredentials", 0, 0)
async def handle(context: RequestContext, request: AlterUserScramCredentialsRequest) -> Any:
    module = response_module("alter_user_scram_credentials", context.api_version)
    stored = context.broker.store.entities("scram_credentials")
    results, event = decide_alterations(
        [(deletion.name, int(deletion.mechanism)) for deletion in request.deletions],
        [Upsertion(upsertion.name, int(upsertion.mechanism), int(upsertion.iterations), upsertion.salt,
                   upsertion.salted_password) for upsertion in request.upsertions],
        stored)
    if event is not None:
        context.broker.stage([event])
        await context.broker.durable()
    return make(module.AlterUserScramCredentialsResponse, throttle_time=datetime.timedelta(0), results=tuple(
        make(module.AlterUserScramCredentialsResult, user=result.user, error_code=result.error_code,
             error_message=result.message) for result in results))
