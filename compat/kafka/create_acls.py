"""CreateAcls (key 30), versions 1-3 (v2+ flexible): store ACL bindings (`AclsCreated`).

Each creation is checked as Kafka checks it (a concrete resource type, LITERAL or PREFIXED, a concrete
operation, ALLOW or DENY, a non-empty name, ``kafka-cluster`` for CLUSTER, a ``Type:name`` principal)
and refused alone with INVALID_REQUEST; an ACL that exists already succeeds without a new event. The
answer comes once the event is durable. Without an authorizer every creation is SECURITY_DISABLED (`describe_acls`).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.errors import ErrorCode
from logwright.compat.kafka.describe_acls import CHANGED_WITHOUT_AUTHORIZER, stored_acls, without_authorizer
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.acls.acls import AclBinding, check_binding, new_bindings
from logwright.core.errors import InvalidRequest
from logwright.core.events.acls import AclsCreated

if TYPE_CHECKING:
    from kio.schema.create_acls import v1, v2, v3

    CreateAclsRequest: TypeAlias = v1.CreateAclsRequest | v2.CreateAclsRequest | v3.CreateAclsRequest
    """Every version served: mypy checks each field read against all of them."""


@handler(30, "CreateAcls", 1, 3)
async def handle(context: RequestContext, request: CreateAclsRequest) -> Any:
    module = response_module("create_acls", context.api_version)
    if without_authorizer(context):
        refused = make(module.AclCreationResult, error_code=ErrorCode.SECURITY_DISABLED,
                       error_message=CHANGED_WITHOUT_AUTHORIZER)
        return make(module.CreateAclsResponse, throttle_time=datetime.timedelta(0),
                    results=tuple(refused for _ in request.creations))
    results = []
    accepted = []
    for creation in request.creations:
        binding = AclBinding(int(creation.resource_type), creation.resource_name,
                             int(creation.resource_pattern_type), creation.principal, creation.host,
                             int(creation.operation), int(creation.permission_type))
        try:
            check_binding(binding)
        except InvalidRequest as error:
            results.append(make(module.AclCreationResult, error_code=ErrorCode.INVALID_REQUEST,
                                error_message=str(error)))
            continue
        accepted.append(binding)
        results.append(make(module.AclCreationResult, error_code=ErrorCode.NONE, error_message=None))
    fresh = new_bindings(stored_acls(context), accepted)
    if fresh:
        context.broker.stage([AclsCreated(fresh)])
        await context.broker.durable()
    return make(module.CreateAclsResponse, throttle_time=datetime.timedelta(0), results=tuple(results))
