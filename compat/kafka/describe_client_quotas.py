"""DescribeClientQuotas (key 48), versions 0-1 (v1 flexible): the stored client quotas a filter matches, as Kafka's
metadata image answers (`core.quotas.client_quotas.describe`): a bad filter is the whole answer's error, with
Kafka's words and no entries; a good one is answered with an empty error message, as Kafka answers it.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.turns import Slices
from logwright.core.errors import InvalidRequest, UnsupportedFeature
from logwright.core.quotas.client_quotas import Component, describe, stored_quotas
from logwright.core.quotas.entities import entity_key, java_map_order

if TYPE_CHECKING:
    from kio.schema.describe_client_quotas import v0, v1

    DescribeClientQuotasRequest: TypeAlias = v0.DescribeClientQuotasRequest | v1.DescribeClientQuotasRequest
    """Every version served: mypy checks each field read against all of them."""


@handler(48, "DescribeClientQuotas", 0, 1)
async def handle(context: RequestContext, request: DescribeClientQuotasRequest) -> Any:
    module = response_module("describe_client_quotas", context.api_version)
    components = [Component(component.entity_type, int(component.match_type), component.match)
                  for component in request.components]
    try:
        found = describe(stored_quotas(context.broker.store.entities("client_quotas")), components,
                         bool(request.strict))
    except (InvalidRequest, UnsupportedFeature) as error:
        return make(module.DescribeClientQuotasResponse, throttle_time=datetime.timedelta(0),
                    error_code=error_code_for(error), error_message=str(error), entries=None)
    slices = Slices()
    entries = []
    for quotas in sorted(found, key=lambda quotas: entity_key(quotas.entity)):
        entity = tuple(make(module.EntityData, entity_type=kind, entity_name=name)
                       for kind, name in java_map_order(quotas.entity))
        values = tuple(make(module.ValueData, key=key, value=value) for key, value in quotas.values)
        entries.append(make(module.EntryData, entity=entity, values=values))
        await slices.done()
    return make(module.DescribeClientQuotasResponse, throttle_time=datetime.timedelta(0), error_code=ErrorCode.NONE,
                error_message="", entries=tuple(entries))
