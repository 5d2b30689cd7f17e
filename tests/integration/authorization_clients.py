"""What the authorization tests share: requests sent as a SASL user (PLAIN, one connection), ACLs granted and
revoked through the super user's AdminClient, and the few request builders every test uses."""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from collections.abc import Iterable
from typing import Any

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kio.schema.create_acls.v3 import request as create_acls_v3
from kio.schema.describe_acls.v3 import request as describe_acls_v3
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.list_offsets.v7 import request as list_offsets_v7
from kio.schema.metadata.v12 import request as metadata_v12
from kio.schema.produce.v9 import request as produce_v9
from logwright.client.connection import ConnectionClosed
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record
from logwright.testing.clients import one_request

from .sasl_listeners import plain_login

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED = 29, 30, 31
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
ZERO_UUID = uuid.UUID(int=0)
UNKNOWN_OPERATIONS = -(2**31)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def asked(bootstrap: str, user: str, requests: list[Any]) -> list[Any]:
    """Each request's answer on one connection authenticated as ``user`` (PLAIN); "closed" where it closed."""

    async def run() -> list[Any]:
        connection = await plain_login(bootstrap, user, f"authorization-{user}")
        answers: list[Any] = []
        try:
            for request in requests:
                answers.append(await connection.request(request, timeout_s=15))
        except ConnectionClosed:
            answers.append("closed")
        finally:
            await connection.close()
        return answers

    return asyncio.run(run())


def one(bootstrap: str, user: str, request: Any) -> Any:
    return asked(bootstrap, user, [request])[0]


def admin(bootstrap: str) -> AdminClient:
    """The super user's admin client (the PLAINTEXT listener's User:ANONYMOUS)."""
    return AdminClient({"bootstrap.servers": bootstrap})


def binding(resource_type: ResourceType, name: str, principal: str, operation: AclOperation,
            permission: AclPermissionType = AclPermissionType.ALLOW,
            pattern: ResourcePatternType = ResourcePatternType.LITERAL, host: str = "*") -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


def grant(bootstrap: str, *bindings: AclBinding) -> None:
    """Create the ACLs and wait until the broker's authorizer answers with them (Kafka's brokers learn them from
    the metadata log a moment after the controller commits)."""
    client = admin(bootstrap)
    for future in client.create_acls(list(bindings)).values():
        future.result(timeout=30)
    _await_acls(client, bindings, present=True)


def revoke(bootstrap: str, *bindings: AclBinding) -> None:
    client = admin(bootstrap)
    filters = [AclBindingFilter(b.restype, b.name, b.resource_pattern_type, b.principal, b.host, b.operation,
                                b.permission_type) for b in bindings]
    for future in client.delete_acls(filters).values():
        future.result(timeout=30)
    _await_acls(client, bindings, present=False)


def _await_acls(client: AdminClient, bindings: Iterable[AclBinding], present: bool) -> None:
    deadline = time.monotonic() + 30
    for each in bindings:
        acl_filter = AclBindingFilter(each.restype, each.name, each.resource_pattern_type, each.principal,
                                      each.host, each.operation, each.permission_type)
        while bool(client.describe_acls(acl_filter).result(timeout=30)) != present:
            assert time.monotonic() < deadline, f"ACL {each} never became {'present' if present else 'absent'}"
            time.sleep(0.05)
    time.sleep(0.2)  # Kafka's brokers apply the metadata log's records in order; the describe saw them applied


