"""ListConfigResources (key 74), versions 0-1: the resources DescribeConfigs can be asked about.

v0 (Kafka's former ListClientMetricsResources) lists client-metrics subscriptions only (16: those with a config
set, `core.config.client_metrics`). v1 filters by resource type, an empty filter meaning every type: topics (2), this
broker (4), client-metrics subscriptions (16), and groups (32) that have members, committed offsets or config
overrides. Broker loggers (8) are a known type with nothing to list; any other type is INVALID_REQUEST.
"""

from __future__ import annotations

import datetime
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.broker import Broker
from logwright.compat.coordinators.group_coordinator import coordinator
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.core.config import client_metrics
from logwright.core.groups.group_admin import list_groups
from logwright.core.groups.groups import GroupState
from logwright.core.log.catalog import ResourceConfig, resource_key

if TYPE_CHECKING:
    from kio.schema.list_config_resources import v0, v1
    from typing_extensions import TypeIs

    ListConfigResourcesRequest: TypeAlias = v0.ListConfigResourcesRequest | v1.ListConfigResourcesRequest
    """Every version served: mypy checks each field read against all of them."""

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
KNOWN_TYPES = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)
_GROUP_CONFIG_PREFIX = resource_key("group", "")
_CLIENT_METRICS_PREFIX = resource_key(client_metrics.KIND, "")


@handler(74, "ListConfigResources", 0, 1)
async def handle(context: RequestContext, request: ListConfigResourcesRequest) -> Any:
    module = response_module("list_config_resources", context.api_version)
    named = request.resource_types if _names_resource_types(request) else (CLIENT_METRICS,)
    wanted = frozenset(int(kind) for kind in named) or frozenset(KNOWN_TYPES)  # asked once per resource below
    unknown = sorted(wanted - set(KNOWN_TYPES))
    if unknown:
        return make(module.ListConfigResourcesResponse, throttle_time=datetime.timedelta(0),
                    error_code=ErrorCode.INVALID_REQUEST, config_resources=())
    listed = [make(module.ConfigResource, resource_name=name, resource_type=kind)
              for kind, name in resources(context.broker, wanted)]
    return make(module.ListConfigResourcesResponse, throttle_time=datetime.timedelta(0), error_code=ErrorCode.NONE,
                config_resources=tuple(listed))


def resources(broker: Broker, kinds: Collection[int] = KNOWN_TYPES) -> list[tuple[int, str]]:
    """Every ``(resource type, name)`` of ``kinds`` this broker has configs for, topics first, each kind sorted; a
    kind not asked for is not looked at (a request naming one type 100,000 times was a search of that list per
    topic and group: 2.2 s with 10,000 topics)."""
    listed = [(TOPIC, state.name) for state in broker.topics()] if TOPIC in kinds else []
    if BROKER in kinds:
        listed.append((BROKER, str(broker.node_id)))
    store = broker.store
    if CLIENT_METRICS in kinds:
        subscriptions = sorted(str(key)[len(_CLIENT_METRICS_PREFIX):]
                               for key, state in store.entities("catalog").items()
                               if isinstance(state, ResourceConfig) and str(key).startswith(_CLIENT_METRICS_PREFIX))
        listed.extend((CLIENT_METRICS, name) for name in subscriptions)
    if GROUP not in kinds:
        return listed
    states = [state for state in store.entities("groups").values() if isinstance(state, GroupState)]
    with_offsets = coordinator(broker).groups_with_offsets()
    groups = {listing.group_id for listing in list_groups(states, with_offsets)}
    for key, state in store.entities("catalog").items():
        if isinstance(state, ResourceConfig) and str(key).startswith(_GROUP_CONFIG_PREFIX):
            groups.add(str(key)[len(_GROUP_CONFIG_PREFIX):])
    listed.extend((GROUP, group_id) for group_id in sorted(groups))
    return listed


def _names_resource_types(request: ListConfigResourcesRequest) -> TypeIs[v1.ListConfigResourcesRequest]:
    """v1+ name the resource types; v0 lists client-metrics resources only."""
    return has_field(request, "resource_types")
