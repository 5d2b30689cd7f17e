"""Config resources on the wire, shared by DescribeConfigs, AlterConfigs, IncrementalAlterConfigs and CreateTopics.

Kafka numbers resource types (TOPIC 2, BROKER 4, CLIENT_METRICS 16, GROUP 32), config sources and value types;
this module maps them onto the catalog's resources and overrides, and says where each effective value comes from:
a topic or group override, a per-broker or cluster-wide dynamic broker override, a ``--config`` given on
the command line (static), or the registry's default. Precedence is Kafka's, in that order.

A GROUP change of ``logwright.subscription.mode`` is refused with INVALID_CONFIG while the share group
has members (`core.share_groups.check_mode_change`); setting the value it already has is accepted. A CLIENT_METRICS
resource (a client-metrics subscription, `core.config.client_metrics`) is checked in Kafka's words and stored with
its lists normalized; any name describes, with the defaults until it is set.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from logwright.compat.authorization import allowed
from logwright.compat.broker import Broker
from logwright.compat.broker_loggers import BROKER_LOGGER, check_node
from logwright.compat.errors import ErrorCode, KafkaError, error_code_for
from logwright.compat.registry import RequestContext, has_field, make
from logwright.compat.topic_regex import JavaPatternCheck
from logwright.compat.turns import give_way
from logwright.core.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from logwright.core.config import client_metrics
from logwright.core.config.config_changes import AlterOp
from logwright.core.config.configs import ConfigKey, ConfigRegistry
from logwright.core.config.group_bounds import GROUP_BOUNDS
from logwright.core.config.topic_synonyms import BROKER_KEY_FAMILIES, TOPIC_BROKER_SYNONYMS, topic_default
from logwright.core.cursors.subscription_mode import DEFAULT_MODE, SUBSCRIPTION_MODE_KEY
from logwright.core.errors import DomainError, ThrottlingQuotaExceeded
from logwright.core.events import ConfigChanged
from logwright.core.log.catalog import ResourceConfig, resource_key, validate_topic_name
from logwright.core.share_groups.share_groups import ShareGroupState, check_mode_change

RESOURCE_KINDS = {2: "topic", 4: "broker", 16: client_metrics.KIND, 32: "group"}


class ConfigSource(IntEnum):
    """``DescribeConfigsResponse`` config sources, numbered as Kafka's."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    DYNAMIC_GROUP_CONFIG = 8


CONFIG_TYPES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7, "CLASS": 8,
                "PASSWORD": 9}
"""`ConfigKey.value_type` names to DescribeConfigs v3+ ``config_type`` ids (0 is UNKNOWN)."""

_OVERRIDE_SOURCE = {"topic": ConfigSource.DYNAMIC_TOPIC_CONFIG, "group": ConfigSource.DYNAMIC_GROUP_CONFIG,
                    "broker": ConfigSource.DYNAMIC_BROKER_CONFIG,
                    client_metrics.KIND: ConfigSource.CLIENT_METRICS_CONFIG}



@dataclass(frozen=True, slots=True)
class Resource:
    """A configurable resource: ``kind`` is the catalog's resource type; a broker's name is "1" or ""."""

    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class DescribedConfig:
    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    synonyms: tuple[tuple[str, str | None, ConfigSource], ...]
    config_type: int
    documentation: str


def failure(error: Exception) -> tuple[ErrorCode, str | None]:
    """The code and the user-facing message of a refused request part (none for a controller mutation quota's
    refusal: Kafka 4.4 answers it without one)."""
    if isinstance(error, KafkaError):
        return error.code, error.message
    if isinstance(error, ThrottlingQuotaExceeded):
        return error_code_for(error), None
    return error_code_for(error), str(error)


def resolve(broker: Broker, resource_type: int, name: str, describing: bool = False) -> Resource:
    """The resource a request names; raises `KafkaError` or a `DomainError` saying why it cannot be used."""
    kind = RESOURCE_KINDS.get(resource_type)
    if kind is None:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"resource type {resource_type} has no configs here; "
                                                    f"logwright configures TOPIC (2), BROKER (4), CLIENT_METRICS "
                                                    f"(16) and GROUP (32)")
    if kind == client_metrics.KIND:
        client_metrics.check_name(name, describing)
    if kind == "topic":
        validate_topic_name(name)
        if broker.topic(name) is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
    elif kind == "broker" and name not in ("", str(broker.node_id)):
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"a BROKER resource is named by this broker's id "
                                                    f"({broker.node_id}) or '' for the cluster-wide default, "
                                                    f"not {name!r}")
    elif kind == "group" and not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "a GROUP resource needs a group name")
    return Resource(kind, name)


