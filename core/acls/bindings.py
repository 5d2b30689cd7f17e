"""ACL bindings and filters as Kafka defines them (KIP-140, KIP-290), with the checks Kafka applies.

A binding grants or denies one operation on a resource pattern to a principal from a host. The enums
carry Kafka's wire ids, so a binding read back from the log means the same to every client. Filters
match bindings the way Kafka's ``ResourcePatternFilter`` and ``AccessControlEntryFilter`` do: ``ANY``
and a null string match everything, and a ``MATCH`` pattern filter finds every pattern that would
apply to the named resource (the literal name, the ``*`` wildcard and every prefix of it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum

from logwright.core.errors import InvalidRequest

WILDCARD = "*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


def _name(enum: type[IntEnum], value: int) -> str:
    try:
        return enum(value).name
    except ValueError:
        return f"UNKNOWN({value})"


def _known(enum: type[IntEnum], value: int) -> int:
    """Kafka reads an id it does not know as UNKNOWN (0)."""
    return value if value in enum._value2member_map_ else 0


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: ``principal`` (``Type:name``) from ``host`` may (ALLOW) or may not (DENY) do ``operation``
    on resources of ``resource_type`` named by ``resource_name`` under ``pattern_type`` (LITERAL or PREFIXED)."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    @property
    def key(self) -> str:
        """The binding's identity in the ``acls`` projection: equal bindings are one ACL."""
        return "\x1f".join((str(self.resource_type), str(self.pattern_type), self.resource_name, self.principal,
                            self.host, str(self.operation), str(self.permission_type)))

    def describe(self) -> str:
        return (f"{_name(AclPermissionType, self.permission_type)} {self.principal} from {self.host} "
                f"{_name(AclOperation, self.operation)} on {_name(ResourceType, self.resource_type)} "
                f"{_name(PatternType, self.pattern_type)} {self.resource_name!r}")


@dataclass(frozen=True, slots=True)
class AclFilter:
    """What DescribeAcls and DeleteAcls select by; ``None`` strings and ANY ids match every value."""

    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission_type: int

    def matches(self, binding: AclBinding) -> bool:
        return self._matches_pattern(binding) and self._matches_entry(binding)

    def _matches_pattern(self, binding: AclBinding) -> bool:
        if self.resource_type not in (ResourceType.ANY, binding.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, binding.pattern_type):
            return False
        if self.resource_name is None:
            return True
        if self.pattern_type in (PatternType.ANY, binding.pattern_type):
            return self.resource_name == binding.resource_name
        if binding.pattern_type == PatternType.LITERAL:
            return binding.resource_name in (self.resource_name, WILDCARD)
        return binding.pattern_type == PatternType.PREFIXED and self.resource_name.startswith(binding.resource_name)

    def _matches_entry(self, binding: AclBinding) -> bool:
        return ((self.principal is None or self.principal == binding.principal)
                and (self.host is None or self.host == binding.host)
                and self.operation in (AclOperation.ANY, binding.operation)
                and self.permission_type in (AclPermissionType.ANY, binding.permission_type))


def check_binding(binding: AclBinding) -> None:
    """Refuse what Kafka refuses to create, with INVALID_REQUEST and a message naming the field."""
    resource_type = _known(ResourceType, binding.resource_type)
    if resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise InvalidRequest(f"invalid resource type {_name(ResourceType, binding.resource_type)}: an ACL names "
                             f"one resource type (TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER)")
    if binding.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidRequest(f"invalid pattern type {_name(PatternType, binding.pattern_type)}: "
                             f"an ACL's pattern is LITERAL or PREFIXED")
    if _known(AclOperation, binding.operation) in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise InvalidRequest(f"invalid operation {_name(AclOperation, binding.operation)}: an ACL names one "
                             f"operation (or ALL)")
    if binding.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        raise InvalidRequest(f"invalid permission type {_name(AclPermissionType, binding.permission_type)}: "
                             f"an ACL is ALLOW or DENY")
    if not binding.resource_name:
        raise InvalidRequest("the resource name must not be empty")
    if resource_type == ResourceType.CLUSTER and binding.resource_name != CLUSTER_NAME:
        raise InvalidRequest(f"the only valid name for the CLUSTER resource is {CLUSTER_NAME!r}, "
                             f"not {binding.resource_name!r}")
    if ":" not in binding.principal:
        raise InvalidRequest(f"could not parse principal {binding.principal!r}: expected Type:name "
                             f"(such as User:alice), with a colon between the type and the name")


def check_filter(acl_filter: AclFilter) -> None:
    """Kafka refuses filters with an UNKNOWN element; everything else (ANY, MATCH, nulls) may select."""
    for label, enum, value in (("resource type", ResourceType, acl_filter.resource_type),
                               ("pattern type", PatternType, acl_filter.pattern_type),
                               ("operation", AclOperation, acl_filter.operation),
                               ("permission type", AclPermissionType, acl_filter.permission_type)):
        if _known(enum, value) == 0:
            raise InvalidRequest(f"the filter's {label} {_name(enum, value)} is unknown: use ANY to match every "
                                 f"{label}")


def select(bindings: Iterable[AclBinding], acl_filter: AclFilter) -> list[AclBinding]:
    """The bindings ``acl_filter`` matches, in a stable order (resource, then entry)."""
    return sorted((binding for binding in bindings if acl_filter.matches(binding)), key=lambda b: b.key)


def new_bindings(existing: Mapping[str, AclBinding], bindings: Iterable[AclBinding]) -> tuple[AclBinding, ...]:
    """The bindings not stored yet, each once: creating an existing ACL succeeds and changes nothing."""
    fresh: dict[str, AclBinding] = {}
    for binding in bindings:
        if binding.key not in existing:
            fresh.setdefault(binding.key, binding)
    return tuple(fresh.values())
