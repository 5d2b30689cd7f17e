"""Admin API handlers over a real RocksEventStore: kio requests in, kio responses out, no sockets."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.alter_configs.v2.request import AlterableConfig, AlterConfigsRequest, AlterConfigsResource
from kio.schema.create_partitions.v3.request import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from kio.schema.create_topics.v2.request import CreatableTopic as CreatableTopicV2
from kio.schema.create_topics.v2.request import CreateTopicsRequest as CreateTopicsRequestV2
from kio.schema.create_topics.v7.request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kio.schema.delete_records.v2.request import DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.describe_cluster.v1.request import DescribeClusterRequest
from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.incremental_alter_configs.v1.request import AlterableConfig as IncrementalConfig
from kio.schema.incremental_alter_configs.v1.request import AlterConfigsResource as IncrementalResource
from kio.schema.incremental_alter_configs.v1.request import IncrementalAlterConfigsRequest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.offset_for_leader_epoch.v4.request import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from kio.schema.types import BrokerId
from kio.static.primitive import i32
from logwright.compat import turns
from logwright.compat.appends import produce_partition
from logwright.compat.broker import BrokerSettings
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka import (
    alter_configs,
    create_partitions,
    create_topics,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_groups,
    incremental_alter_configs,
    init_producer_id,
    offset_for_leader_epoch,
)
from logwright.compat.registry import RequestContext
from logwright.compat.wire.encoder import Encoded
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import GivenWay, as_read, in_process_broker

TIMEOUT = datetime.timedelta(seconds=30)
TOPIC, BROKER, GROUP = 2, 4, 32


class Harness:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.open()

    def open(self) -> None:
        self.store = RocksEventStore(self.path)
        self.broker = in_process_broker(self.store, BrokerSettings(overrides={"num.partitions": "3"}))

    def close(self) -> None:
        self.broker.commit_now()
        self.store.close()

    def call(self, handle: Callable[[RequestContext, Any], Awaitable[Any]], version: int, request: Any) -> Any:
        context = RequestContext(self.broker, 0, version, 1, "tester", 1, "127.0.0.1")
        return asyncio.run(handle(context, request))

    def create(self, *topics: CreatableTopic, validate_only: bool = False) -> Any:
        request = CreateTopicsRequest(topics=topics, timeout=TIMEOUT, validate_only=validate_only)
        return self.call(create_topics.handle, 7, request).topics

    def describe(self, resource_type: int, name: str, keys: tuple[str, ...] | None = None) -> Any:
        request = DescribeConfigsRequest(
            resources=(DescribeConfigsResource(resource_type=resource_type, resource_name=name,
                                               configuration_keys=keys),),
            include_synonyms=True, include_documentation=True,
        )
        return self.call(describe_configs.handle, 4, request).results[0]

    def incremental(self, resource_type: int, name: str, *ops: tuple[str, int, str | None],
                    validate_only: bool = False) -> Any:
        resource = IncrementalResource(resource_type=resource_type, resource_name=name, configs=tuple(
            IncrementalConfig(name=key, config_operation=op, value=value) for key, op, value in ops))
        request = IncrementalAlterConfigsRequest(resources=(resource,), validate_only=validate_only)
        return self.call(incremental_alter_configs.handle, 1, request).responses[0]


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    opened = Harness(tmp_path / "data")
    yield opened
    opened.close()


def topic(name: str, partitions: int = -1, factor: int = -1, **configs: str) -> CreatableTopic:
    return CreatableTopic(name=name, num_partitions=partitions, replication_factor=factor, assignments=(),
                          configs=tuple(CreatableTopicConfig(name=k.replace("_", "."), value=v)
                                        for k, v in configs.items()))


def test_create_topics_answers_counts_configs_and_ids(harness: Harness) -> None:
    (created,) = harness.create(topic("orders", retention_ms="1000"))
    assert (created.error_code, created.num_partitions, created.replication_factor) == (ErrorCode.NONE, 3, 1)
    state = harness.broker.topic("orders")
    assert state is not None and created.topic_id == uuid.UUID(bytes=state.topic_id)
    sources = {config.name: (config.value, config.config_source) for config in created.configs}
    assert sources["retention.ms"] == ("1000", 1)
    assert sources["cleanup.policy"] == ("delete", 5)


def test_create_topics_refuses_with_messages(harness: Harness) -> None:
    harness.create(topic("taken"))
    results = harness.create(topic("dup"), topic("dup"), topic("taken"), topic("bad name"),
                             topic("wide", factor=3), topic("cfg", retention_ms="soon"))
    outcome = {result.name: (result.error_code, result.error_message) for result in results}
    assert [result.name for result in results] == ["dup", "taken", "bad name", "wide", "cfg"]
    assert outcome["dup"] == (ErrorCode.INVALID_REQUEST, "topic 'dup' appears 2 times in the request; name each "
                                                         "topic once")
    assert outcome["taken"] == (ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 'taken' already exists.")
    assert outcome["bad name"][0] == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert outcome["wide"][0] == ErrorCode.INVALID_REPLICATION_FACTOR
    assert outcome["cfg"] == (ErrorCode.INVALID_CONFIG, "invalid value 'soon' for topic config 'retention.ms': "
                                                        "must be an integer")


def test_validate_only_writes_nothing(harness: Harness) -> None:
    (result,) = harness.create(topic("dry", partitions=2), validate_only=True)
    assert (result.error_code, result.num_partitions, result.topic_id) == (ErrorCode.NONE, 2, uuid.UUID(int=0))
    assert harness.broker.topic("dry") is None


def test_create_topics_v2_has_no_configs_to_answer(harness: Harness) -> None:
    request = CreateTopicsRequestV2(topics=(CreatableTopicV2(name="old", num_partitions=1, replication_factor=1,
                                                             assignments=(), configs=()),),
                                    timeout=TIMEOUT, validate_only=False)
    (result,) = harness.call(create_topics.handle, 2, request).topics
    assert (result.name, result.error_code) == ("old", ErrorCode.NONE)


def test_describe_configs_reports_sources_synonyms_types_and_docs(harness: Harness) -> None:
    harness.create(topic("t", retention_ms="1000"))
    result = harness.describe(TOPIC, "t", ("retention.ms", "cleanup.policy"))
    entries = {entry.name: entry for entry in result.configs}
    assert set(entries) == {"retention.ms", "cleanup.policy"}
    retention = entries["retention.ms"]
    assert (retention.value, retention.config_source, retention.config_type) == ("1000", 1, 5)
    # Kafka lists the broker keys from log.retention.ms on; left at its defaults only log.retention.hours is set
    assert [(s.value, s.source) for s in retention.synonyms] == [("1000", 1)]
    bytes_ = harness.describe(TOPIC, "t", ("retention.bytes",)).configs[0]
    assert [(s.name, s.value, s.source) for s in bytes_.synonyms] == [("log.retention.bytes", "-1", 5)]
    assert entries["cleanup.policy"].config_type == 7 and entries["cleanup.policy"].documentation


def test_broker_sources_follow_kafkas_precedence(harness: Harness) -> None:
    assert harness.incremental(BROKER, "", ("group.max.size", 0, "50")).error_code == ErrorCode.NONE
    assert harness.incremental(BROKER, "1", ("group.max.size", 0, "60")).error_code == ErrorCode.NONE
    entries = {entry.name: entry for entry in harness.describe(BROKER, "1").configs}
    assert (entries["num.partitions"].value, entries["num.partitions"].config_source) == ("3", 4)
    assert [(s.value, s.source) for s in entries["group.max.size"].synonyms] == [
        ("60", 2), ("50", 3), ("2147483647", 5)]
    assert (entries["auto.create.topics.enable"].value, entries["auto.create.topics.enable"].config_source) == (
        "true", 5)
    assert [entry.name for entry in harness.describe(BROKER, "").configs] == ["group.max.size"]
    assert harness.broker.broker_config("group.max.size") == "60"


@pytest.mark.parametrize(("resource_type", "name", "code", "message"), [
    (TOPIC, "ghost", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "topic 'ghost' does not exist"),
    (BROKER, "2", ErrorCode.INVALID_REQUEST, "this broker's id (1) or '' for the cluster-wide default, not '2'"),
    (64, "1", ErrorCode.INVALID_REQUEST, "resource type 64 has no configs here"),
    (16, "", ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty"),
    (8, "2", ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 1 but received 2"),
])
def test_describe_configs_refuses_unknown_resources(harness: Harness, resource_type: int, name: str,
                                                    code: ErrorCode, message: str) -> None:
    result = harness.describe(resource_type, name)
    assert result.error_code == code and message in result.error_message and result.configs == ()


def test_configs_of_many_groups_share_their_entries_bytes_and_give_way(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """2,000 group names (that need not exist) in a 17 KB DescribeConfigs held every client 313 ms and built a 15 MB
    answer, each group's 30-odd entries with their documentation built and encoded anew. An entry alike in many
    resources is written once and its bytes shared; the request gives way every `RESOURCES_PER_TURN` resources."""
    monkeypatch.setattr(describe_configs, "RESOURCES_PER_TURN", 10)
    given_way = GivenWay(monkeypatch, turns)
    request = DescribeConfigsRequest(resources=tuple(
        DescribeConfigsResource(resource_type=GROUP, resource_name=f"g{n}", configuration_keys=None)
        for n in range(30)), include_synonyms=True, include_documentation=True)
    answer = harness.call(describe_configs.handle, 4, request)
    first, second, third = answer.results[:3]
    assert len(first.configs) >= 5 and not isinstance(first.configs[0], Encoded)
    assert all(isinstance(entry, Encoded) for entry in second.configs)
    assert all(a is b for a, b in zip(second.configs, third.configs, strict=True))
    assert given_way.count == 3
    read = as_read(answer)
    assert {result.resource_name: len(result.configs) for result in read.results} == {
        f"g{n}": len(first.configs) for n in range(30)}
    assert read.results[29].configs == read.results[0].configs


def test_a_describe_of_many_names_gives_way_and_answers_a_name_again_with_its_bytes(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request may name a million groups (`bounds.MAX_ELEMENTS`): a DescribeGroups of a million held every client
    235 ms in one stretch. The describe APIs give way every `turns.ANSWERS_PER_TURN` names."""
    given_way = GivenWay(monkeypatch, turns)
    names = tuple(f"g{n % 1_000}" for n in range(5_000))  # each named five times
    answer = harness.call(describe_groups.handle, 5, DescribeGroupsRequest(groups=names,
                                                                          include_authorized_operations=False))
    assert given_way.count == 5_000 // turns.ANSWERS_PER_TURN
    assert not isinstance(answer.groups[0], Encoded) and isinstance(answer.groups[1_000], Encoded)
    assert answer.groups[1_000] is answer.groups[2_000], "a name again: the first answer's bytes, shared"
    assert [group.group_id for group in as_read(answer).groups] == list(names)


