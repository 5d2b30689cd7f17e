"""AlterConfigs (key 33), versions 0-2: replace the whole override set of a TOPIC, BROKER or GROUP resource.

This is Kafka's legacy, non-incremental call: keys the request leaves out go back to their defaults.
Values are validated by the config registry (INVALID_CONFIG names the key and the rule); the change is
one `ConfigChanged` event per resource, written before the answer, and nothing with ``validate_only``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.kafka.config_resources import alter_resources, alter_response
from logwright.compat.registry import RequestContext, handler, response_module
from logwright.core.config.config_changes import replace_overrides
from logwright.core.config.configs import ConfigRegistry
from logwright.core.events import ConfigChanged

if TYPE_CHECKING:
    from kio.schema.alter_configs import v0, v1, v2

    AlterConfigsRequest: TypeAlias = v0.AlterConfigsRequest | v1.AlterConfigsRequest | v2.AlterConfigsRequest
    """Every version served: mypy checks each field read against all of them."""


def _decide(registry: ConfigRegistry, kind: str, name: str, current: Mapping[str, str],
            resource: Any) -> ConfigChanged | None:
    return replace_overrides(registry, kind, name, current, [(entry.name, entry.value) for entry in resource.configs])


@handler(33, "AlterConfigs", 0, 2)
async def handle(context: RequestContext, request: AlterConfigsRequest) -> Any:
    module = response_module("alter_configs", context.api_version)
    outcomes = await alter_resources(context.broker, request.resources, bool(request.validate_only), _decide,
                                     context=context)
    return alter_response(module, module.AlterConfigsResponse, outcomes)