def overrides(broker: Broker, resource: Resource) -> dict[str, str]:
    """The resource's stored overrides (a group need not exist to have them)."""
    if resource.kind == "topic":
        topic = broker.topic(resource.name)
        return dict(topic.configs) if topic is not None else {}
    stored = broker.store.state("catalog", resource_key(resource.kind, resource.name))
    return dict(stored.overrides) if isinstance(stored, ResourceConfig) else {}


def _layers(broker: Broker, resource: Resource, own: Mapping[str, str]) -> list[tuple[ConfigSource, Mapping[str, str]]]:
    if resource.kind != "broker":
        return [(_OVERRIDE_SOURCE[resource.kind], own)]
    if resource.name == "":
        return [(ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, own)]
    cluster_default = overrides(broker, Resource("broker", ""))
    return [(ConfigSource.DYNAMIC_BROKER_CONFIG, own), (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, cluster_default),
            (ConfigSource.STATIC_BROKER_CONFIG, broker.settings.overrides)]


def describe(
    broker: Broker, resource: Resource, keys: Collection[str] | None = None, own: Mapping[str, str] | None = None
) -> list[DescribedConfig]:
    """Every known key of the resource (or those in ``keys``) with its value, source and synonyms.

    ``own`` replaces the stored overrides (CreateTopics describes a topic it has not created yet). The
    cluster-wide broker default ("") lists only what is set there, as Kafka does; every other resource
    lists all keys, defaults included. Sensitive values are never returned.
    """
    layers = _layers(broker, resource, overrides(broker, resource) if own is None else own)
    cluster_default = resource == Resource("broker", "")
    described = []
    for key in broker.configs.known(resource.kind):
        if keys and key.name not in keys:
            continue
        chain: list[tuple[ConfigSource, str | None]] = [
            (source, values[key.name]) for source, values in layers if key.name in values
        ]
        if not cluster_default:
            chain.append((ConfigSource.DEFAULT_CONFIG, key.default))
        if not chain:
            continue
        synonyms = tuple((key.name, None if key.sensitive else value, source) for source, value in chain
                         if source != ConfigSource.DEFAULT_CONFIG or resource.kind != client_metrics.KIND)
        if resource.kind == "topic" and key.name in TOPIC_BROKER_SYNONYMS:
            names = [synonym.name for synonym in TOPIC_BROKER_SYNONYMS[key.name]]
            default = None if len(synonyms) > 1 else (
                topic_default(key.name, lambda name: _broker_value(broker, name)) or key.default)
            described.append(_with_broker_default(broker, key, synonyms[:-1], names, default))
            continue
        bound = GROUP_BOUNDS.get(key.name) if resource.kind == "group" else None
        if bound is not None and broker.configs.get("broker", bound.broker_key) is not None:
            described.append(_with_broker_default(broker, key, synonyms[:-1], [bound.broker_key],
                                                  broker.broker_config(bound.broker_key)))
            continue
        if resource.kind == "broker" and not cluster_default:
            described.append(_broker_key(broker, key, layers))
            continue
        described.append(DescribedConfig(
            key.name, None if key.sensitive else chain[0][1], chain[0][0], key.read_only, key.sensitive, synonyms,
            CONFIG_TYPES.get(key.value_type, 0), key.doc,
        ))
    return described


def _broker_key(broker: Broker, key: ConfigKey, layers: list[tuple[ConfigSource, Mapping[str, str]]]
                ) -> DescribedConfig:
    """A broker key as Kafka describes it: the synonyms are its family's keys (``log.roll.ms``, ``log.roll.hours``;
    most keys are alone) set per broker, cluster-wide, statically and by default (a key without a default is not
    listed there), from the first naming the key itself; its value is its own, its source the first synonym's."""
    family = BROKER_KEY_FAMILIES.get(key.name, (key.name,))
    defaults = {name: info.default for name in family
                if (info := broker.configs.get("broker", name)) is not None and info.default is not None}
    chain = [(name, None if key.sensitive else values[name], source)
             for source, values in (*layers, (ConfigSource.DEFAULT_CONFIG, defaults)) for name in family
             if name in values]
    while chain and chain[0][0] != key.name:
        chain.pop(0)
    value = chain[0][1] if chain else (None if key.sensitive else key.default)
    source = chain[0][2] if chain else ConfigSource.DEFAULT_CONFIG
    return DescribedConfig(key.name, value, source, key.read_only, key.sensitive, tuple(chain),
                           CONFIG_TYPES.get(key.value_type, 0), key.doc)