def test_a_group_is_configured_before_it_exists(harness: Harness) -> None:
    dry = harness.incremental(GROUP, "shares", ("share.auto.offset.reset", 0, "earliest"), validate_only=True)
    assert dry.error_code == ErrorCode.NONE
    assert harness.describe(GROUP, "shares", ("share.auto.offset.reset",)).configs[0].config_source == 5
    assert harness.incremental(GROUP, "shares", ("share.auto.offset.reset", 0, "earliest")).error_code == 0
    entry = harness.describe(GROUP, "shares", ("share.auto.offset.reset",)).configs[0]
    assert (entry.value, entry.config_source) == ("earliest", 8)
    refused = harness.incremental(GROUP, "shares", ("share.delivery.count.limit", 0, "50"))
    assert refused.error_code == ErrorCode.INVALID_CONFIG
    assert refused.error_message == "share.delivery.count.limit must be in the range 2 to 10 inclusive."


def test_alter_configs_replaces_the_override_set(harness: Harness) -> None:
    harness.create(topic("t", retention_ms="1000", retention_bytes="50"))
    request = AlterConfigsRequest(resources=(AlterConfigsResource(
        resource_type=TOPIC, resource_name="t", configs=(AlterableConfig(name="max.message.bytes", value="2048"),)),),
        validate_only=False)
    assert harness.call(alter_configs.handle, 2, request).responses[0].error_code == ErrorCode.NONE
    state = harness.broker.topic("t")
    assert state is not None and state.configs == (("max.message.bytes", "2048"),)


