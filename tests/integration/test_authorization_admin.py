"""ACLs enforced on the admin APIs (topics, configs, ACLs, quotas, log dirs, the cluster) and on producer ids, as
Kafka 4.4's StandardAuthorizer enforces them: differential.

As in test_authorization_topics: ``alice`` and ``bob`` (PLAIN, SASL listener) have what a test grants; the
PLAINTEXT listener's ``User:ANONYMOUS`` is the super user.
"""

from __future__ import annotations

import datetime
import time
from typing import Any

import pytest
from kio.schema.create_acls.v3 import request as create_acls_v3
from kio.schema.create_partitions.v3 import request as create_partitions_v3
from kio.schema.create_topics.v7 import request as create_topics_v7
from kio.schema.delete_records.v2 import request as delete_records_v2
from kio.schema.delete_topics.v6 import request as delete_topics_v6
from kio.schema.describe_acls.v3 import request as describe_acls_v3
from kio.schema.describe_client_quotas.v1 import request as describe_client_quotas_v1
from kio.schema.describe_cluster.v1 import request as describe_cluster_v1
from kio.schema.describe_configs.v4 import request as describe_configs_v4
from kio.schema.describe_log_dirs.v4 import request as describe_log_dirs_v4
from kio.schema.describe_user_scram_credentials.v0 import request as describe_scram_v0
from kio.schema.find_coordinator.v3 import request as find_coordinator_v3
from kio.schema.incremental_alter_configs.v1 import request as incremental_alter_configs_v1
from kio.schema.init_producer_id.v4 import request as init_producer_id_v4
from logwright.compat.registry import make

from .authorization_clients import (
    CLUSTER_AUTHORIZATION_FAILED,
    NONE,
    TOPIC_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    UNKNOWN_TOPIC_OR_PARTITION,
    ZERO_UUID,
    AclOperation,
    ResourcePatternType,
    ResourceType,
    asked,
    binding,
    bits,
    create_topic,
    grant,
    one,
    unique,
)
from .sasl_listeners import Listeners

pytestmark = pytest.mark.differential

TIMEOUT = datetime.timedelta(seconds=30)


def create_topics(*names: str) -> Any:
    return make(create_topics_v7.CreateTopicsRequest, timeout=TIMEOUT, validate_only=False, topics=tuple(
        make(create_topics_v7.CreatableTopic, name=name, num_partitions=1, replication_factor=1, assignments=(),
             configs=()) for name in names))


def delete_topics(*names: str) -> Any:
    return make(delete_topics_v6.DeleteTopicsRequest, timeout=TIMEOUT, topics=tuple(
        make(delete_topics_v6.DeleteTopicState, name=name, topic_id=ZERO_UUID) for name in names))


def create_partitions(name: str) -> Any:
    return make(create_partitions_v3.CreatePartitionsRequest, timeout=TIMEOUT, validate_only=True, topics=(
        make(create_partitions_v3.CreatePartitionsTopic, name=name, count=2, assignments=None),))


def delete_records(name: str) -> Any:
    return make(delete_records_v2.DeleteRecordsRequest, timeout=TIMEOUT, topics=(make(
        delete_records_v2.DeleteRecordsTopic, name=name, partitions=(make(
            delete_records_v2.DeleteRecordsPartition, partition_index=0, offset=0),)),))


def describe_configs(*resources: tuple[int, str]) -> Any:
    return make(describe_configs_v4.DescribeConfigsRequest, include_synonyms=False, include_documentation=False,
                resources=tuple(make(describe_configs_v4.DescribeConfigsResource, resource_type=kind,
                                     resource_name=name, configuration_keys=("retention.ms",) if kind == 2 else
                                     ("log.retention.ms",)) for kind, name in resources))


def alter_configs(*resources: tuple[int, str]) -> Any:
    return make(incremental_alter_configs_v1.IncrementalAlterConfigsRequest, validate_only=True, resources=tuple(
        make(incremental_alter_configs_v1.AlterConfigsResource, resource_type=kind, resource_name=name, configs=(
            make(incremental_alter_configs_v1.AlterableConfig, name="retention.ms" if kind == 2 else
                 "log.retention.ms", config_operation=0, value="100000"),)) for kind, name in resources))


DESCRIBE_ACLS = make(describe_acls_v3.DescribeAclsRequest, resource_type_filter=1, resource_name_filter=None,
                     pattern_type_filter=1, principal_filter=None, host_filter=None, operation=1, permission_type=1)