def grant_ids(bootstrap: str, resource_type: int, name: str, principal: str, operation: int) -> None:
    """A literal ALLOW ACL by Kafka's ids, for what confluent-kafka's AdminClient cannot name (USER resources,
    CREATE_TOKENS), created and awaited with raw CreateAcls and DescribeAcls as the super user."""
    creation = make(create_acls_v3.CreateAclsRequest, creations=(make(
        create_acls_v3.AclCreation, resource_type=resource_type, resource_name=name, resource_pattern_type=3,
        principal=principal, host="*", operation=operation, permission_type=3),))
    assert [int(result.error_code) for result in one_request(bootstrap, creation).results] == [NONE]
    describe = make(describe_acls_v3.DescribeAclsRequest, resource_type_filter=resource_type,
                    resource_name_filter=name, pattern_type_filter=3, principal_filter=principal, host_filter="*",
                    operation=operation, permission_type=3)
    deadline = time.monotonic() + 30
    while not one_request(bootstrap, describe).resources:
        assert time.monotonic() < deadline, "the ACL never appeared"
        time.sleep(0.05)
    time.sleep(0.2)


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    client = admin(bootstrap)  # kept while its futures are waited on: a destroyed client fails them
    for future in client.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(timeout=30)


def produce(topic: str, transactional_id: str | None = None) -> Any:
    batch = build_batch([Record(0, int(time.time() * 1000), None, b"value")])
    return make(produce_v9.ProduceRequest, transactional_id=transactional_id, acks=-1,
                timeout=datetime.timedelta(seconds=10), topic_data=(make(produce_v9.TopicProduceData, name=topic,
                partition_data=(make(produce_v9.PartitionProduceData, index=0, records=batch),)),))


def produced(answer: Any) -> list[tuple[str, int]]:
    return [(topic.name, int(partition.error_code)) for topic in answer.responses
            for partition in topic.partition_responses]


def fetch(*topics: str) -> Any:
    return make(fetch_v12.FetchRequest, cluster_id=None, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0,
                max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1, topics=tuple(
                    make(fetch_v12.FetchTopic, topic=topic, partitions=(make(
                        fetch_v12.FetchPartition, partition=0, current_leader_epoch=-1, fetch_offset=0,
                        last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=1 << 20),))
                    for topic in topics), forgotten_topics_data=(), rack_id="")


def fetched(answer: Any) -> list[tuple[str, int]]:
    return [(topic.topic, int(partition.error_code)) for topic in answer.responses for partition in topic.partitions]


def list_offsets(*topics: str) -> Any:
    return make(list_offsets_v7.ListOffsetsRequest, replica_id=-1, isolation_level=0, topics=tuple(
        make(list_offsets_v7.ListOffsetsTopic, name=topic, partitions=(make(
            list_offsets_v7.ListOffsetsPartition, partition_index=0, current_leader_epoch=-1, timestamp=-1),))
        for topic in topics))


def listed_offsets(answer: Any) -> list[tuple[str, int, int]]:
    return [(topic.name, int(partition.error_code), int(partition.offset)) for topic in answer.topics
            for partition in topic.partitions]


def metadata(*topics: str | None, operations: bool = False, create: bool = False) -> Any:
    return make(metadata_v12.MetadataRequest, topics=None if topics == (None,) else tuple(
        make(metadata_v12.MetadataRequestTopic, topic_id=ZERO_UUID, name=topic) for topic in topics),
        allow_auto_topic_creation=create, include_topic_authorized_operations=operations)


def described_topics(answer: Any) -> list[tuple[str | None, int, bool, int]]:
    """Each topic's name, error, whether its id is told, and its authorized operations."""
    return [(topic.name, int(topic.error_code), topic.topic_id not in (None, ZERO_UUID),
             int(topic.topic_authorized_operations))
            for topic in answer.topics]


def bits(*operations: AclOperation) -> int:
    """An authorized-operations field: Kafka's AclOperation ids as bits."""
    ids = {AclOperation.READ: 3, AclOperation.WRITE: 4, AclOperation.CREATE: 5, AclOperation.DELETE: 6,
           AclOperation.ALTER: 7, AclOperation.DESCRIBE: 8, AclOperation.CLUSTER_ACTION: 9,
           AclOperation.DESCRIBE_CONFIGS: 10, AclOperation.ALTER_CONFIGS: 11, AclOperation.IDEMPOTENT_WRITE: 12}
    return sum(1 << ids[operation] for operation in operations)


__all__ = ["AclOperation", "AclPermissionType", "ResourcePatternType", "ResourceType"]