def _with_broker_default(broker: Broker, key: ConfigKey, own: tuple[tuple[str, str | None, ConfigSource], ...],
                         names: list[str], default: str | None) -> DescribedConfig:
    """A topic or group key whose default is the broker's (``names``, highest precedence first:
    `TOPIC_BROKER_SYNONYMS`, `GROUP_BOUNDS`), described as Kafka does: the value is the effective one (the
    resource's override, else ``default``: the broker keys resolved in their order), the synonyms the override
    then the broker keys set per broker, cluster-wide, statically and by default, in that order, from the first
    naming the highest-precedence broker key (Kafka drops those before it, so a broker started with only
    ``log.retention.minutes`` shows ``retention.ms`` as DEFAULT_CONFIG without synonyms, and with nothing set
    ``segment.ms`` has none either: ``log.roll.ms`` has no default)."""
    layers = [(ConfigSource.DYNAMIC_BROKER_CONFIG, overrides(broker, Resource("broker", str(broker.node_id)))),
              (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, overrides(broker, Resource("broker", ""))),
              (ConfigSource.STATIC_BROKER_CONFIG, broker.settings.overrides),
              (ConfigSource.DEFAULT_CONFIG, {broker_name: info.default for broker_name in names
                                             if (info := broker.configs.get("broker", broker_name)) is not None
                                             and info.default is not None})]
    chain = [(broker_name, values[broker_name], source) for source, values in layers for broker_name in names
             if broker_name in values]
    while chain and chain[0][0] != names[0]:
        chain.pop(0)
    value = own[0][1] if own else default
    synonyms = (*own, *chain)
    source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
    return DescribedConfig(key.name, value, source, key.read_only, key.sensitive, synonyms,
                           CONFIG_TYPES.get(key.value_type, 0), key.doc)


def _broker_value(broker: Broker, name: str) -> str | None:
    try:
        return broker.broker_config(name)
    except KeyError:
        return None


Decide = Callable[[ConfigRegistry, str, str, Mapping[str, str], Any], ConfigChanged | None]
RESOURCES_PER_TURN = 250
"""Resources decided before the handler yields to the event loop (1,000 took ~40 ms): each is staged on its own."""


