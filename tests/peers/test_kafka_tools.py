"""Kafka's own command-line tools (kafka-tools 4.3.0 from Maven Central) against logwright and Apache Kafka 4.4.

Operators drive a broker with ``kafka-topics``, ``kafka-console-producer``/``-consumer``, ``kafka-consumer-groups``,
``kafka-share-groups``, ``kafka-get-offsets``, ``kafka-delete-records``, ``kafka-acls``, ``kafka-client-metrics`` and
the cluster tools; each
runs here as its main class on the resolved jars (what the ``bin/*.sh`` scripts run), and each test checks what the
tool prints and its exit code, the same checks on both brokers. Where the two print differently (the cluster id,
ports, log directories, Kafka's static ``min.insync.replicas`` in a topic's configs, the order ListGroups answers in)
the test checks only what both say.
Opt-in like the other JVM scenarios (``make compat-java`` or ``pytest tests/peers --peers``): it needs java and mvn.
4.3.0 because kafka-tools 4.4.0 is not on Maven Central here (``bench/kafka/tools/pom.xml``, shared with
``bench/perf_tools.py``). ``kafka-configs`` is not among them: it is in neither jar.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Producer

from .tool_brokers import LIB, kafka_peer, per_broker, tool_broker

pytestmark = pytest.mark.peers

TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-cluster": "org.apache.kafka.tools.ClusterTool",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
}

SERVER_AFTER_COMMAND = {"kafka-cluster"}
"""Tools whose ``--bootstrap-server`` is an option of their subcommand, so it follows it."""


@dataclass(frozen=True, slots=True)
class Ran:
    code: int
    out: str
    err: str


class Tools:
    """The tools against one broker: ``run("kafka-topics", "--list")`` adds ``--bootstrap-server``."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def run(self, tool: str, *args: str, stdin: str | None = None, timeout_s: float = 120.0) -> Ran:
        # a client JVM that exits within seconds: the C1 compiler alone and the serial collector start it fastest
        server = ("--bootstrap-server", self.bootstrap)
        if tool in SERVER_AFTER_COMMAND:
            args = (args[0], *server, *args[1:])
        else:
            args = (*server, *args)
        command = [kafka_peer.java(), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                   "-cp", f"{LIB}/*", TOOLS[tool], *args]
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=timeout_s)
        return Ran(done.returncode, done.stdout, done.stderr)

    def ok(self, tool: str, *args: str, stdin: str | None = None) -> str:
        ran = self.run(tool, *args, stdin=stdin)
        assert ran.code == 0, f"{tool} {' '.join(args)} exited {ran.code}:\n{ran.out[-2000:]}\n{ran.err[-2000:]}"
        return ran.out

    def fails(self, tool: str, *args: str) -> str:
        """A refused command: exit code 1, and its output and errors together for the test to read."""
        ran = self.run(tool, *args)
        assert ran.code == 1, f"{tool} {' '.join(args)} exited {ran.code}:\n{ran.out[-2000:]}\n{ran.err[-2000:]}"
        return ran.out + ran.err


@pytest.fixture(scope="module", params=per_broker("kafka-tools"))
def tools(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tools]:
    with tool_broker(request, tmp_path_factory, "tools") as bootstrap:
        yield Tools(bootstrap)


def rows(table: str) -> list[list[str]]:
    """A tool's table without its header, each row split on whitespace."""
    return [line.split() for line in table.strip().splitlines()[1:] if line.strip()]


