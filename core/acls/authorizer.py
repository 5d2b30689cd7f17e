"""Whether a principal from a host may perform an operation on a resource: Kafka's ``StandardAuthorizer``.

The decision reads the stored bindings (`core.acls.bindings`) as Kafka 4.4's ``StandardAuthorizerData`` does:

- a super user (``super.users``, ``User:a;User:b``) may do anything, DENY bindings included;
- the bindings that apply to a resource are its literal name's, the literal wildcard ``*``'s and every PREFIXED
  pattern its name starts with, of the same resource type;
- one of them applies to a request when its principal is the request's or ``User:*``, its host the client's or
  ``*``, and its operation the one asked or ALL; an ALLOW of READ, WRITE, DELETE or ALTER also grants DESCRIBE, and
  one of ALTER_CONFIGS grants DESCRIBE_CONFIGS (a DENY implies nothing);
- a DENY that applies wins over any ALLOW; else an ALLOW that applies allows;
- a resource no binding names at all (whatever its principal or operation) is allowed only with
  ``allow.everyone.if.no.acl.found``; one that has bindings, none of them applying, is denied.

`Authorizer.authorize_any` is Kafka's ``authorizeByResourceType`` (KIP-679): whether some resource of a type
allows the operation, which an idempotent producer without IDEMPOTENT_WRITE on the cluster is asked.

Pure: it holds the bindings it was built from; `compat.authorization` builds a new one when ACLs change.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from logwright.core.acls.bindings import WILDCARD, AclBinding, AclOperation, AclPermissionType, PatternType

WILDCARD_PRINCIPAL = "User:*"

_IMPLIES_DESCRIBE = frozenset((AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                               AclOperation.ALTER, AclOperation.ALL))
_IMPLIES_DESCRIBE_CONFIGS = frozenset((AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS, AclOperation.ALL))


@dataclass(frozen=True, slots=True)
class AuthorizerSettings:
    """``super.users`` (full principals, ``User:admin``) and ``allow.everyone.if.no.acl.found``."""

    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False

    @classmethod
    def parse(cls, super_users: str, allow_everyone_if_no_acl_found: str) -> AuthorizerSettings:
        """From the config values: ``super.users`` is split on ``;`` as Kafka splits it."""
        users = frozenset(user.strip() for user in super_users.split(";") if user.strip())
        return cls(users, allow_everyone_if_no_acl_found.strip().lower() == "true")


def _grants(binding: AclBinding, operation: int) -> bool:
    """Whether ``binding``'s operation covers ``operation`` (implications only for ALLOW, as Kafka's)."""
    if binding.permission_type == AclPermissionType.ALLOW:
        if operation == AclOperation.DESCRIBE:
            return binding.operation in _IMPLIES_DESCRIBE
        if operation == AclOperation.DESCRIBE_CONFIGS:
            return binding.operation in _IMPLIES_DESCRIBE_CONFIGS
    return binding.operation in (operation, AclOperation.ALL)


class Authorizer:
    """The decisions over one set of bindings (indexed by resource type and name)."""

    def __init__(self, bindings: Iterable[AclBinding], settings: AuthorizerSettings) -> None:
        self.settings = settings
        self._literal: dict[tuple[int, str], list[AclBinding]] = {}
        self._prefixed: dict[tuple[int, str], list[AclBinding]] = {}
        self._by_type: dict[int, list[AclBinding]] = {}
        for binding in bindings:
            index = self._prefixed if binding.pattern_type == PatternType.PREFIXED else self._literal
            index.setdefault((binding.resource_type, binding.resource_name), []).append(binding)
            self._by_type.setdefault(binding.resource_type, []).append(binding)
        self._prefix_lengths: dict[int, tuple[int, ...]] = {}
        for resource_type, name in self._prefixed:
            self._prefix_lengths[resource_type] = (*self._prefix_lengths.get(resource_type, ()), len(name))
        for resource_type, lengths in self._prefix_lengths.items():
            self._prefix_lengths[resource_type] = tuple(sorted(set(lengths)))

    def is_super_user(self, principal: str) -> bool:
        return principal in self.settings.super_users

    def _applying(self, resource_type: int, name: str) -> list[AclBinding]:
        """Every binding whose pattern covers the resource: literal name, literal ``*``, prefixes of ``name``."""
        found = list(self._literal.get((resource_type, name), ()))
        if name != WILDCARD:
            found += self._literal.get((resource_type, WILDCARD), ())
        for length in self._prefix_lengths.get(resource_type, ()):
            if length > len(name):
                break
            found += self._prefixed.get((resource_type, name[:length]), ())
        return found

    def authorize(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool:
        """``principal`` (``Type:name``) from ``host`` may perform ``operation`` on the named resource."""
        if principal in self.settings.super_users:
            return True
        bindings = self._applying(resource_type, name)
        if not bindings:
            return self.settings.allow_everyone_if_no_acl_found
        allowed = False
        for binding in bindings:
            if (binding.principal not in (principal, WILDCARD_PRINCIPAL) or binding.host not in (host, WILDCARD)
                    or not _grants(binding, operation)):
                continue
            if binding.permission_type == AclPermissionType.DENY:
                return False
            allowed = True
        return allowed

    def authorize_any(self, principal: str, host: str, operation: int, resource_type: int) -> bool:
        """Kafka's ``authorizeByResourceType``: a super user, or the operation allowed on a resource named
        ``hardcode`` (so no binding and ``allow.everyone.if.no.acl.found`` allows), or an ALLOW of it (exactly, or
        ALL; no implication) on some pattern no DENY dominates (a literal DENY of the same name, a PREFIXED DENY
        of a prefix of it; a DENY of the literal wildcard denies every pattern)."""
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        denied: dict[int, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        allowed: list[AclBinding] = []
        for binding in self._by_type.get(resource_type, ()):
            if (binding.host not in (host, WILDCARD) or binding.principal not in (principal, WILDCARD_PRINCIPAL)
                    or binding.operation not in (operation, AclOperation.ALL)):
                continue
            if binding.permission_type == AclPermissionType.DENY:
                if binding.pattern_type == PatternType.LITERAL and binding.resource_name == WILDCARD:
                    return False
                denied[binding.pattern_type].add(binding.resource_name)
            elif binding.permission_type == AclPermissionType.ALLOW:
                if binding.pattern_type == PatternType.LITERAL and binding.resource_name == WILDCARD:
                    return True
                allowed.append(binding)
        for binding in allowed:
            name = binding.resource_name
            if binding.pattern_type == PatternType.LITERAL and name in denied[PatternType.LITERAL]:
                continue
            if not any(name[:length] in denied[PatternType.PREFIXED] for length in range(1, len(name) + 1)):
                return True
        return False

    def operations(self, principal: str, host: str, resource_type: int, name: str, supported: int) -> int:
        """The bits of ``supported`` (Kafka's authorized-operations field) this principal may perform on the
        resource, each decided as `authorize` decides it."""
        granted = 0
        for operation in AclOperation:
            bit = 1 << operation
            if supported & bit and self.authorize(principal, host, operation, resource_type, name):
                granted |= bit
        return granted
