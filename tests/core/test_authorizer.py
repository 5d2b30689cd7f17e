"""The StandardAuthorizer's decisions over stored bindings (pure: no broker)."""

from __future__ import annotations

from logwright.core.acls.authorizer import Authorizer, AuthorizerSettings
from logwright.core.acls.bindings import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALICE = "User:alice"


def acl(name: str, operation: AclOperation, permission: AclPermissionType = ALLOW, principal: str = ALICE,
        pattern: PatternType = LITERAL, resource_type: ResourceType = TOPIC, host: str = "*") -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


def authorizer(*bindings: AclBinding, super_users: str = "", allow_if_none: str = "false") -> Authorizer:
    return Authorizer(bindings, AuthorizerSettings.parse(super_users, allow_if_none))


def test_a_resource_without_acls_follows_allow_everyone_if_no_acl_found() -> None:
    assert not authorizer().authorize(ALICE, "10.0.0.1", AclOperation.READ, TOPIC, "orders")
    assert authorizer(allow_if_none="true").authorize(ALICE, "10.0.0.1", AclOperation.READ, TOPIC, "orders")
    # any binding naming the resource, whoever it is for, takes the default away
    bobs = authorizer(acl("orders", AclOperation.READ, principal="User:bob"), allow_if_none="true")
    assert not bobs.authorize(ALICE, "10.0.0.1", AclOperation.READ, TOPIC, "orders")
    assert bobs.authorize(ALICE, "10.0.0.1", AclOperation.READ, TOPIC, "payments")


def test_super_users_may_do_anything_even_when_denied() -> None:
    denied = authorizer(acl("orders", AclOperation.ALL, DENY, principal="User:admin"),
                        super_users=" User:admin ; User:ops")
    assert denied.authorize("User:admin", "h", AclOperation.DELETE, TOPIC, "orders")
    assert denied.authorize("User:ops", "h", AclOperation.ALTER, CLUSTER, "kafka-cluster")
    assert not denied.authorize(ALICE, "h", AclOperation.READ, TOPIC, "orders")


def test_literal_wildcard_and_prefixed_patterns_apply() -> None:
    chosen = authorizer(acl("orders", AclOperation.READ), acl("*", AclOperation.WRITE),
                        acl("pay", AclOperation.DELETE, pattern=PREFIXED))
    assert chosen.authorize(ALICE, "h", AclOperation.READ, TOPIC, "orders")
    assert not chosen.authorize(ALICE, "h", AclOperation.READ, TOPIC, "orders2")
    assert chosen.authorize(ALICE, "h", AclOperation.WRITE, TOPIC, "anything")
    assert chosen.authorize(ALICE, "h", AclOperation.DELETE, TOPIC, "payments")
    assert chosen.authorize(ALICE, "h", AclOperation.DELETE, TOPIC, "pay")
    assert not chosen.authorize(ALICE, "h", AclOperation.DELETE, TOPIC, "pa")
    assert not chosen.authorize(ALICE, "h", AclOperation.READ, GROUP, "orders")  # another resource type


def test_implied_operations_come_from_allows_only() -> None:
    allowed = authorizer(acl("orders", AclOperation.WRITE), acl("audit", AclOperation.ALTER_CONFIGS))
    assert allowed.authorize(ALICE, "h", AclOperation.DESCRIBE, TOPIC, "orders")
    assert not allowed.authorize(ALICE, "h", AclOperation.READ, TOPIC, "orders")
    assert allowed.authorize(ALICE, "h", AclOperation.DESCRIBE_CONFIGS, TOPIC, "audit")
    assert not allowed.authorize(ALICE, "h", AclOperation.DESCRIBE, TOPIC, "audit")
    denied_read = authorizer(acl("orders", AclOperation.ALL), acl("orders", AclOperation.READ, DENY))
    assert not denied_read.authorize(ALICE, "h", AclOperation.READ, TOPIC, "orders")
    assert denied_read.authorize(ALICE, "h", AclOperation.DESCRIBE, TOPIC, "orders")  # a DENY implies nothing


def test_deny_wins_and_principal_and_host_must_match() -> None:
    chosen = authorizer(acl("orders", AclOperation.READ, principal="User:*"),
                        acl("ord", AclOperation.READ, DENY, principal="User:*", pattern=PREFIXED, host="10.0.0.9"),
                        acl("orders", AclOperation.WRITE, host="10.0.0.1"))
    assert chosen.authorize("User:bob", "10.0.0.1", AclOperation.READ, TOPIC, "orders")
    assert not chosen.authorize("User:bob", "10.0.0.9", AclOperation.READ, TOPIC, "orders")
    assert chosen.authorize(ALICE, "10.0.0.1", AclOperation.WRITE, TOPIC, "orders")
    assert not chosen.authorize(ALICE, "10.0.0.2", AclOperation.WRITE, TOPIC, "orders")
    assert not chosen.authorize("Group:alice", "10.0.0.1", AclOperation.WRITE, TOPIC, "orders")


def test_authorize_any_is_kafkas_authorize_by_resource_type() -> None:
    """KIP-679: an idempotent producer needs WRITE on some topic no DENY covers."""
    assert not authorizer().authorize_any(ALICE, "h", AclOperation.WRITE, TOPIC)
    assert authorizer(allow_if_none="true").authorize_any(ALICE, "h", AclOperation.WRITE, TOPIC)
    assert authorizer(acl("orders", AclOperation.WRITE)).authorize_any(ALICE, "h", AclOperation.WRITE, TOPIC)
    assert authorizer(acl("ord", AclOperation.ALL, pattern=PREFIXED)).authorize_any(
        ALICE, "h", AclOperation.WRITE, TOPIC)
    # WRITE implies nothing here, and READ is not WRITE
    assert not authorizer(acl("orders", AclOperation.READ)).authorize_any(ALICE, "h", AclOperation.WRITE, TOPIC)
    # dominated: a literal DENY of the same name, a prefixed DENY of a prefix, a DENY of the wildcard
    for deny in (acl("orders", AclOperation.WRITE, DENY), acl("or", AclOperation.WRITE, DENY, pattern=PREFIXED),
                 acl("*", AclOperation.WRITE, DENY)):
        assert not authorizer(acl("orders", AclOperation.WRITE), deny).authorize_any(
            ALICE, "h", AclOperation.WRITE, TOPIC)
    # a DENY of another name leaves the allowed one
    assert authorizer(acl("orders", AclOperation.WRITE), acl("audit", AclOperation.WRITE, DENY)).authorize_any(
        ALICE, "h", AclOperation.WRITE, TOPIC)
    assert authorizer(super_users="User:alice").authorize_any(ALICE, "h", AclOperation.WRITE, TOPIC)


def test_operations_are_the_bits_of_the_allowed_ones() -> None:
    supported = sum(1 << op for op in (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE))
    granted = authorizer(acl("orders", AclOperation.READ)).operations(ALICE, "h", TOPIC, "orders", supported)
    assert granted == (1 << AclOperation.READ) | (1 << AclOperation.DESCRIBE)
    assert authorizer(super_users=ALICE).operations(ALICE, "h", TOPIC, "x", supported) == supported