def test_topics_are_created_described_grown_and_deleted(tools: Tools) -> None:
    created = tools.ok("kafka-topics", "--create", "--topic", "orders", "--partitions", "3",
                       "--config", "cleanup.policy=compact", "--config", "retention.ms=60000")
    assert created.strip() == "Created topic orders."
    assert "already exists" in tools.fails("kafka-topics", "--create", "--topic", "orders", "--partitions", "3")
    tools.ok("kafka-topics", "--create", "--topic", "orders", "--partitions", "3", "--if-not-exists")
    assert "orders" in tools.ok("kafka-topics", "--list").split()

    described = tools.ok("kafka-topics", "--describe", "--topic", "orders").splitlines()
    assert re.match(r"Topic: orders\tTopicId: \S{22}\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: ",
                    described[0]), described
    configs = set(described[0].split("Configs: ")[1].split(","))
    assert {"cleanup.policy=compact", "retention.ms=60000"} <= configs  # Kafka adds its static min.insync.replicas
    assert [line.split("\t")[1:5] for line in described[1:]] == [
        ["Topic: orders", f"Partition: {partition}", "Leader: 1", "Replicas: 1"] for partition in range(3)]

    tools.ok("kafka-topics", "--alter", "--topic", "orders", "--partitions", "5")
    assert "PartitionCount: 5" in tools.ok("kafka-topics", "--describe", "--topic", "orders")
    tools.fails("kafka-topics", "--alter", "--topic", "orders", "--partitions", "2")
    assert tools.ok("kafka-topics", "--describe", "--topic", "orders", "--under-replicated-partitions") == ""
    assert "orders" in tools.ok("kafka-topics", "--describe", "--topics-with-overrides")

    assert "Unknown topic config name: nosuch.config" in tools.fails(
        "kafka-topics", "--create", "--topic", "refused", "--config", "nosuch.config=1")
    assert "Invalid value abc for configuration retention.ms" in tools.fails(
        "kafka-topics", "--create", "--topic", "refused", "--config", "retention.ms=abc")
    assert "Topic name is invalid" in tools.fails("kafka-topics", "--create", "--topic", "bad/name")
    tools.fails("kafka-topics", "--create", "--topic", "refused", "--replication-factor", "3")
    assert "refused" not in tools.ok("kafka-topics", "--list").split()

    tools.ok("kafka-topics", "--delete", "--topic", "orders")
    assert "does not exist" in tools.fails("kafka-topics", "--describe", "--topic", "orders")
    tools.fails("kafka-topics", "--delete", "--topic", "orders")
    tools.ok("kafka-topics", "--delete", "--topic", "orders", "--if-exists")


def test_console_records_offsets_and_deleted_records(tools: Tools, tmp_path: Path) -> None:
    tools.ok("kafka-topics", "--create", "--topic", "lines", "--partitions", "1")
    tools.ok("kafka-console-producer", "--topic", "lines", "--reader-property", "parse.key=true",
             "--reader-property", "key.separator=:", stdin="a:1\nb:2\nc:3\nd:4\n")
    read = tools.ok("kafka-console-consumer", "--topic", "lines", "--from-beginning", "--max-messages", "4",
                    "--formatter-property", "print.key=true", "--formatter-property", "print.offset=true",
                    "--formatter-property", "print.partition=true")
    assert read.strip().splitlines() == [f"Partition:0\tOffset:{offset}\t{key}\t{offset + 1}"
                                         for offset, key in enumerate("abcd")]
    assert tools.ok("kafka-get-offsets", "--topic", "lines").split() == ["lines:0:4"]
    assert tools.ok("kafka-get-offsets", "--topic", "lines", "--time", "-2").split() == ["lines:0:0"]

    offsets = tmp_path / "offsets.json"
    offsets.write_text(json.dumps({"partitions": [{"topic": "lines", "partition": 0, "offset": 2}], "version": 1}))
    deleted = tools.ok("kafka-delete-records", "--offset-json-file", str(offsets))
    assert "partition: lines-0\tlow_watermark: 2" in deleted
    assert tools.ok("kafka-get-offsets", "--topic", "lines", "--time", "-2").split() == ["lines:0:2"]
    offsets.write_text(json.dumps({"partitions": [{"topic": "lines", "partition": 0, "offset": 9}], "version": 1}))
    assert "OffsetOutOfRangeException" in tools.ok("kafka-delete-records", "--offset-json-file", str(offsets))
    read = tools.ok("kafka-console-consumer", "--topic", "lines", "--from-beginning", "--max-messages", "2")
    assert read.split() == ["3", "4"]


