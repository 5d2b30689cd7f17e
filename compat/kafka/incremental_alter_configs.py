"""IncrementalAlterConfigs (key 44), versions 0-1: SET, DELETE, APPEND and SUBTRACT per key.

Works on TOPIC, BROKER and GROUP resources, and sets or resets the levels of the broker's loggers (BROKER_LOGGER,
`broker_loggers`, no event); APPEND and SUBTRACT apply to list-typed keys, starting from
the current value (the default when none is set). A GROUP resource may be configured before the group
exists (share groups are set up this way). Each resource's changes are one `ConfigChanged` event,
validated as a whole: one invalid key refuses the resource with INVALID_CONFIG naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat import broker_loggers
from logwright.compat.kafka.config_resources import alter_resources, alter_response
from logwright.compat.registry import RequestContext, handler, response_module
from logwright.core.config.config_changes import alter_incrementally
from logwright.core.config.configs import ConfigRegistry
from logwright.core.events import ConfigChanged

if TYPE_CHECKING:
    from kio.schema.incremental_alter_configs import v0, v1

    IncrementalAlterConfigsRequest: TypeAlias = v0.IncrementalAlterConfigsRequest | v1.IncrementalAlterConfigsRequest
    """Every version served: mypy checks each field read against all of them."""


def _decide(registry: ConfigRegistry, kind: str, name: str, current: Mapping[str, str],
            resource: Any) -> ConfigChanged | None:
    operations = [(entry.name, int(entry.config_operation), entry.value) for entry in resource.configs]
    return alter_incrementally(registry, kind, name, current, operations)


def _alter_loggers(resource: Any, validate_only: bool) -> None:
    broker_loggers.alter([(entry.name, int(entry.config_operation), entry.value) for entry in resource.configs],
                         validate_only)


@handler(44, "IncrementalAlterConfigs", 0, 1)
async def handle(context: RequestContext, request: IncrementalAlterConfigsRequest) -> Any:
    module = response_module("incremental_alter_configs", context.api_version)
    outcomes = await alter_resources(context.broker, request.resources, bool(request.validate_only), _decide,
                                     _alter_loggers, context)
    return alter_response(module, module.IncrementalAlterConfigsResponse, outcomes)
