"""ACLs through confluent-kafka's AdminClient and kafka-python's KafkaAdminClient (DescribeAcls, CreateAcls,
DeleteAcls).

With ``--against kafka`` these run on a private Apache Kafka node with the StandardAuthorizer and
``allow.everyone.if.no.acl.found=true`` (the shared node has no authorizer and answers SECURITY_DISABLED).
Every test names its own resources, since the shared logwright broker keeps ACLs across tests.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kafka.admin import ACL, ACLFilter, ACLOperation, ACLPermissionType, KafkaAdminClient, ResourcePattern
from kafka.admin import ResourceType as KafkaPythonResourceType
from kafka.errors import InvalidRequestError

from .broker_process import BrokerProcess
from .conftest import BENCH, against

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "allow.everyone.if.no.acl.found": "true"}


@pytest.fixture(scope="module")
def acl_bootstrap(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if against(request.config) != "kafka":
        yield request.getfixturevalue("shared_broker").bootstrap
        return
    sys.path.append(str(BENCH))
    from kafka_peer import KafkaPeer

    with KafkaPeer(tmp_path_factory.mktemp("kafka-acls"), config=AUTHORIZER) as kafka:
        yield kafka.bootstrap


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def confluent_admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def described(admin: AdminClient, acl_filter: AclBindingFilter) -> set[AclBinding]:
    return set(admin.describe_acls(acl_filter, request_timeout=30).result())


def settled(read: Callable[[], set[AclBinding]], expected: set[AclBinding], timeout_s: float = 30.0) -> set[AclBinding]:
    """Kafka applies ACLs through its metadata log, so a describe right after a change may not see it yet."""
    deadline = time.monotonic() + timeout_s
    while (value := read()) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    return value


def every(resource_type: ResourceType, name: str | None, pattern: ResourcePatternType) -> AclBindingFilter:
    return AclBindingFilter(resource_type, name, pattern, None, None, AclOperation.ANY, AclPermissionType.ANY)


@pytest.mark.differential
def test_confluent_create_match_and_delete_literal_and_prefixed(acl_bootstrap: str) -> None:
    admin = confluent_admin(acl_bootstrap)
    topic = unique("acl-orders")
    literal = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    prefixed = AclBinding(ResourceType.TOPIC, topic[:-4], ResourcePatternType.PREFIXED, "User:bob", "*",
                          AclOperation.WRITE, AclPermissionType.DENY)
    group = AclBinding(ResourceType.GROUP, topic, ResourcePatternType.LITERAL, "User:alice", "10.0.0.1",
                       AclOperation.READ, AclPermissionType.ALLOW)
    for future in admin.create_acls([literal, prefixed, group], request_timeout=30).values():
        assert future.result() is None
    assert admin.create_acls([literal], request_timeout=30)[literal].result() is None  # again: no error

    match = every(ResourceType.TOPIC, topic, ResourcePatternType.MATCH)
    assert settled(lambda: described(admin, match), {literal, prefixed}) == {literal, prefixed}
    assert described(admin, every(ResourceType.ANY, topic, ResourcePatternType.ANY)) == {literal, group}
    assert described(admin, every(ResourceType.TOPIC, topic, ResourcePatternType.PREFIXED)) == set()
    assert described(admin, AclBindingFilter(ResourceType.ANY, topic, ResourcePatternType.LITERAL, "User:alice",
                                             "10.0.0.1", AclOperation.ANY, AclPermissionType.ANY)) == {group}

    deletions = admin.delete_acls([every(ResourceType.ANY, topic, ResourcePatternType.LITERAL),
                                   every(ResourceType.TOPIC, topic, ResourcePatternType.MATCH)], request_timeout=30)
    removed = [set(future.result()) for future in deletions.values()]
    assert removed[0] == {literal, group}
    assert removed[1] in ({literal, prefixed}, {prefixed})  # Kafka may list a binding an earlier filter removed
    assert settled(lambda: described(admin, every(ResourceType.ANY, None, ResourcePatternType.ANY)) & {
        literal, prefixed, group}, set()) == set()


@pytest.mark.differential
def test_confluent_invalid_binding_is_invalid_request(acl_bootstrap: str) -> None:
    admin = confluent_admin(acl_bootstrap)
    bad = AclBinding(ResourceType.TOPIC, unique("acl-bad"), ResourcePatternType.LITERAL, "no-colon", "*",
                     AclOperation.READ, AclPermissionType.ALLOW)
    with pytest.raises(KafkaException) as raised:
        admin.create_acls([bad], request_timeout=30)[bad].result()
    assert raised.value.args[0].code() == InvalidRequestError.errno


@pytest.mark.differential
def test_kafka_python_admin_round_trip(acl_bootstrap: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=acl_bootstrap, request_timeout_ms=30000)
    try:
        topic = unique("acl-kp")
        pattern = ResourcePattern(KafkaPythonResourceType.TOPIC, topic)
        acl = ACL("User:test", "*", ACLOperation.READ, ACLPermissionType.ALLOW, pattern)
        bad = ACL("User:test", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                  ResourcePattern(KafkaPythonResourceType.CLUSTER, "not-the-cluster"))
        result = admin.create_acls([acl, bad])
        assert [created for created in result["succeeded"]] == [acl]
        assert result["failed"] == [InvalidRequestError]
        wanted = ACLFilter(None, "*", ACLOperation.ANY, ACLPermissionType.ANY, pattern)

        def found() -> Any:
            acls, error = admin.describe_acls(wanted)
            return error.errno, len(acls)

        deadline = time.monotonic() + 30
        while found() != (0, 1) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert found() == (0, 1)
        [(_filter, removed, error)] = admin.delete_acls([wanted])
        assert error.errno == 0
        assert [(found.principal, found.resource_pattern.resource_name) for found in removed] == [("User:test", topic)]
    finally:
        admin.close()


@pytest.mark.logwright_only(reason="restarts a private broker and runs logwright check")
def test_acls_survive_a_restart_and_replay(broker: BrokerProcess) -> None:
    topic = unique("acl-restart")
    binding = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.PREFIXED, "User:alice", "*",
                         AclOperation.ALL, AclPermissionType.ALLOW)
    admin = confluent_admin(broker.bootstrap)
    assert admin.create_acls([binding], request_timeout=30)[binding].result() is None
    del admin
    assert broker.stop() == 0, broker.log_tail()
    broker.start()
    admin = confluent_admin(broker.bootstrap)
    assert described(admin, every(ResourceType.TOPIC, topic + "-x", ResourcePatternType.MATCH)) == {binding}
    del admin
    assert broker.stop() == 0, broker.log_tail()
    check = subprocess.run([sys.executable, "-m", "logwright", "check", "--data-dir", str(broker.data_dir)],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