DESCRIBE_QUOTAS = make(describe_client_quotas_v1.DescribeClientQuotasRequest, components=(), strict=False)
DESCRIBE_LOG_DIRS = make(describe_log_dirs_v4.DescribeLogDirsRequest, topics=None)
DESCRIBE_SCRAM = make(describe_scram_v0.DescribeUserScramCredentialsRequest, users=())
"""Not ``users=None`` (every user): Kafka 4.4's error answer to that fails (a NullPointerException in its
``getErrorResponse``) and the request is never answered."""
DESCRIBE_CLUSTER = make(describe_cluster_v1.DescribeClusterRequest, include_cluster_authorized_operations=True,
                        endpoint_type=1)


def create_acl(topic: str) -> Any:
    return make(create_acls_v3.CreateAclsRequest, creations=(make(
        create_acls_v3.AclCreation, resource_type=2, resource_name=topic, resource_pattern_type=3,
        principal="User:alice", host="*", operation=3, permission_type=3),))


def init_producer_id(transactional_id: str | None) -> Any:
    return make(init_producer_id_v4.InitProducerIdRequest, transactional_id=transactional_id,
                transaction_timeout=datetime.timedelta(seconds=60), producer_id=-1, producer_epoch=-1)


def results(answer: Any, field: str) -> list[tuple[Any, ...]]:
    return [(entry.name if hasattr(entry, "name") else entry.resource_name, int(entry.error_code),
             getattr(entry, "error_message", None)) for entry in getattr(answer, field)]


