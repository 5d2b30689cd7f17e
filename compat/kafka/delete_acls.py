"""DeleteAcls (key 31), versions 1-3 (v2+ flexible): remove the bindings each filter matches (`AclsDeleted`).

Each filter's result lists the bindings it removed; one that two filters match is listed under both and
removed once, as Kafka does. A filter with an UNKNOWN element gets INVALID_REQUEST alone. The answer
comes once the event is durable. Without an authorizer every filter is SECURITY_DISABLED (`describe_acls`).

Filters are matched through an `AclIndex` (a filter naming a resource, principal or host reads only the bindings
sharing it; a filter named again is decided once and answered with the first answer's bytes), and the request
gives way every `BINDINGS_PER_TURN` bindings read. DeleteAcls requests take turns (`_deleting`), so one giving way
never decides from bindings another has removed meanwhile; a CreateAcls between two turns only adds bindings this
one's snapshot does not hold, as if it came after.
"""

from __future__ import annotations

import asyncio
import datetime
import weakref
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.errors import ErrorCode
from logwright.compat.kafka.describe_acls import CHANGED_WITHOUT_AUTHORIZER, acl_filter, stored_acls, without_authorizer
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.turns import give_way
from logwright.compat.wire.encoder import answered_once
from logwright.core.acls.acls import AclBinding, AclFilter, AclIndex, check_filter, deletion
from logwright.core.errors import InvalidRequest

if TYPE_CHECKING:
    from kio.schema.delete_acls import v1, v2, v3

    DeleteAclsRequest: TypeAlias = v1.DeleteAclsRequest | v2.DeleteAclsRequest | v3.DeleteAclsRequest
    """Every version served: mypy checks each field read against all of them."""


@handler(31, "DeleteAcls", 1, 3)
async def handle(context: RequestContext, request: DeleteAclsRequest) -> Any:
    module = response_module("delete_acls", context.api_version)
    if without_authorizer(context):
        refused = make(module.DeleteAclsFilterResult, error_code=ErrorCode.SECURITY_DISABLED,
                       error_message=CHANGED_WITHOUT_AUTHORIZER, matching_acls=())
        return make(module.DeleteAclsResponse, throttle_time=datetime.timedelta(0),
                    filter_results=tuple(refused for _ in request.filters))
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
    async with _deleting(context.broker):
        index = AclIndex(stored_acls(context).values())
        matched: list[list[AclBinding]] = []
        for wanted in filters:
            matched.append(index.matching(wanted))
            if index.read >= BINDINGS_PER_TURN:
                index.read = 0
                await give_way()
        event = deletion(matched)
        if event is not None:
            context.broker.stage([event])
    if event is not None:
        await context.broker.durable()
    answers = iter(answered_once(filters, lambda wanted: _answer(module, index.matching(wanted))))
    results = []
    for position in range(len(request.filters)):
        if position in refusals:
            results.append(make(module.DeleteAclsFilterResult, error_code=ErrorCode.INVALID_REQUEST,
                                error_message=refusals[position], matching_acls=()))
            continue
        results.append(next(answers))
    return make(module.DeleteAclsResponse, throttle_time=datetime.timedelta(0), filter_results=tuple(results))


BINDINGS_PER_TURN = 4_096
_LOCKS: weakref.WeakKeyDictionary[object, asyncio.Lock] = weakref.WeakKeyDictionary()


def _deleting(broker: object) -> asyncio.Lock:
    """The broker's DeleteAcls turn: one request decides and stages at a time."""
    lock = _LOCKS.get(broker)
    if lock is None:
        lock = _LOCKS[broker] = asyncio.Lock()
    return lock


def _answer(module: Any, matches: list[AclBinding]) -> Any:
    return make(module.DeleteAclsFilterResult, error_code=ErrorCode.NONE, error_message=None,
                matching_acls=tuple(_matching(module, binding) for binding in matches))


def _matching(module: Any, binding: AclBinding) -> Any:
    return make(module.DeleteAclsMatchingAcl, error_code=ErrorCode.NONE, error_message=None,
                resource_type=binding.resource_type, resource_name=binding.resource_name,
                pattern_type=binding.pattern_type, principal=binding.principal, host=binding.host,
                operation=binding.operation, permission_type=binding.permission_type)
