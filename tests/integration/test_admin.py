"""Admin APIs through real clients: kafka-python's KafkaAdminClient and confluent-kafka's AdminClient."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import kafka.errors as kafka_errors
import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ResourceType
from confluent_kafka.admin import ConfigResource as ConfluentResource
from confluent_kafka.admin import NewTopic as ConfluentTopic
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, KafkaAdminClient, NewPartitions, NewTopic

from .broker_process import BrokerProcess

T = TypeVar("T")
DYNAMIC_TOPIC, DYNAMIC_BROKER, STATIC_BROKER, DEFAULT, DYNAMIC_GROUP = 1, 2, 4, 5, 8


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def admin(bootstrap: str) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    yield client
    client.close()


def _eventually(condition: Callable[[], bool], timeout_s: float = 30.0) -> bool:
    """Metadata is eventually consistent on Kafka: the broker that answers a describe learns of a topic, a
    deletion or a config change only after the controller has committed it, so reads after writes poll."""
    return _settled(condition, bool, timeout_s)


def _settled(read: Callable[[], T], done: Callable[[T], bool], timeout_s: float = 30.0) -> T:
    """``read()`` once ``done`` holds for it (or the last value read when it never does, for the assertion).

    Until the deadline a read that raises counts as not settled yet: on Kafka the broker answering a
    describe may not know a topic the controller has just created (UNKNOWN_TOPIC_OR_PARTITION). The last
    read's error is raised when it never settles."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            value = read()
        except Exception:
            if time.monotonic() >= deadline:
                raise
        else:
            if done(value) or time.monotonic() >= deadline:
                return value
        time.sleep(0.1)


def topic_configs(admin: KafkaAdminClient, topic: str) -> dict[str, Any]:
    result = admin.describe_configs([ConfigResource("TOPIC", topic)], config_filter="all")
    configs: dict[str, Any] = result["topic"][topic]
    return configs


@pytest.mark.differential
def test_create_list_describe_and_delete_topics(admin: KafkaAdminClient) -> None:
    first, second = name("admin-a"), name("admin-b")
    admin.create_topics([NewTopic(first, 3, 1), NewTopic(second, -1, -1)])
    assert _eventually(lambda: {first, second} <= set(admin.list_topics())), "created topics are not listed"
    described = {topic["name"]: len(topic["partitions"]) for topic in admin.describe_topics([first, second])}
    assert described == {first: 3, second: 1}
    admin.delete_topics([first, second])
    assert _eventually(lambda: not {first, second} & set(admin.list_topics())), "deleted topics are still listed"
    result = admin.delete_topics([first], raise_errors=False)
    assert result["topics"][0]["error_code"] == kafka_errors.UnknownTopicOrPartitionError.errno


@pytest.mark.differential
@pytest.mark.parametrize(("topic", "error", "message"), [
    (NewTopic("wide-topic", 1, 3), kafka_errors.InvalidReplicationFactorError, "1 broker"),
    (NewTopic("bad/name", 1, 1), kafka_errors.InvalidTopicError, "ASCII"),
    (NewTopic("cfg-topic", 1, 1, topic_configs={"retention.ms": "soon"}), kafka_errors.InvalidConfigurationError,
     r"(?i)invalid value '?soon'? for .*retention\.ms"),
    (NewTopic("zero-topic", 0, 1), kafka_errors.InvalidPartitionsError, "positive"),
])
def test_refused_topics_say_why(admin: KafkaAdminClient, topic: NewTopic, error: type[Exception],
                                message: str) -> None:
    with pytest.raises(error, match=message):
        admin.create_topics([topic])


def test_an_existing_topic_is_refused(admin: KafkaAdminClient) -> None:
    topic = name("admin-dup")
    admin.create_topics([NewTopic(topic, 1, 1)])
    with pytest.raises(kafka_errors.TopicAlreadyExistsError, match=f"(?i)topic '{topic}' already exists"):
        admin.create_topics([NewTopic(topic, 1, 1)])


def test_describe_configs_lists_defaults_with_their_sources(admin: KafkaAdminClient) -> None:
    topic = name("admin-cfg")
    admin.create_topics([NewTopic(topic, 1, 1, topic_configs={"retention.ms": "60000"})])
    configs = _settled(lambda: topic_configs(admin, topic), lambda found: "retention.ms" in found)
    def value_and_source(key: str) -> tuple[str, str]:
        return configs[key]["value"], configs[key]["config_source"]

    assert value_and_source("retention.ms") == ("60000", "DYNAMIC_TOPIC_CONFIG")
    assert value_and_source("cleanup.policy") == ("delete", "DEFAULT_CONFIG")
    assert {"max.message.bytes", "retention.bytes", "message.timestamp.type"} <= set(configs)
    only = admin.describe_configs([ConfigResource("TOPIC", topic, ["retention.ms"])], config_filter="all")
    assert list(only["topic"][topic]) == ["retention.ms"]
    ghost = name("ghost")
    assert admin.describe_configs([ConfigResource("TOPIC", ghost)])["topic"][ghost] == {}, "kafka-python drops errors"


