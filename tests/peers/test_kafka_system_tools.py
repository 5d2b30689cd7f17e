"""The clients Kafka's own system tests drive (kafka-tools 4.3.0), against logwright and Apache Kafka 4.4.

Kafka's system tests check a broker with these programs: ``ClientCompatibilityTest`` (client_compatibility_features_
test: what a client may expect of a broker version), ``VerifiableProducer`` and ``VerifiableConsumer`` (most
replication and rebalance tests, both group protocols), ``VerifiableShareConsumer`` (the share group tests, each
acknowledgement mode), ``TransactionalMessageCopier`` (transactions_test: a consume-transform-produce loop that aborts
at random, read back READ_COMMITTED exactly once), ``EndToEndLatency``, ``LogCompactionTester`` (a compacted topic
with deletes read back and checked against what was produced) and the ``StreamsResetter``
(``kafka-streams-application-reset``). Teams that test a Kafka-compatible broker run
them too; here each runs as its main class on the resolved jars, and each test makes the same checks on both
brokers. Opt-in like the other JVM scenarios (``make compat-java`` or ``pytest tests/peers --peers``).
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.describe_transactions.v0 import request as describe_transactions
from logwright.compat.registry import make
from logwright.testing.clients import one_request

from .tool_brokers import LIB, kafka_peer, per_broker, tool_broker

pytestmark = pytest.mark.peers

TOOLS = "org.apache.kafka.tools."


@pytest.fixture(scope="module", params=per_broker("system-tools"))
def bootstrap(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with tool_broker(request, tmp_path_factory, "system-tools") as address:
        yield address


def run(tool: str, *args: str, timeout_s: float = 180.0) -> str:
    """Run ``org.apache.kafka.tools.<tool>``; its standard output, once it exited 0."""
    command = [kafka_peer.java(), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", f"{LIB}/*",
               TOOLS + tool, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    assert done.returncode == 0, f"{tool} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def events(output: str, name: str) -> list[dict[str, Any]]:
    """The tool's JSON lines of one ``name``."""
    found = []
    for line in output.splitlines():
        if line.startswith("{"):
            event = json.loads(line)
            if event.get("name") == name:
                found.append(event)
    return found


def new_topic(bootstrap: str, partitions: int, name: str | None = None, **configs: str) -> str:
    topic = name or f"system-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # held: a client collected before its answer fails it
    admin.create_topics([NewTopic(topic, partitions, config=configs)])[topic].result(30)
    return topic


def produced(bootstrap: str, topic: str, count: int) -> None:
    """``count`` values "0", "1", ... acknowledged by all replicas (VerifiableProducer)."""
    output = run("VerifiableProducer", "--bootstrap-server", bootstrap, "--topic", topic, "--max-messages",
                 str(count), "--acks", "-1", "--throughput", "-1")
    [summary] = events(output, "tool_data")
    assert (summary["sent"], summary["acked"]) == (count, count), summary
    assert len(events(output, "producer_send_success")) == count


def consumed_values(bootstrap: str, topic: str, count: int, *args: str) -> list[str]:
    """The values a VerifiableConsumer reads, in order, until ``count``; its commits must all succeed."""
    output = run("VerifiableConsumer", "--bootstrap-server", bootstrap, "--topic", topic, "--group-id",
                 f"verifier-{uuid.uuid4().hex[:6]}", "--max-messages", str(count), "--reset-policy", "earliest",
                 "--verbose", *args)
    commits = events(output, "offsets_committed")
    assert commits and all(commit["success"] for commit in commits), commits
    return [str(record["value"]) for record in events(output, "record_data")]


def test_the_client_compatibility_test_finds_every_feature_of_a_4_x_broker(bootstrap: str) -> None:
    """As client_compatibility_features_test runs it against a 4.x broker: offsetsForTimes, cluster ids, topic
    creation, DescribeAcls (refused as without an authorizer), DescribeConfigs and idempotence all as expected, and
    a record larger than ``max.partition.fetch.bytes`` still read (KIP-74)."""
    output = run("ClientCompatibilityTest", "--topic", f"compat-{uuid.uuid4().hex[:6]}", "--bootstrap-server",
                 bootstrap, "--offsets-for-times-supported", "true", "--cluster-id-supported", "true",
                 "--expect-record-too-large-exception", "false", "--num-cluster-nodes", "1",
                 "--create-topics-supported", "true", "--describe-acls-supported", "true",
                 "--describe-configs-supported", "true", "--idempotent-producer-supported", "true")
    assert "SUCCESS" in output


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_verifiable_consumers_of_both_group_protocols_read_every_record_once(bootstrap: str, protocol: str) -> None:
    topic = new_topic(bootstrap, 3)
    produced(bootstrap, topic, 1_500)
    values = consumed_values(bootstrap, topic, 1_500, "--group-protocol", protocol)
    assert sorted(values, key=int) == [str(value) for value in range(1_500)]