def test_create_partitions_and_delete_topics_by_id(harness: Harness) -> None:
    (created,) = harness.create(topic("grow", partitions=1))
    grow = CreatePartitionsRequest(topics=(
        CreatePartitionsTopic(name="grow", count=3, assignments=(
            CreatePartitionsAssignment(broker_ids=(1,)), CreatePartitionsAssignment(broker_ids=(1,)))),
        CreatePartitionsTopic(name="ghost", count=3, assignments=None),
    ), timeout=TIMEOUT, validate_only=False)
    results = harness.call(create_partitions.handle, 3, grow).results
    assert [result.error_code for result in results] == [ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    state = harness.broker.topic("grow")
    assert state is not None and len(state.partition_ids) == 3
    delete = DeleteTopicsRequest(topics=(DeleteTopicState(name=None, topic_id=created.topic_id),
                                         DeleteTopicState(name=None, topic_id=uuid.uuid4())), timeout=TIMEOUT)
    results = harness.call(delete_topics.handle, 6, delete).responses
    assert [(r.name, r.error_code) for r in results] == [("grow", ErrorCode.NONE), (None, ErrorCode.UNKNOWN_TOPIC_ID)]
    assert harness.broker.topic("grow") is None


def test_producer_ids_survive_a_restart_and_transactional_epochs_bump(harness: Harness) -> None:
    """An idempotent producer naming its id and epoch gets a fresh id (as Kafka: KIP-360 bumps are the client's);
    a transactional id's epoch is bumped, across restarts."""
    def init(transactional_id: str | None = None, producer_id: int = -1, epoch: int = -1) -> Any:
        request = InitProducerIdRequest(transactional_id=transactional_id, transaction_timeout=TIMEOUT,
                                        producer_id=producer_id, producer_epoch=epoch)
        return harness.call(init_producer_id.handle, 4, request)

    first = init()
    assert (first.error_code, first.producer_id, first.producer_epoch) == (ErrorCode.NONE, 0, 0)
    renewed = init(producer_id=0, epoch=0)
    assert (renewed.producer_id, renewed.producer_epoch) == (1, 0)
    harness.close()
    harness.open()
    assert init().producer_id == 2
    assert (init(producer_id=1, epoch=0).producer_id, init(producer_id=1, epoch=0).producer_epoch) == (3, 0)
    transactional = init(transactional_id="tx")
    assert (transactional.error_code, transactional.producer_id, transactional.producer_epoch) == (0, 5, 0)
    harness.close()
    harness.open()
    again = init(transactional_id="tx")
    assert (again.error_code, again.producer_id, again.producer_epoch) == (0, 5, 1)


def test_describe_cluster_names_this_broker_as_controller(harness: Harness) -> None:
    request = DescribeClusterRequest(include_cluster_authorized_operations=True, endpoint_type=2)
    response = harness.call(describe_cluster.handle, 1, request)
    assert (response.error_code, response.controller_id, response.cluster_id) == (0, 1, "logwright-cluster")
    assert [(b.broker_id, b.port) for b in response.brokers] == [(1, 9092)]
    assert response.cluster_authorized_operations == 0b1_1111_1010_0000


def test_delete_records_of_many_partitions_lets_other_requests_run_between_slices(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request naming thousands of partitions must not hold the event loop for all of them at once."""
    monkeypatch.setattr(delete_records, "PARTITIONS_PER_TURN", 3)
    harness.create(topic("wide", partitions=10))
    state = harness.broker.topic("wide")
    assert state is not None
    batch = build_batch([Record(offset=0, timestamp=1_700_000_000_000, key=b"k", value=b"v", headers=())])
    request = DeleteRecordsRequest(topics=(DeleteRecordsTopic(name="wide", partitions=tuple(
        DeleteRecordsPartition(partition_index=index, offset=-1) for index in range(10))),), timeout=TIMEOUT)
    seen: list[int] = []

    async def run() -> Any:
        for index in range(10):
            assert produce_partition(harness.broker, state, index, batch).error_code == ErrorCode.NONE
        await harness.broker.durable()

        async def watch() -> None:  # what the other connections could see, turn by turn
            for _ in range(6):
                seen.append(sum(harness.broker.partition(pid).log_start_offset == 0 for pid in state.partition_ids))
                await asyncio.sleep(0)

        watcher = asyncio.create_task(watch())
        context = RequestContext(harness.broker, 21, 2, 1, "tester", 1, "127.0.0.1")
        response = await delete_records.handle(context, request)
        await watcher
        return response

    response = asyncio.run(run())
    assert [p.error_code for p in response.topics[0].partitions] == [ErrorCode.NONE] * 10
    assert any(0 < untouched < 10 for untouched in seen), "seen between slices: some partitions truncated, not all"
    assert all(harness.broker.partition(pid).log_start_offset == 1 for pid in state.partition_ids)


def test_an_epoch_end_request_of_many_topics_gives_way_and_answers_each(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """OffsetForLeaderEpoch names topics and partitions by the hundred thousand as easily as the describe APIs: the
    topics' ACLs are asked, then the partitions answered, giving way every `turns.ANSWERS_PER_TURN`."""
    harness.create(topic("t", partitions=2))
    given_way = GivenWay(monkeypatch, turns)
    request = OffsetForLeaderEpochRequest(replica_id=BrokerId(-1), topics=tuple(
        OffsetForLeaderTopic(topic="t" if n % 2 else f"missing-{n}", partitions=(OffsetForLeaderPartition(
            partition=i32(n % 3), current_leader_epoch=i32(-1), leader_epoch=i32(0)),))
        for n in range(4_000)))
    answer = harness.call(offset_for_leader_epoch.handle, 4, request)
    assert given_way.count == 2 * 4_000 // turns.ANSWERS_PER_TURN
    found = [(str(t.topic), int(t.partitions[0].partition), int(t.partitions[0].error_code),
              int(t.partitions[0].end_offset)) for t in as_read(answer).topics]
    assert found == [("t" if n % 2 else f"missing-{n}", n % 3, 0 if n % 2 and n % 3 < 2 else 3,
                      0 if n % 2 and n % 3 < 2 else -1) for n in range(4_000)]
