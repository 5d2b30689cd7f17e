"""AlterClientQuotas (key 49), versions 0-1 (v1 flexible): set and remove client quotas (`ClientQuotasAltered`), as
Kafka's controller decides (`core.quotas.entities.alterations_decided`): each entity answered once, in Kafka's
order, refusals INVALID_REQUEST with its words; more than 10,000 keys changed refuse every entry
(POLICY_VIOLATION), as Kafka's controller does. ``validate_only`` decides and changes nothing. The answer comes
once the event is durable; the byte-rate quotas apply from that commit on (`compat.client_quota_enforcement`).

An ``ip`` entity's name may be a host name, as on Kafka, which resolves it: the non-literal names of one request
are looked up together, at most `RESOLVED_PER_REQUEST` of them and for at most `RESOLVE_TIMEOUT_S`; a name not
resolved by then is refused as Kafka refuses one that does not resolve.
"""

from __future__ import annotations

import asyncio
import datetime
import socket
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.turns import in_turns
from logwright.core.events.quotas import ClientQuotasAltered
from logwright.core.quotas.client_quotas import stored_quotas
from logwright.core.quotas.entities import (
    IP,
    MAX_RECORDS,
    AlterationAsked,
    alterations_decided,
    is_ip_literal,
    record_count,
)

if TYPE_CHECKING:
    from kio.schema.alter_client_quotas import v0, v1

    AlterClientQuotasRequest: TypeAlias = v0.AlterClientQuotasRequest | v1.AlterClientQuotasRequest
    """Every version served: mypy checks each field read against all of them."""

RESOLVED_PER_REQUEST = 16
RESOLVE_TIMEOUT_S = 5.0
_POLICY_VIOLATION_MESSAGE = "Request parameters do not satisfy the configured policy."


@handler(49, "AlterClientQuotas", 0, 1)
async def handle(context: RequestContext, request: AlterClientQuotasRequest) -> Any:
    module = response_module("alter_client_quotas", context.api_version)
    asked = [AlterationAsked(tuple((part.entity_type, part.entity_name) for part in entry.entity),
                             tuple((op.key, None if op.remove else float(op.value)) for op in entry.ops))
             for entry in request.entries]
    resolvable = await _resolvable(asked)
    current = {quotas.entity: dict(quotas.values)
               for quotas in stored_quotas(context.broker.store.entities("client_quotas"))}
    results, changes = await in_turns(alterations_decided(asked, current, resolvable))
    if record_count(changes) > MAX_RECORDS:
        refused = tuple(make(module.EntryData, error_code=ErrorCode.POLICY_VIOLATION,
                             error_message=_POLICY_VIOLATION_MESSAGE, entity=_entity(module, entry.parts))
                        for entry in asked)
        return make(module.AlterClientQuotasResponse, throttle_time=datetime.timedelta(0), entries=refused)
    if changes and not request.validate_only:
        context.broker.stage([ClientQuotasAltered(changes)])
        await context.broker.durable()
    entries = tuple(make(module.EntryData,
                         error_code=ErrorCode.NONE if result.error is None else ErrorCode.INVALID_REQUEST,
                         error_message=result.error, entity=_entity(module, result.parts))
                    for result in results)
    return make(module.AlterClientQuotasResponse, throttle_time=datetime.timedelta(0), entries=entries)


def _entity(module: Any, parts: tuple[tuple[str, str | None], ...]) -> tuple[Any, ...]:
    return tuple(make(module.EntityData, entity_type=kind, entity_name=name) for kind, name in parts)


async def _resolvable(asked: list[AlterationAsked]) -> frozenset[str]:
    """The non-literal ip names of the request that resolve, looked up side by side (a bounded number, a bounded
    time)."""
    names = {name for entry in asked for kind, name in entry.parts
             if kind == IP and name and not is_ip_literal(name)}
    chosen = sorted(names)[:RESOLVED_PER_REQUEST]
    if not chosen:
        return frozenset()
    loop = asyncio.get_running_loop()
    lookups = [asyncio.ensure_future(loop.getaddrinfo(name, None, type=socket.SOCK_STREAM)) for name in chosen]
    done, pending = await asyncio.wait(lookups, timeout=RESOLVE_TIMEOUT_S)
    for lookup in pending:
        lookup.cancel()
    return frozenset(name for name, lookup in zip(chosen, lookups, strict=True)
                     if lookup in done and lookup.exception() is None and lookup.result())
