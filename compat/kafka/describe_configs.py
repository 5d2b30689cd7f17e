"""DescribeConfigs (key 32), versions 1-4: TOPIC, BROKER and GROUP configs with their sources.

Every known key is listed with its effective value (defaults included) unless the request names a
subset; v1+ carry the config source and, when asked, the synonyms (the chain of values the effective
one overrides, most specific first); v3+ add the value type and, when asked, the documentation. A
GROUP resource need not exist. A BROKER resource is this broker's id, or "" for the cluster-wide
dynamic defaults (only the keys set there, as Kafka lists them). A BROKER_LOGGER resource (this broker's id) lists
the broker's loggers and their levels (`broker_loggers`). v0 is not in kio and no target client needs it.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat import broker_loggers
from logwright.compat.errors import ErrorCode, KafkaError
from logwright.compat.kafka.config_resources import (
    ConfigSource,
    DescribedConfig,
    config_refusal,
    describe,
    failure,
    resolve,
)
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.compat.turns import Slices
from logwright.compat.wire.encoder import OnceAnswered
from logwright.core.acls.bindings import AclOperation
from logwright.core.errors import DomainError

if TYPE_CHECKING:
    from kio.schema.describe_configs import v1, v2, v3, v4
    from typing_extensions import TypeIs

    DescribeConfigsRequest: TypeAlias = (
        v1.DescribeConfigsRequest | v2.DescribeConfigsRequest | v3.DescribeConfigsRequest | v4.DescribeConfigsRequest
    )
    """Every version served: mypy checks each field read against all of them."""
    DescribeConfigsResource: TypeAlias = (
        v1.request.DescribeConfigsResource | v2.request.DescribeConfigsResource | v3.request.DescribeConfigsResource
        | v4.request.DescribeConfigsResource
    )


@handler(32, "DescribeConfigs", 1, 4)
async def handle(context: RequestContext, request: DescribeConfigsRequest) -> Any:
    module = response_module("describe_configs", context.api_version)
    include_synonyms = bool(request.include_synonyms)
    include_documentation = bool(request.include_documentation) if _may_ask_documentation(request) else False

    # a config's entry alike in many resources (every group without overrides): written once, its bytes shared
    entry_of: OnceAnswered[DescribedConfig] = OnceAnswered(
        lambda entry: _entry(module, entry, include_synonyms, include_documentation))

    def described(resource: DescribeConfigsResource) -> Any:
        code, entries = ErrorCode.NONE, []
        message: str | None = ""  # Kafka: "" when described
        try:
            keys = resource.configuration_keys
            if int(resource.resource_type) == broker_loggers.BROKER_LOGGER:
                broker_loggers.check_node(resource.resource_name, context.broker.node_id, altering=False)
                entries = [_logger(name, level) for name, level in broker_loggers.levels(keys)]
            else:
                target = resolve(context.broker, int(resource.resource_type), resource.resource_name,
                                 describing=True)
                entries = describe(context.broker, target, frozenset(keys) if keys else None)
        except (KafkaError, DomainError) as error:
            code, message = failure(error)
        return make(
            module.DescribeConfigsResult, error_code=code, error_message=message,
            resource_type=resource.resource_type, resource_name=resource.resource_name,
            configs=tuple(map(entry_of, entries)),
        )

    answer, slices = OnceAnswered(described), Slices(RESOURCES_PER_TURN)
    results, denied = [], []
    for resource in request.resources:  # asked again (as Kafka, answered again): the same bytes
        refused = config_refusal(context, int(resource.resource_type), resource.resource_name,
                                 AclOperation.DESCRIBE_CONFIGS)
        if refused is not None:  # answered after the others, as Kafka answers them
            denied.append(make(module.DescribeConfigsResult, error_code=refused[0], error_message=refused[1],
                               resource_type=resource.resource_type, resource_name=resource.resource_name,
                               configs=()))
            continue
        results.append(answer(resource))
        await slices.done()
    return make(module.DescribeConfigsResponse, throttle_time=datetime.timedelta(0), results=(*results, *denied))


RESOURCES_PER_TURN = 200
"""Resources described before the request gives way: each is every config key of a topic or group (2,000 groups
that need not exist, in a 17 KB request, held every client 313 ms and built a 15 MB answer; each config's entry
alike in many resources is now written once and shared)."""


def _logger(name: str, level: str) -> DescribedConfig:
    """A logger's entry as Kafka describes it: its effective level, no type, synonyms or documentation."""
    return DescribedConfig(name, level, ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG, False, False, (), 0, "")


def _entry(module: Any, entry: DescribedConfig, include_synonyms: bool, include_documentation: bool) -> Any:
    synonyms = tuple(
        make(module.DescribeConfigsSynonym, name=name, value=value, source=int(source))
        for name, value, source in entry.synonyms
    ) if include_synonyms else ()
    return make(
        module.DescribeConfigsResourceResult, name=entry.name, value=entry.value, read_only=entry.read_only,
        config_source=int(entry.source), is_sensitive=entry.sensitive, synonyms=synonyms,
        config_type=entry.config_type, documentation=entry.documentation if include_documentation or (
            entry.source == ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG) else None,  # Kafka: "" for a logger
    )


def _may_ask_documentation(request: DescribeConfigsRequest) -> TypeIs[
    v3.DescribeConfigsRequest | v4.DescribeConfigsRequest
]:
    """v3+ may ask for each config's documentation."""
    return has_field(request, "include_documentation")