def test_alter_configs_incrementally_and_with_the_legacy_call(admin: KafkaAdminClient) -> None:
    topic = name("admin-alter")
    admin.create_topics([NewTopic(topic, 1, 1)])
    changes = {"retention.ms": "1000", "cleanup.policy": ("APPEND", "compact")}
    admin.alter_configs([ConfigResource("TOPIC", topic, changes)], incremental=True)
    configs = _settled(lambda: topic_configs(admin, topic),
                       lambda found: found.get("retention.ms", {}).get("value") == "1000")
    assert configs["retention.ms"]["value"] == "1000"
    assert configs["cleanup.policy"]["value"] == "delete,compact"
    admin.alter_configs([ConfigResource("TOPIC", topic, {"retention.bytes": "4096"})], incremental=False)
    configs = _settled(lambda: topic_configs(admin, topic),
                       lambda found: found.get("retention.bytes", {}).get("value") == "4096")
    assert (configs["retention.bytes"]["value"], configs["retention.bytes"]["config_source"]) == (
        "4096", "DYNAMIC_TOPIC_CONFIG")
    assert configs["retention.ms"]["value"] == "1000"
    admin.reset_configs([ConfigResource("TOPIC", topic, ["retention.ms"])])
    configs = _settled(lambda: topic_configs(admin, topic),
                       lambda found: found.get("retention.ms", {}).get("config_source") == "DEFAULT_CONFIG")
    assert configs["retention.ms"]["config_source"] == "DEFAULT_CONFIG"


def test_an_invalid_config_value_is_invalid_config(admin: KafkaAdminClient) -> None:
    topic = name("admin-invalid")
    admin.create_topics([NewTopic(topic, 1, 1)])
    result = admin.alter_configs([ConfigResource("TOPIC", topic, {"max.message.bytes": "-7"})], incremental=True)
    assert str(result["topic"][topic]).startswith("[Error 40] InvalidConfigurationError: ")
    assert re.search(r"(?i)invalid value '?-7'? for .*max\.message\.bytes'?: (value )?must be at least 0",
                     str(result["topic"][topic]))
    configs = _settled(lambda: topic_configs(admin, topic), lambda found: "max.message.bytes" in found)
    assert configs["max.message.bytes"]["config_source"] == "DEFAULT_CONFIG"


@pytest.mark.differential
def test_create_partitions_and_delete_records(admin: KafkaAdminClient, bootstrap: str) -> None:
    topic = name("admin-records")
    admin.create_topics([NewTopic(topic, 1, 1)])
    admin.create_partitions({topic: NewPartitions(3)})
    assert _eventually(lambda: len(admin.describe_topics([topic])[0]["partitions"]) == 3)
    with pytest.raises(kafka_errors.InvalidPartitionsError, match="has 3 partition"):
        admin.create_partitions({topic: NewPartitions(2)})
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for value in range(10):
        producer.send(topic, f"v{value}".encode(), partition=0)
    producer.flush()
    producer.close()
    partition = TopicPartition(topic, 0)
    deleted = admin.delete_records({partition: 4})
    assert deleted[partition]["low_watermark"] == 4
    assert admin.delete_records({partition: -1})[partition]["low_watermark"] == 10
    with pytest.raises(kafka_errors.OffsetOutOfRangeError):
        admin.delete_records({partition: 20})
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    assert consumer.beginning_offsets([partition]) == {partition: 10}
    consumer.close()




@pytest.mark.differential
@pytest.mark.parametrize(("policy", "set_by"), [("compact", "creation"), ("compact", "alteration"),
                                                ("compact,delete", "creation"), ("delete", "creation"),
                                                ("", "creation")])
def test_records_of_a_compact_only_topic_cannot_be_deleted(admin: KafkaAdminClient, bootstrap: str, policy: str,
                                                           set_by: str) -> None:
    """Kafka 4.4 refuses DeleteRecords with POLICY_VIOLATION where ``cleanup.policy`` lists compact without delete,
    whether set at the topic's creation or altered to it later, at any offset; the records stay. Other policies
    (the empty list included) delete."""
    topic = name("admin-policy")
    admin.create_topics([NewTopic(topic, 1, 1, topic_configs={"cleanup.policy": policy} if set_by == "creation"
                                  else {})])
    if set_by == "alteration":
        admin.alter_configs([ConfigResource("TOPIC", topic, configs={"cleanup.policy": policy})])
        assert _eventually(lambda: topic_configs(admin, topic)["cleanup.policy"]["value"] == policy)
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for value in range(5):
        producer.send(topic, f"v{value}".encode(), key=f"k{value}".encode(), partition=0)
    producer.flush()
    producer.close()
    partition = TopicPartition(topic, 0)
    if policy != "compact":
        assert admin.delete_records({partition: 2})[partition]["low_watermark"] == 2
        return
    for offset in (2, -1):
        with pytest.raises(kafka_errors.PolicyViolationError):
            admin.delete_records({partition: offset})
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    assert consumer.beginning_offsets([partition]) == {partition: 0}
    consumer.close()