def test_topic_admin_needs_its_acls(authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    prefix = unique("authz-admin")
    existing, denied, hidden, missing = (f"{prefix}-{name}" for name in ("existing", "denied", "hidden", "missing"))
    for topic in (existing, hidden):
        create_topic(plain, topic)
    grant(plain, binding(ResourceType.TOPIC, existing, "User:alice", AclOperation.DESCRIBE),
          binding(ResourceType.TOPIC, missing, "User:alice", AclOperation.DESCRIBE))
    answers = asked(sasl, "alice", [create_topics(denied), delete_topics(existing), delete_topics(hidden),
                                    delete_topics(missing), create_partitions(existing), delete_records(existing),
                                    describe_configs((2, existing)), alter_configs((2, existing))])
    assert results(answers[0], "topics") == [(denied, TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")]
    deleted = [[(r.name, int(r.error_code), r.topic_id not in (None, ZERO_UUID)) for r in answers[index].responses]
               for index in (1, 2, 3)]
    # no id is told; without DESCRIBE, not even whether the topic exists
    assert deleted == [[(existing, TOPIC_AUTHORIZATION_FAILED, False)], [(hidden, TOPIC_AUTHORIZATION_FAILED, False)],
                       [(missing, UNKNOWN_TOPIC_OR_PARTITION, False)]]
    assert results(answers[4], "results") == [(existing, TOPIC_AUTHORIZATION_FAILED, None)]
    assert [(t.name, int(p.error_code), int(p.low_watermark)) for t in answers[5].topics for p in t.partitions] == [
        (existing, TOPIC_AUTHORIZATION_FAILED, -1)]
    assert [(r.resource_name, int(r.error_code), r.error_message, len(r.configs)) for r in answers[6].results] == [
        (existing, TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.", 0)]
    assert results(answers[7], "responses") == [(existing, TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")]


def test_topic_admin_allowed_by_its_acls(authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    prefix = unique("authz-owner")
    created = f"{prefix}-created"
    grant(plain, binding(ResourceType.TOPIC, prefix, "User:bob", AclOperation.CREATE,
                         pattern=ResourcePatternType.PREFIXED),
          binding(ResourceType.TOPIC, prefix, "User:bob", AclOperation.ALTER_CONFIGS,
                  pattern=ResourcePatternType.PREFIXED),
          binding(ResourceType.TOPIC, prefix, "User:bob", AclOperation.DELETE,
                  pattern=ResourcePatternType.PREFIXED))
    made = one(sasl, "bob", create_topics(created)).topics
    # created; its configs are told only with DESCRIBE_CONFIGS, which ALTER_CONFIGS implies
    assert [(t.name, int(t.error_code), int(t.topic_config_error_code), int(t.num_partitions), len(t.configs) > 0)
            for t in made] == [(created, NONE, NONE, 1, True)]
    answers = asked(sasl, "bob", [describe_configs((2, created)), alter_configs((2, created)),
                                  delete_records(created), delete_topics(created)])
    assert [(r.resource_name, int(r.error_code)) for r in answers[0].results] == [(created, NONE)]
    assert [(r.resource_name, int(r.error_code)) for r in answers[1].responses] == [(created, NONE)]
    assert [(t.name, int(p.error_code)) for t in answers[2].topics for p in t.partitions] == [(created, NONE)]
    assert [(r.name, int(r.error_code)) for r in answers[3].responses] == [(created, NONE)]
    other = f"{prefix}-no-describe-configs"
    grant(plain, binding(ResourceType.TOPIC, other, "User:alice", AclOperation.CREATE))
    made = one(sasl, "alice", create_topics(other)).topics
    assert [(t.name, int(t.error_code), int(t.topic_config_error_code), len(t.configs)) for t in made] == [
        (other, NONE, TOPIC_AUTHORIZATION_FAILED, 0)]


def test_cluster_apis_need_the_cluster_acl(authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    topic = unique("authz-cluster")
    answers = asked(sasl, "alice", [DESCRIBE_ACLS, create_acl(topic), DESCRIBE_QUOTAS, DESCRIBE_LOG_DIRS,
                                    DESCRIBE_SCRAM, describe_configs((4, "1")), alter_configs((4, "")),
                                    DESCRIBE_CLUSTER])
    assert int(answers[0].error_code) == CLUSTER_AUTHORIZATION_FAILED
    assert [int(r.error_code) for r in answers[1].results] == [CLUSTER_AUTHORIZATION_FAILED]
    assert int(answers[2].error_code) == CLUSTER_AUTHORIZATION_FAILED
    assert int(answers[3].error_code) == CLUSTER_AUTHORIZATION_FAILED
    assert int(answers[4].error_code) == CLUSTER_AUTHORIZATION_FAILED
    assert [(int(r.error_code), r.error_message) for r in answers[5].results] == [
        (CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")]
    assert [(int(r.error_code), r.error_message) for r in answers[6].responses] == [
        (CLUSTER_AUTHORIZATION_FAILED, None)]  # Kafka 4.4 words the other config refusals, not this one
    assert (int(answers[7].error_code), int(answers[7].cluster_authorized_operations)) == (NONE, 0)
    grant(plain, binding(ResourceType.BROKER, "kafka-cluster", "User:alice", AclOperation.ALTER),
          binding(ResourceType.BROKER, "kafka-cluster", "User:alice", AclOperation.DESCRIBE_CONFIGS))
    answers = asked(sasl, "alice", [DESCRIBE_ACLS, create_acl(topic), DESCRIBE_QUOTAS, describe_configs((4, "1")),
                                    DESCRIBE_CLUSTER])
    assert int(answers[0].error_code) == NONE  # ALTER implies DESCRIBE
    assert [int(r.error_code) for r in answers[1].results] == [NONE]
    assert int(answers[2].error_code) == NONE
    assert [int(r.error_code) for r in answers[3].results] == [NONE]
    assert int(answers[4].cluster_authorized_operations) == bits(
        AclOperation.ALTER, AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS)


def test_producer_ids_need_write_somewhere_or_on_the_transactional_id(authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    prefix = unique("authz-producer")
    transactional_id = f"{prefix}-txn"
    answers = asked(sasl, "bob", [init_producer_id(None), init_producer_id(transactional_id)])
    assert [int(answer.error_code) for answer in answers] == [CLUSTER_AUTHORIZATION_FAILED,
                                                              TRANSACTIONAL_ID_AUTHORIZATION_FAILED]
    # WRITE on any topic (here a prefix no topic has yet) makes an idempotent producer (KIP-679)
    grant(plain, binding(ResourceType.TOPIC, prefix, "User:bob", AclOperation.WRITE,
                         pattern=ResourcePatternType.PREFIXED),
          binding(ResourceType.TRANSACTIONAL_ID, transactional_id, "User:bob", AclOperation.WRITE))
    answers = [_coordinated(sasl, init_producer_id(None)), _coordinated(sasl, init_producer_id(transactional_id))]
    assert [int(answer.error_code) for answer in answers] == [NONE, NONE]
    assert all(int(answer.producer_id) >= 0 for answer in answers)


def _coordinated(bootstrap: str, request: Any) -> Any:
    """Bob's answer, asked again while Kafka's transaction coordinator loads (its topic is made by the first
    FindCoordinator for a transactional id)."""
    if request.transactional_id is not None:
        found = one(bootstrap, "bob", make(find_coordinator_v3.FindCoordinatorRequest, key=request.transactional_id,
                                           key_type=1))
        assert int(found.error_code) in (NONE, 15)
    deadline = time.monotonic() + 30
    while True:
        answer = one(bootstrap, "bob", request)
        if int(answer.error_code) not in (14, 15, 16) or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)
