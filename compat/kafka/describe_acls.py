"""DescribeAcls (key 29), versions 1-3 (v2+ flexible): the stored ACL bindings a filter matches.

Bindings are grouped by resource pattern, as Kafka answers. A filter with an UNKNOWN element is
refused with INVALID_REQUEST. With an authorizer, asking needs DESCRIBE on the cluster (`authorization_rules`);
the ACLs are enforced then (docs/acls.md). Without one, the three ACL keys are refused with SECURITY_DISABLED, as
Kafka 4.4 refuses them: an ACL stored there would read as protecting what nothing checks.
"""

from __future__ import annotations

import datetime
from itertools import groupby
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.turns import Slices
from logwright.core.acls.acls import AclBinding, AclFilter, check_filter
from logwright.core.errors import InvalidRequest

if TYPE_CHECKING:
    from kio.schema.describe_acls import v1, v2, v3

    DescribeAclsRequest: TypeAlias = v1.DescribeAclsRequest | v2.DescribeAclsRequest | v3.DescribeAclsRequest
    """Every version served: mypy checks each field read against all of them."""


DESCRIBED_WITHOUT_AUTHORIZER = "No Authorizer is configured on the broker"
CHANGED_WITHOUT_AUTHORIZER = "No Authorizer is configured."
"""Kafka's messages with SECURITY_DISABLED: DescribeAcls's, and each creation's or deletion filter's."""


def without_authorizer(context: RequestContext) -> bool:
    """Whether the ACL keys are refused: no ``authorizer.class.name`` (Kafka's AclApis without an authorizer)."""
    return context.broker.authorizer is None


def acl_filter(source: Any) -> AclFilter:
    """The filter a DescribeAcls request or a DeleteAcls filter entry carries (same field names)."""
    return AclFilter(int(source.resource_type_filter), source.resource_name_filter, int(source.pattern_type_filter),
                     source.principal_filter, source.host_filter, int(source.operation), int(source.permission_type))


def stored_acls(context: RequestContext) -> dict[str, AclBinding]:
    return {key: binding for key, binding in context.broker.store.entities("acls").items()
            if isinstance(binding, AclBinding)}


@handler(29, "DescribeAcls", 1, 3)
async def handle(context: RequestContext, request: DescribeAclsRequest) -> Any:
    module = response_module("describe_acls", context.api_version)
    if without_authorizer(context):
        return make(module.DescribeAclsResponse, throttle_time=datetime.timedelta(0),
                    error_code=ErrorCode.SECURITY_DISABLED, error_message=DESCRIBED_WITHOUT_AUTHORIZER, resources=())
    wanted = acl_filter(request)
    try:
        check_filter(wanted)
    except InvalidRequest as error:
        return make(module.DescribeAclsResponse, throttle_time=datetime.timedelta(0),
                    error_code=ErrorCode.INVALID_REQUEST, error_message=str(error), resources=())
    slices = Slices()  # every ACL may be read and listed: 100,000 held every client 441 ms in one stretch
    matches: list[AclBinding] = []
    for binding in list(context.broker.store.entities("acls").values()):
        if isinstance(binding, AclBinding) and wanted.matches(binding):
            matches.append(binding)
        await slices.done()
    matches.sort(key=_pattern_then_key)
    resources = []
    for (resource_type, name, pattern_type), group in groupby(matches, key=_pattern):
        acls = []
        for binding in group:
            acls.append(make(module.AclDescription, principal=binding.principal, host=binding.host,
                             operation=binding.operation, permission_type=binding.permission_type))
            await slices.done()
        resources.append(make(module.DescribeAclsResource, resource_type=resource_type, resource_name=name,
                              pattern_type=pattern_type, acls=tuple(acls)))
    return make(module.DescribeAclsResponse, throttle_time=datetime.timedelta(0), error_code=ErrorCode.NONE,
                error_message=None, resources=tuple(resources))


def _pattern_then_key(binding: AclBinding) -> tuple[int, str, int, str]:
    """By resource, then in the stable order `select` lists bindings in."""
    return binding.resource_type, binding.resource_name, binding.pattern_type, binding.key


def _pattern(binding: AclBinding) -> tuple[int, str, int]:
    return binding.resource_type, binding.resource_name, binding.pattern_type