@pytest.mark.logwright_only(reason="starts a private logwright process with static configs")
def test_static_broker_configs_and_the_default_partition_count(tmp_path: Path) -> None:
    process = BrokerProcess(tmp_path / "data", config={"num.partitions": "2"}).start()
    client = KafkaAdminClient(bootstrap_servers=process.bootstrap, request_timeout_ms=30000)
    try:
        client.create_topics([NewTopic("defaulted", -1, -1)])
        assert len(client.describe_topics(["defaulted"])[0]["partitions"]) == 2
        broker = client.describe_configs([ConfigResource("BROKER", "1")], config_filter="all")["broker"]["1"]
        assert (broker["num.partitions"]["value"], broker["num.partitions"]["config_source"]) == (
            "2", "STATIC_BROKER_CONFIG")
        assert broker["auto.create.topics.enable"]["config_source"] == "DEFAULT_CONFIG"
        client.alter_configs([ConfigResource("BROKER", "1", {"num.partitions": "4"})], incremental=True)
        broker = client.describe_configs([ConfigResource("BROKER", "1")], include_synonyms=True,
                                         config_filter="all")["broker"]["1"]
        assert broker["num.partitions"]["config_source"] == "DYNAMIC_BROKER_CONFIG"
        client.create_topics([NewTopic("dynamic", -1, -1)])
        assert len(client.describe_topics(["dynamic"])[0]["partitions"]) == 4
        cluster = client.describe_cluster()
        assert (cluster["controller_id"], cluster["cluster_id"]) == (1, "logwright-cluster")
        assert [(node["broker_id"], node["port"]) for node in cluster["brokers"]] == [(1, process.port)]
    finally:
        client.close()
        process.kill()


@pytest.mark.differential
def test_confluent_admin_topics_group_configs_and_cluster(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic, group = name("confluent-admin"), name("share-group")
    for future in admin.create_topics([ConfluentTopic(topic, 2, 1, config={"retention.ms": "5000"})]).values():
        assert future.result(30) is None
    def described(kind: ResourceType, name: str) -> Any:
        (future,) = admin.describe_configs([ConfluentResource(kind, name)]).values()
        return future.result(30)

    configs = _settled(lambda: described(ResourceType.TOPIC, topic), lambda found: "retention.ms" in found)
    assert (configs["retention.ms"].value, int(configs["retention.ms"].source)) == ("5000", DYNAMIC_TOPIC)
    assert int(configs["cleanup.policy"].source) == DEFAULT

    def set_group(key: str, value: str) -> Any:
        resource = ConfluentResource(ResourceType.GROUP, group, incremental_configs=[
            ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
        (future,) = admin.incremental_alter_configs([resource]).values()
        return future

    assert set_group("share.auto.offset.reset", "earliest").result(30) is None
    configs = _settled(lambda: described(ResourceType.GROUP, group),
                       lambda found: getattr(found.get("share.auto.offset.reset"), "value", None) == "earliest")
    assert (configs["share.auto.offset.reset"].value, int(configs["share.auto.offset.reset"].source)) == (
        "earliest", DYNAMIC_GROUP)
    assert (configs["share.record.lock.duration.ms"].value, int(configs["share.record.lock.duration.ms"].source)) == (
        "30000", DEFAULT)
    refused = r"(?i)INVALID_CONFIG.*invalid value '?sometime'? for .*share\.auto\.offset\.reset"
    with pytest.raises(Exception, match=refused):
        set_group("share.auto.offset.reset", "sometime").result(30)
    cluster = admin.describe_cluster().result(30)
    assert cluster.controller.id == 1 and [node.id for node in cluster.nodes] == [1]


@pytest.mark.differential
def test_the_metadata_quorum_is_described(admin: KafkaAdminClient) -> None:
    """DescribeQuorum: one leader of __cluster_metadata among the voters (logwright: itself, over its event log)."""
    quorum = admin.describe_metadata_quorum()
    (topic,) = quorum["topics"]
    assert topic["topic_name"] == "__cluster_metadata"
    (partition,) = topic["partitions"]
    assert (partition["partition_index"], partition["error"]) == (0, None)
    voters = {voter["replica_id"]: voter for voter in partition["current_voters"]}
    assert partition["leader_id"] in voters and partition["leader_epoch"] >= 0
    assert 0 <= voters[partition["leader_id"]]["log_end_offset"]
    assert partition["high_watermark"] >= 0