def test_a_consumer_groups_offsets_are_described_reset_and_deleted(tools: Tools) -> None:
    tools.ok("kafka-topics", "--create", "--topic", "grouped", "--partitions", "1")
    tools.ok("kafka-console-producer", "--topic", "grouped", stdin="x\ny\nz\n")
    tools.ok("kafka-console-consumer", "--topic", "grouped", "--group", "readers", "--from-beginning",
             "--max-messages", "3")
    assert "readers" in tools.ok("kafka-consumer-groups", "--list").split()
    assert ["readers", "Classic", "consumer"] in rows(tools.ok("kafka-groups", "--list"))

    def described() -> list[str]:
        [row] = rows(tools.ok("kafka-consumer-groups", "--describe", "--group", "readers"))
        return row[:6]  # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG

    assert described() == ["readers", "grouped", "0", "3", "3", "0"]
    [state] = rows(tools.ok("kafka-consumer-groups", "--describe", "--group", "readers", "--state"))
    assert state[0] == "readers" and state[-2:] == ["Empty", "0"]

    reset = tools.ok("kafka-consumer-groups", "--group", "readers", "--reset-offsets", "--to-earliest",
                     "--topic", "grouped", "--dry-run")
    assert rows(reset) == [["readers", "grouped", "0", "0"]]
    assert described()[3] == "3"  # a dry run changes nothing
    tools.ok("kafka-consumer-groups", "--group", "readers", "--reset-offsets", "--to-offset", "1",
             "--topic", "grouped", "--execute")
    assert described() == ["readers", "grouped", "0", "1", "3", "2"]
    shifted = tools.ok("kafka-consumer-groups", "--group", "readers", "--reset-offsets", "--shift-by", "-5",
                       "--all-topics", "--execute")
    assert rows(shifted) == [["readers", "grouped", "0", "0"]]  # clamped to the log start
    tools.ok("kafka-consumer-groups", "--group", "readers", "--reset-offsets", "--to-latest", "--all-topics",
             "--execute")
    assert described()[3:] == ["3", "3", "0"]

    assert "Successful" in tools.ok("kafka-consumer-groups", "--delete-offsets", "--group", "readers",
                                    "--topic", "grouped")
    assert "was successful" in tools.ok("kafka-consumer-groups", "--delete", "--group", "readers")
    assert "readers" not in tools.ok("kafka-consumer-groups", "--list").split()
    assert "GroupIdNotFoundException" in tools.ok("kafka-consumer-groups", "--describe", "--group", "readers")