@pytest.mark.parametrize("mode", ["auto", "sync", "async"])
def test_a_verifiable_share_consumer_acknowledges_every_record_in_each_mode(bootstrap: str, mode: str) -> None:
    topic = new_topic(bootstrap, 2)
    produced(bootstrap, topic, 1_000)
    output = run("VerifiableShareConsumer", "--bootstrap-server", bootstrap, "--topic", topic, "--group-id",
                 f"share-{mode}-{uuid.uuid4().hex[:6]}", "--max-messages", "1000", "--acknowledgement-mode", mode,
                 "--offset-reset-strategy", "earliest")
    assert sum(event["count"] for event in events(output, "records_consumed")) == 1_000
    acknowledged = events(output, "offsets_acknowledged")
    assert acknowledged and all(event["success"] for event in acknowledged), acknowledged
    assert sum(event["count"] for event in acknowledged) == 1_000


def test_the_transactional_copier_aborting_at_random_copies_each_record_exactly_once(bootstrap: str,
                                                                                    tmp_path: Path) -> None:
    """transactions_test's loop: consume a partition, produce each record to another topic and commit the consumed
    offsets in the same transaction (the group metadata API), aborting some transactions at random and going back
    to the committed offsets; READ_COMMITTED then reads every value exactly once, in order. The client runs
    transaction version 2 on both brokers (KIP-890 part 2: each end bumps the epoch, so after its 20 commits and its
    aborts the epoch is past 20; version 1 would have kept it at 0)."""
    source, copy = new_topic(bootstrap, 1), new_topic(bootstrap, 1)
    produced(bootstrap, source, 1_000)
    transactional_id = f"copier-{uuid.uuid4().hex[:6]}"
    output = run("TransactionalMessageCopier", "--broker-list", bootstrap, "--input-topic", source,
                 "--input-partition", "0", "--output-topic", copy, "--max-messages", "1000", "--consumer-group",
                 f"copier-{uuid.uuid4().hex[:6]}", "--transaction-size", "50", "--transactional-id",
                 transactional_id, "--enable-random-aborts", "--use-group-metadata")
    last = json.loads(output.strip().splitlines()[-1])
    assert (last["stage"], last["totalProcessed"], last["remaining"]) == ("ShutdownComplete", 1_000, 0), last
    [state] = one_request(bootstrap, make(describe_transactions.DescribeTransactionsRequest,
                                          transactional_ids=(transactional_id,))).transaction_states
    assert state.error_code == 0 and state.producer_epoch > 1_000 // 50, state
    committed = tmp_path / "read-committed.properties"
    committed.write_text("isolation.level=read_committed\n")
    assert consumed_values(bootstrap, copy, 1_000, "--group-protocol", "consumer", "--consumer.config",
                           str(committed)) == [str(value) for value in range(1_000)]


def test_end_to_end_latency_round_trips_through_the_broker(bootstrap: str) -> None:
    output = run("EndToEndLatency", "--bootstrap-server", bootstrap, "--topic", f"latency-{uuid.uuid4().hex[:6]}",
                 "--num-records", "300", "--producer-acks", "all", "--record-size", "100", "--record-key-size", "8",
                 "--num-headers", "2", "--record-header-key-size", "4", "--record-header-size", "16")
    assert "Avg latency" in output and "Percentiles" in output


def test_the_log_compaction_tester_reads_back_the_last_value_of_every_key(bootstrap: str) -> None:
    """log_compaction_test's checker: keys written several times and deleted at random on compacted topics, read
    back and compared with the last value produced for each key (the active segment is not cleaned on either
    broker, so what is checked is that reads of a compacted topic with tombstones lose and invent nothing)."""
    output = run("LogCompactionTester", "--bootstrap-server", bootstrap, "--messages", "6000", "--duplicates", "3",
                 "--topics", "2", "--percent-deletes", "10", "--sleep", "1")
    assert " 0 mismatches." in output and "Data verification is completed" in output


def test_the_streams_resetter_rewinds_an_application_and_deletes_its_internal_topics(bootstrap: str) -> None:
    """``kafka-streams-application-reset``: the application's group goes back to its input topics' earliest offsets,
    and the topics named as its own internal ones (``<application.id>-...-changelog``/``-repartition``) are deleted,
    the others kept."""
    application = f"app-{uuid.uuid4().hex[:6]}"
    source = new_topic(bootstrap, 3)
    internal = [new_topic(bootstrap, 3, name=f"{application}-store-changelog"),
                new_topic(bootstrap, 3, name=f"{application}-KSTREAM-AGGREGATE-0000000001-repartition")]
    kept = new_topic(bootstrap, 1, name=f"{application}-output")
    producer = Producer({"bootstrap.servers": bootstrap})
    for index in range(30):
        producer.produce(source, value=b"%d" % index, partition=index % 3)
    assert producer.flush(30) == 0
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": application, "enable.auto.commit": False})
    group.commit(offsets=[TopicPartition(source, index, 10) for index in range(3)], asynchronous=False)
    group.close()

    output = run("StreamsResetter", "--bootstrap-server", bootstrap, "--application-id", application,
                 "--input-topics", source, "--to-earliest")
    deleted = re.search(r"Deleting inferred internal topics \[([^\]]*)\]", output)
    assert deleted is not None, output
    assert sorted(deleted.group(1).split(", ")) == sorted(internal)  # listed in the broker's Metadata order
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = set(admin.list_topics(timeout=30).topics)
    assert source in topics and kept in topics and not topics & set(internal)
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": application, "enable.auto.commit": False})
    try:
        assert [int(entry.offset) for entry in group.committed(
            [TopicPartition(source, index) for index in range(3)], 30)] == [0, 0, 0]
    finally:
        group.close()
