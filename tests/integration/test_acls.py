"""ACLs through confluent-kafka's AdminClient and kafka-python's KafkaAdminClient (DescribeAcls, CreateAcls,
DeleteAcls).

They run on a broker of the module's own with the StandardAuthorizer and ``allow.everyone.if.no.acl.found=true``
(a logwright process, or with ``--against kafka`` an Apache Kafka node): without an authorizer both brokers refuse
the three ACL keys with SECURITY_DISABLED, which the shared brokers show. Every test names its own resources, since
the module's broker keeps ACLs across tests.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
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
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import make
from logwright.testing.clients import one_request

from .broker_process import BrokerProcess
from .conftest import BENCH, against

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "allow.everyone.if.no.acl.found": "true"}


@pytest.fixture(scope="module")
def acl_bootstrap(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if against(request.config) != "kafka":
        process = BrokerProcess(tmp_path_factory.mktemp("logwright-acls") / "data", config=AUTHORIZER).start()
        try:
            yield process.bootstrap
        finally:
            process.kill()
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


def test_without_an_authorizer_every_acl_key_is_security_disabled(bootstrap: str) -> None:
    """As Kafka's AclApis without an authorizer: nothing is stored, described or deleted, each with Kafka's message,
    at every version (an ACL stored where nothing checks it would read as protecting the resource)."""
    binding = AclBinding(ResourceType.TOPIC, unique("acl-off"), ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.DENY)
    for version in (1, 2, 3):
        creations = importlib.import_module(f"kio.schema.create_acls.v{version}.request")
        creation = make(creations.AclCreation, resource_type=2, resource_name=binding.name, resource_pattern_type=3,
                        principal="User:alice", host="*", operation=3, permission_type=2)
        created = one_request(bootstrap, make(creations.CreateAclsRequest, creations=(creation, creation)), "acls")
        assert [(result.error_code, result.error_message) for result in created.results] == \
            [(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")] * 2
        described_ = describe_every_acl(bootstrap, version)
        assert (described_.error_code, described_.error_message, described_.resources) == \
            (ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker", ())
        deletions = importlib.import_module(f"kio.schema.delete_acls.v{version}.request")
        every_filter = make(deletions.DeleteAclsFilter, resource_type_filter=1, resource_name_filter=None,
                            pattern_type_filter=1, principal_filter=None, host_filter=None, operation=1,
                            permission_type=1)
        deleted = one_request(bootstrap, make(deletions.DeleteAclsRequest, filters=(every_filter,)), "acls")
        assert [(result.error_code, result.error_message, result.matching_acls)
                for result in deleted.filter_results] == \
            [(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.", ())]
    admin = confluent_admin(bootstrap)
    with pytest.raises(KafkaException) as refused:
        admin.create_acls([binding], request_timeout=30)[binding].result()
    assert refused.value.args[0].code() == KafkaError.SECURITY_DISABLED


def describe_every_acl(bootstrap: str, version: int) -> Any:
    """A DescribeAcls answer, raw: librdkafka's describe_acls reads SECURITY_DISABLED as no ACLs, on both brokers."""
    descriptions = importlib.import_module(f"kio.schema.describe_acls.v{version}.request")
    return one_request(bootstrap, make(
        descriptions.DescribeAclsRequest, resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
        principal_filter=None, host_filter=None, operation=1, permission_type=1), "acls")


@pytest.mark.logwright_only(reason="restarts a private broker and runs logwright check")
def test_acls_survive_a_restart_and_replay(tmp_path: Path) -> None:
    topic = unique("acl-restart")
    binding = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.PREFIXED, "User:alice", "*",
                         AclOperation.ALL, AclPermissionType.ALLOW)
    broker = BrokerProcess(tmp_path / "data", config=AUTHORIZER).start()
    try:
        admin = confluent_admin(broker.bootstrap)
        assert admin.create_acls([binding], request_timeout=30)[binding].result() is None
        del admin
        assert broker.stop() == 0, broker.log_tail()
        broker.config = {}  # the ACLs stay stored, and are refused to describe, as Kafka's metadata log keeps them
        broker.start()
        assert describe_every_acl(broker.bootstrap, 3).error_code == ErrorCode.SECURITY_DISABLED
        assert broker.stop() == 0, broker.log_tail()
        broker.config = dict(AUTHORIZER)
        broker.start()
        admin = confluent_admin(broker.bootstrap)
        assert described(admin, every(ResourceType.TOPIC, topic + "-x", ResourcePatternType.MATCH)) == {binding}
        del admin
        assert broker.stop() == 0, broker.log_tail()
    finally:
        broker.kill()
    check = subprocess.run([sys.executable, "-m", "logwright", "check", "--data-dir", str(broker.data_dir)],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