def _console_consumer(tools: Tools, topic: str, group: str, protocol: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [kafka_peer.java(), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", f"{LIB}/*",
         TOOLS["kafka-console-consumer"], "--bootstrap-server", tools.bootstrap, "--topic", topic, "--group", group,
         "--consumer-property", f"group.protocol={protocol}", "--timeout-ms", "90000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)


def _until(read: Callable[[], list[list[str]]], done: Callable[[list[list[str]]], bool]) -> list[list[str]]:
    deadline = time.monotonic() + 60
    while True:
        table = read()
        if done(table) or time.monotonic() > deadline:
            return table
        time.sleep(1)


def test_a_group_of_classic_and_consumer_members_as_the_tool_describes_it(tools: Tools) -> None:
    """Java console consumers on both protocols share a topic (Kafka 4.4's online migration): the tool marks the
    consumer-protocol member upgraded; once it leaves, the group is a classic one of the other member."""
    tools.ok("kafka-topics", "--create", "--topic", "migrating", "--partitions", "4")
    consumers = {protocol: _console_consumer(tools, "migrating", "migrating", protocol)
                 for protocol in ("consumer", "classic")}
    try:
        def members() -> list[list[str]]:
            return rows(tools.ok("kafka-consumer-groups", "--describe", "--group", "migrating", "--members",
                                 "--verbose"))

        table = _until(members, lambda table: [row[4] for row in table] == ["2", "2"])
        assert sorted(row[-1] for row in table) == ["false", "true"], table  # UPGRADED: joined with the new protocol
        [state] = rows(tools.ok("kafka-consumer-groups", "--describe", "--group", "migrating", "--state"))
        assert state[3:] == ["uniform", "Stable", "2"], state
        consumers.pop("consumer").terminate()  # its shutdown hook closes it: it leaves the group
        table = _until(members, lambda table: [row[4] for row in table] == ["4"])
        assert [row[4] for row in table] == ["4"], table
        [state] = rows(tools.ok("kafka-consumer-groups", "--describe", "--group", "migrating", "--state"))
        assert state[3:] == ["range", "Stable", "1"], state  # a classic group again, its protocol voted for
    finally:
        for consumer in consumers.values():
            consumer.kill()


def test_a_share_group_reads_and_is_reset_and_deleted(tools: Tools) -> None:
    tools.ok("kafka-topics", "--create", "--topic", "shared", "--partitions", "1")
    tools.ok("kafka-console-producer", "--topic", "shared", stdin="s1\ns2\ns3\n")
    # a new share group starts at the latest offset (share.auto.offset.reset): reset it to the earliest first
    reset = tools.ok("kafka-share-groups", "--reset-offsets", "--group", "sharers", "--topic", "shared",
                     "--to-earliest", "--execute")
    assert rows(reset) == [["sharers", "shared", "0", "0"]]
    read = tools.ok("kafka-console-share-consumer", "--topic", "shared", "--group", "sharers", "--max-messages", "3",
                    "--timeout-ms", "60000")
    assert read.split() == ["s1", "s2", "s3"]
    assert "sharers" in tools.ok("kafka-share-groups", "--list").split()
    assert ["sharers", "Share", "share"] in rows(tools.ok("kafka-groups", "--list"))
    [state] = rows(tools.ok("kafka-share-groups", "--describe", "--group", "sharers", "--state"))
    assert state[0] == "sharers" and state[-2:] == ["Empty", "0"]
    [offsets] = rows(tools.ok("kafka-share-groups", "--describe", "--group", "sharers"))
    assert offsets[:3] == ["sharers", "shared", "0"] and offsets[4] == "0"  # every record acknowledged: no lag
    tools.ok("kafka-share-groups", "--reset-offsets", "--group", "sharers", "--topic", "shared", "--to-earliest",
             "--execute")
    assert rows(tools.ok("kafka-share-groups", "--describe", "--group", "sharers")) == [
        ["sharers", "shared", "0", "0", "3"]]
    assert "was successful" in tools.ok("kafka-share-groups", "--delete", "--group", "sharers")
    assert "sharers" not in tools.ok("kafka-share-groups", "--list").split()


def test_acl_commands_are_refused_without_an_authorizer(tools: Tools) -> None:
    """Neither broker here names an authorizer: both refuse the ACL keys (SECURITY_DISABLED), so an operator is
    not shown ACLs that nothing enforces."""
    assert "No Authorizer is configured on the broker" in tools.fails("kafka-acls", "--list")
    assert "SecurityDisabledException" in tools.fails("kafka-acls", "--add", "--allow-principal", "User:alice",
                                                      "--operation", "Read", "--topic", "anything")


def finalized_level(tools: Tools, feature: str, awaited: str) -> str:
    """``feature``'s level as ``kafka-features describe`` shows it, asked again for up to 30 s until it is
    ``awaited``: Kafka's broker applies the controller's record a moment after the tool's answer."""
    deadline = time.monotonic() + 30
    while True:
        levels = {found[1]: found[2] for found in re.finditer(r"Feature: (\S+)\s+.*?FinalizedVersionLevel: (\d+)",
                                                              tools.ok("kafka-features", "describe"))}
        if levels[feature] == awaited or time.monotonic() > deadline:
            return levels[feature]
        time.sleep(0.5)


def test_cluster_tools_describe_the_one_node(tools: Tools) -> None:
    tools.ok("kafka-topics", "--create", "--topic", "placed", "--partitions", "2")
    assert re.fullmatch(r"Cluster ID: \S+\n", tools.ok("kafka-cluster", "cluster-id"))
    [endpoint] = rows(tools.ok("kafka-cluster", "list-endpoints"))
    assert endpoint[0] == "1" and endpoint[-2:] == ["unfenced", "broker"]

    log_dirs = tools.ok("kafka-log-dirs", "--describe", "--topic-list", "placed").strip().splitlines()[-1]
    [broker] = json.loads(log_dirs)["brokers"]
    [log_dir] = broker["logDirs"]
    assert broker["broker"] == 1 and log_dir["error"] is None
    assert sorted(partition["partition"] for partition in log_dir["partitions"]) == ["placed-0", "placed-1"]

    status = dict(line.split(":", 1) for line in tools.ok("kafka-metadata-quorum", "describe", "--status").splitlines())
    assert status["LeaderId"].strip() == "1" and status["CurrentObservers"].strip() == "[]"
    features = {found[1]: found.groups()[1:] for found in re.finditer(
        r"Feature: (\S+)\s+SupportedMinVersion: (.+?)\s+SupportedMaxVersion: (.+?)\s+FinalizedVersionLevel: (.+?)"
        r"\s+Epoch: (\d+)", tools.ok("kafka-features", "describe"))}
    assert features["group.version"][:3] == ("0", "1", "1"), features  # KIP-848 groups, which level 0 turns off
    assert int(features["share.version"][2]) >= 1, features
    assert features["transaction.version"][1:3] == ("2", "2"), features  # KIP-890 part 2
    assert "transaction.version was downgraded to 1." in tools.ok(
        "kafka-features", "downgrade", "--feature", "transaction.version=1")
    lowered = {found[1]: found[2] for found in re.finditer(r"Feature: (\S+)\s+.*?FinalizedVersionLevel: (\d+)",
                                                           tools.ok("kafka-features", "describe"))}
    assert lowered["transaction.version"] == "1", lowered
    assert "transaction.version was upgraded to 2." in tools.ok(
        "kafka-features", "upgrade", "--feature", "transaction.version=2")
    # share groups off and on again, as an operator turns off a feature (a safe downgrade, as the tool asks it)
    assert "share.version was downgraded to 0." in tools.ok("kafka-features", "downgrade", "--feature",
                                                           "share.version=0")
    assert finalized_level(tools, "share.version", "0") == "0"
    assert "share.version was upgraded to" in tools.ok("kafka-features", "upgrade", "--feature",
                                                       f"share.version={features['share.version'][2]}")
    assert finalized_level(tools, "share.version", features["share.version"][2]) == features["share.version"][2]
    versions = tools.ok("kafka-broker-api-versions")
    for api in ("Produce(0)", "Fetch(1)", "Metadata(3)", "OffsetCommit(8)", "ShareFetch(78)"):
        assert re.search(re.escape(api) + r": \d+ to \d+ \[usable: \d+\]", versions), api

    tools.ok("kafka-leader-election", "--election-type", "preferred", "--all-topic-partitions")
    assert "Valid replica already elected for partitions placed-0" in tools.ok(
        "kafka-leader-election", "--election-type", "unclean", "--topic", "placed", "--partition", "0")
    assert "No partition reassignments found." in tools.ok("kafka-reassign-partitions", "--list")
    assert tools.ok("kafka-transactions", "list").split() == [
        "TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    assert "ProducerId" in tools.ok("kafka-transactions", "describe-producers", "--topic", "placed",
                                    "--partition", "0")


def test_an_open_transaction_is_aborted_by_its_start_offset(tools: Tools) -> None:
    """``kafka-transactions abort`` finds the producer whose transaction starts at the offset (DescribeProducers) and
    writes its ABORT marker (WriteTxnMarkers): nothing is open there after, and a second abort finds nothing."""
    tools.ok("kafka-topics", "--create", "--topic", "hanging", "--partitions", "1")
    producer = Producer({"bootstrap.servers": tools.bootstrap, "transactional.id": "left-open"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for value in (b"a", b"b", b"c"):
        producer.produce("hanging", value=value, partition=0)
    assert producer.flush(30) == 0
    described = ("kafka-transactions", "describe-producers", "--topic", "hanging", "--partition", "0")
    [[_, epoch, coordinator_epoch, last_sequence, _, start]] = rows(tools.ok(*described))
    assert (epoch, coordinator_epoch, last_sequence, start) == ("0", "-1", "2", "0")
    tools.ok("kafka-transactions", "abort", "--topic", "hanging", "--partition", "0", "--start-offset", "0")
    [[_, epoch, coordinator_epoch, last_sequence, _, start]] = rows(tools.ok(*described))
    assert (epoch, coordinator_epoch, last_sequence, start) == ("0", "0", "2", "None")
    assert "Could not find any open transactions starting at offset 0 on partition hanging-0" in tools.fails(
        "kafka-transactions", "abort", "--topic", "hanging", "--partition", "0", "--start-offset", "0")
    assert rows(tools.ok("kafka-transactions", "find-hanging", "--broker-id", "1")) == []


def test_client_metrics_subscriptions_are_altered_described_and_deleted(tools: Tools) -> None:
    altered = tools.ok("kafka-client-metrics", "--alter", "--name", "producers", "--metrics",
                       "org.apache.kafka.producer.,org.apache.kafka.consumer.", "--interval", "5000",
                       "--match", "client_id=app-.*")
    assert altered.strip() == "Altered client metrics config for producers."
    assert tools.ok("kafka-client-metrics", "--list").split() == ["producers"]
    assert tools.ok("kafka-client-metrics", "--describe", "--name", "producers").splitlines() == [
        "Client metrics configs for producers are:", "  interval.ms=5000", "  match=client_id=app-.*",
        "  metrics=org.apache.kafka.producer.,org.apache.kafka.consumer."]
    assert "interval must be between 100 and 3600000" in tools.fails(
        "kafka-client-metrics", "--alter", "--name", "producers", "--interval", "50")
    assert "Illegal client matching pattern: bogus=x" in tools.fails(
        "kafka-client-metrics", "--alter", "--name", "producers", "--match", "bogus=x")
    assert tools.ok("kafka-client-metrics", "--delete", "--name", "producers").strip() == \
        "Deleted client metrics config for producers."
    assert tools.ok("kafka-client-metrics", "--list").split() == []
    assert "doesn't exist" in tools.ok("kafka-client-metrics", "--describe", "--name", "producers")
