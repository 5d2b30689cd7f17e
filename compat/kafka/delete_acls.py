"""DeleteAcls (key 31), versions 1-3 (v2+ flexible): remove the bindings each filter matches (`AclsDeleted`).

Each filter's result lists the bindings it removed; one that two filters match is listed under both and
removed once, as Kafka does. A filter with an UNKNOWN element gets INVALID_REQUEST alone. The answer
comes once the event is durable.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.errors import ErrorCode
from logwright.compat.kafka.describe_acls import acl_filter, stored_acls
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.acls.acls import AclBinding, AclFilter, check_filter, decide_delete
from logwright.core.errors import InvalidRequest

if TYPE_CHECKING:
    from kio.schema.delete_acls import v1, v2, v3

    DeleteAclsRequest: TypeAlias = v1.DeleteAclsRequest | v2.DeleteAclsRequest | v3.DeleteAclsRequest
    """Every version served: mypy checks each field read against all of them."""


@handler(31, "DeleteAcls", 1, 3)
async def handle(context: RequestContext, request: DeleteAclsRequest) -> Any:
    module = response_module("delete_acls", context.api_version)
    filters: list[AclFilter] = []
    refusals: dict[int, str] = {}
    for position, entry in enumerate(request.filters):
        wanted = acl_filter(entry)
        try:
            check_filter(wanted)
        except InvalidRequest as error:
            refusals[position] = str(error)
            continue
        filters.append(wanted)
    matched, event = decide_delete(stored_acls(context), filters)
    if event is not None:
        context.broker.stage([event])
        await context.broker.durable()
    answers = iter(matched)
    results = []
    for position in range(len(request.filters)):
        if position in refusals:
            results.append(make(module.DeleteAclsFilterResult, error_code=ErrorCode.INVALID_REQUEST,
                                error_message=refusals[position], matching_acls=()))
            continue
        results.append(make(module.DeleteAclsFilterResult, error_code=ErrorCode.NONE, error_message=None,
                            matching_acls=tuple(_matching(module, binding) for binding in next(answers))))
    return make(module.DeleteAclsResponse, throttle_time=datetime.timedelta(0), filter_results=tuple(results))


def _matching(module: Any, binding: AclBinding) -> Any:
    return make(module.DeleteAclsMatchingAcl, error_code=ErrorCode.NONE, error_message=None,
                resource_type=binding.resource_type, resource_name=binding.resource_name,
                pattern_type=binding.pattern_type, principal=binding.principal, host=binding.host,
                operation=binding.operation, permission_type=binding.permission_type)