_CONFIG_ACL = {2: (ResourceType.TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
               32: (ResourceType.GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")}
_CLUSTER_CONFIG_ACL = (ResourceType.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")


def config_refusal(context: RequestContext | None, resource_type: int, name: str, operation: AclOperation
                   ) -> tuple[ErrorCode, str | None] | None:
    """Why the principal may not describe (DESCRIBE_CONFIGS) or alter (ALTER_CONFIGS) a resource's configs, as
    Kafka answers it: a topic's or group's ACL, the cluster's for brokers, loggers and client metrics. ``None``:
    allowed, a type with no ACL of its own (refused as it is without an authorizer), or no authorizer."""
    if context is None or context.broker.authorizer is None:
        return None
    acl_type, code, message = _CONFIG_ACL.get(resource_type, _CLUSTER_CONFIG_ACL)
    if acl_type == ResourceType.CLUSTER:
        if resource_type not in (4, 8, 16):
            return None
        name = CLUSTER_NAME
    if allowed(context, operation, acl_type, name):
        return None
    # Kafka 4.4 words every refusal but an alteration of the cluster's configs
    return code, None if acl_type == ResourceType.CLUSTER and operation == AclOperation.ALTER_CONFIGS else message


async def alter_resources(
    broker: Broker, resources: Sequence[Any], validate_only: bool, decide: Decide,
    alter_loggers: Callable[[Any, bool], None] | None = None, context: RequestContext | None = None,
) -> list[tuple[Any, ErrorCode, str | None]]:
    """Decide each resource's `ConfigChanged` with ``decide(registry, kind, name, overrides, resource)``.

    Stages the events (unless ``validate_only``) and returns once they are durable, with each request
    resource and its outcome. A resource named twice in one request is refused, as Kafka does. A BROKER_LOGGER
    resource goes to ``alter_loggers(resource, validate_only)`` when given (`broker_loggers`: no event). With an
    authorizer, one the ``context``'s principal may not ALTER_CONFIGS is refused before anything else is checked.
    """
    names = [(int(resource.resource_type), resource.resource_name) for resource in resources]
    patterns = JavaPatternCheck()  # client-metrics match patterns: one budget for the request
    times_named = Counter(names)  # not names.count per resource: 10,000 resources held the loop 1.6-3.4 s
    outcomes: list[tuple[Any, ErrorCode, str | None]] = []
    staged = False
    for position, (resource, name) in enumerate(zip(resources, names, strict=True)):
        if position and position % RESOURCES_PER_TURN == 0:
            await give_way()
        try:
            if times_named[name] > 1:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"resource {name[1]!r} of type {name[0]} appears "
                                                            f"{times_named[name]} times in the request")
            refused = config_refusal(context, name[0], name[1], AclOperation.ALTER_CONFIGS)
            if refused is not None:
                outcomes.append((resource, *refused))
                continue
            if alter_loggers is not None and name[0] == BROKER_LOGGER:
                check_node(name[1], broker.node_id, altering=True)
                alter_loggers(resource, validate_only)
                outcomes.append((resource, ErrorCode.NONE, None))
                continue
            target = resolve(broker, *name)
            current = overrides(broker, target)
            if target.kind == client_metrics.KIND:
                resource = _client_metrics_checked(resource, patterns)
            event = decide(broker.configs, target.kind, target.name, current, resource)
            if target.kind == "group" and event is not None:
                _check_group_change(broker, target.name, current, event)
                after = {**current, **dict(event.changes)}
                broker.coordinators.share_groups.check_config_change(
                    target.name, {k: v for k, v in after.items() if v is not None},
                    tuple(name for name, _ in event.changes))
        except (KafkaError, DomainError) as error:
            outcomes.append((resource, *failure(error)))
            continue
        if event is not None and not validate_only:
            broker.stage([event])
            staged = True
        outcomes.append((resource, ErrorCode.NONE, None))
    if staged:
        await broker.durable()
    return outcomes


def _client_metrics_checked(resource: Any, patterns: JavaPatternCheck) -> Any:
    """A CLIENT_METRICS resource of AlterConfigs or IncrementalAlterConfigs checked as Kafka checks it, its values as
    they are stored (`client_metrics.checked_value`), for the request's own decision to turn into an event."""
    entries = []
    for entry in resource.configs:
        operation = int(entry.config_operation) if has_field(entry, "config_operation") else None
        try:
            op_name = None if operation is None else AlterOp(operation).name
        except ValueError:
            entries.append(entry)  # the decision refuses it, as any resource's
            continue
        value = client_metrics.checked_value(entry.name, op_name, entry.value, patterns)
        entries.append(entry if value is None else dataclasses.replace(entry, value=value))
    return dataclasses.replace(resource, configs=tuple(entries))


def _check_group_change(broker: Broker, group_id: str, current: Mapping[str, str], event: ConfigChanged) -> None:
    """Refuse a subscription mode change of a share group that has members (`check_mode_change`)."""
    changes = dict(event.changes)
    key = broker.configs.get("group", SUBSCRIPTION_MODE_KEY)
    if SUBSCRIPTION_MODE_KEY not in changes or key is None:
        return
    default = key.default or DEFAULT_MODE
    group = broker.store.state("share_groups", group_id)
    check_mode_change(group if isinstance(group, ShareGroupState) else None, group_id,
                      current.get(SUBSCRIPTION_MODE_KEY, default), changes[SUBSCRIPTION_MODE_KEY] or default)


def alter_response(module: Any, response_class: type[Any], outcomes: list[tuple[Any, ErrorCode, str | None]]) -> Any:
    """The AlterConfigs or IncrementalAlterConfigs response (their per-resource entries are alike)."""
    return make(
        response_class, throttle_time=datetime.timedelta(0),
        responses=tuple(
            make(module.AlterConfigsResourceResponse, error_code=code, error_message=message,
                 resource_type=resource.resource_type, resource_name=resource.resource_name)
            for resource, code, message in outcomes
        ),
    )
