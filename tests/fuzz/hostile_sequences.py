"""Short conversations on one connection whose later requests carry hostile values into state the earlier ones
made: several faults needed it (a topic created, then a lying batch produced to it; a config set, then a join; a
share session opened, then an acknowledgement of [0, 2**63-1]).

A sequence is a generator: it yields a request (`hostile_values.Request`) and is sent back the decoded answer,
or ``None`` when none came in time or the connection closed; it must cope with either.
"""

from __future__ import annotations

import datetime
import importlib
import uuid
from collections.abc import Callable, Generator
from typing import Any

from kio.static.primitive import Records, i32Timedelta

from .hostile_values import (
    CONFIG_NAMES,
    CONFIG_VALUES,
    EXTENSION_VALUES,
    GROUP_IDS,
    NUM_PARTITIONS,
    OFFSETS,
    PARTITIONS,
    REGEXES,
    TOPIC_NAMES,
    Extension,
    HostileValues,
    Request,
    hostile_batch,
)

Sequence = Generator[Request, Any, None]
MEMBER = "AAAAAAAAAAAAAAAAAAAAAA"


def schema(name: str, version: int) -> Any:
    """kio's request module of API ``name`` (snake case) at ``version``."""
    return importlib.import_module(f"kio.schema.{name}.v{version}.request")


CALM = 0.3
"""How often a field outside a sequence's skeleton is hostile: fully hostile requests are refused before they
reach the state the sequence means to build on."""


def topic_then_produce(values: HostileValues) -> Sequence:
    """Create a topic with hostile partition counts and configs, produce a lying batch to it, fetch it from a
    hostile offset, delete records up to one."""
    rng = values.rng
    topic = rng.choice(("hostile", "hostile-2", "a" * 27, *TOPIC_NAMES))
    create = schema("create_topics", rng.randint(2, 7))
    yield values.entity(create.CreateTopicsRequest, hostility=CALM, timeout=_millis(5000), validate_only=False,
                        topics=(values.entity(create.CreatableTopic, name=topic, assignments=(),
                                              num_partitions=rng.choice(NUM_PARTITIONS),
                                              replication_factor=rng.choice((1, 1, -1, 3))),))
    produce = schema("produce", rng.randint(3, 12))
    partition = values.entity(produce.PartitionProduceData, index=rng.choice((0, 0, 1, -1)),
                              records=Records(hostile_batch(rng)))
    yield values.entity(produce.ProduceRequest, hostility=CALM, transactional_id=None, timeout=_millis(5000),
                        acks=rng.choice((-1, -1, 1, 0, 7)), topic_data=(
                            values.entity(produce.TopicProduceData, name=topic, partition_data=(partition,)),))
    fetch = schema("fetch", rng.randint(4, 12))
    partition = values.entity(fetch.FetchPartition, partition=0, fetch_offset=rng.choice(OFFSETS),
                              partition_max_bytes=rng.choice((1 << 20, 2**31 - 1, 0, -1)))
    yield values.entity(fetch.FetchRequest, hostility=CALM, max_wait=_millis(rng.choice((0, 100))),
                        max_bytes=rng.choice((1 << 20, 2**31 - 1)), replica_id=-1, forgotten_topics_data=(),
                        topics=(values.entity(fetch.FetchTopic, topic=topic, partitions=(partition,)),))
    delete = schema("delete_records", rng.randint(0, 2))
    partition = values.entity(delete.DeleteRecordsPartition, partition_index=0, offset=rng.choice(OFFSETS))
    yield values.entity(delete.DeleteRecordsRequest, hostility=CALM, timeout=_millis(5000), topics=(
        values.entity(delete.DeleteRecordsTopic, name=topic, partitions=(partition,)),))


def config_then_join(values: HostileValues) -> Sequence:
    """Set a group timing or size key to something huge, then join a classic group: '9' * 30 as the initial
    rebalance delay once left every later JoinGroup unanswered."""
    rng = values.rng
    alter = schema("incremental_alter_configs", rng.randint(0, 1))
    config = values.entity(alter.AlterableConfig, name=rng.choice(CONFIG_NAMES), value=rng.choice(CONFIG_VALUES),
                           config_operation=rng.choice((0, 0, 1, 2, 3, -1)))
    resource = values.entity(alter.AlterConfigsResource, resource_type=rng.choice((4, 2, 32)),
                             resource_name=rng.choice(("1", "", "hostile", "hostile-group")), configs=(config,))
    yield values.entity(alter.IncrementalAlterConfigsRequest, resources=(resource,), validate_only=False)
    yield from classic_group(values)


def _classic_join(values: HostileValues, group: str, names: tuple[str, ...], instance_id: str | None = None
                  ) -> Generator[Request, Any, tuple[str, int, str] | None]:
    """A classic member's JoinGroup (twice where the version wants a member id first) with a hostile protocol of one
    of ``names``, static when ``instance_id`` is given: its member id, generation and protocol name, or ``None`` when
    the broker answered nothing."""
    rng = values.rng
    join = schema("join_group", rng.randint(0 if instance_id is None else 5, 9))
    protocol = values.entity(join.JoinGroupRequestProtocol, name=rng.choice(names))
    static = {} if instance_id is None else {"group_instance_id": instance_id}
    member, generation = "", -1
    for _ in range(2):
        answer = yield values.entity(join.JoinGroupRequest, hostility=CALM, group_id=group, member_id=member,
                                     protocol_type="consumer", protocols=(protocol,), **static,
                                     session_timeout=_millis(30_000), rebalance_timeout=_millis(rng.choice((0, 500))))
        if answer is None:
            return None
        member, generation = answer.member_id, answer.generation_id
    return member, generation, protocol.name


def classic_group(values: HostileValues) -> Sequence:
    """Join (twice where the version wants a member id first), sync, heartbeat, commit and leave with hostile
    generations, offsets, assignments and metadata."""
    rng = values.rng
    # mostly a new group: members left by earlier examples would hold a rejoin back until their sessions end
    group = rng.choice((f"hostile-group-{rng.randrange(10**6)}",) * 4 + GROUP_IDS)
    joined = yield from _classic_join(values, group, ("range", "range", ""))
    if joined is None:
        return
    member, generation, _ = joined
    forged = rng.choice((generation, generation, generation + 1, -1, 2**31 - 1))
    sync = schema("sync_group", rng.randint(0, 5))
    yield values.entity(sync.SyncGroupRequest, hostility=CALM, group_id=group, member_id=member,
                        generation_id=generation, group_instance_id=None, protocol_type="consumer",
                        protocol_name="range", assignments=(values.entity(sync.SyncGroupRequestAssignment,
                                                                          member_id=member),))
    heartbeat = schema("heartbeat", rng.randint(0, 4))
    yield values.entity(heartbeat.HeartbeatRequest, group_id=group, member_id=member, generation_id=forged,
                        group_instance_id=None)
    commit = schema("offset_commit", rng.randint(2, 9))
    partitions = tuple(values.entity(commit.OffsetCommitRequestPartition, partition_index=rng.choice(PARTITIONS),
                                     committed_offset=rng.choice(OFFSETS)) for _ in range(rng.randint(1, 3)))
    yield values.entity(commit.OffsetCommitRequest, hostility=CALM, group_id=group, member_id=member,
                        group_instance_id=None, generation_id_or_member_epoch=forged, generation_id=forged,
                        topics=(values.entity(commit.OffsetCommitRequestTopic, name="hostile",
                                              partitions=partitions),))
    leave = schema("leave_group", rng.randint(0, 5))
    yield values.entity(leave.LeaveGroupRequest, hostility=CALM, group_id=group, member_id=member)


def group_migration(values: HostileValues) -> Sequence:
    """A group moving between the protocols: a consumer-protocol member's join before or after a classic member's
    (join, sync with a hostile assignment, heartbeat with a forged generation), so the broker reads hostile
    subscriptions and assignments both as a classic member of a consumer group and when upgrading a classic group;
    then the consumer member leaves (a downgrade when the classic member is still there), or, when static, a classic
    static member with hostile bytes takes its place (a downgrade in that JoinGroup), and the other leaves."""
    rng = values.rng
    group = f"hostile-migration-{rng.randrange(10**6)}"
    consumer = schema("consumer_group_heartbeat", rng.randint(0, 1))
    instance = "hostile-static" if rng.random() < 0.3 else None

    def consumer_heartbeat(epoch: int) -> Request:
        return values.entity(consumer.ConsumerGroupHeartbeatRequest, hostility=CALM, group_id=group, member_id=MEMBER,
                             member_epoch=epoch, rebalance_timeout=_millis(5000), topic_partitions=(),
                             subscribed_topic_names=("hostile",), subscribed_topic_regex=None, instance_id=instance,
                             rack_id=None, server_assignor=None)

    consumer_first = rng.random() < 0.5
    if consumer_first:
        yield consumer_heartbeat(0)
    joined = yield from _classic_join(values, group, ("range", "roundrobin", ""))
    if joined is None:
        return
    member, generation, protocol_name = joined
    sync = schema("sync_group", rng.randint(0, 5))
    yield values.entity(sync.SyncGroupRequest, hostility=CALM, group_id=group, member_id=member,
                        generation_id=generation, group_instance_id=None, protocol_type="consumer",
                        protocol_name=protocol_name, assignments=(values.entity(sync.SyncGroupRequestAssignment,
                                                                                member_id=member),))
    if not consumer_first:
        yield consumer_heartbeat(0)
    heartbeat = schema("heartbeat", rng.randint(0, 4))
    yield values.entity(heartbeat.HeartbeatRequest, group_id=group, member_id=member,
                        generation_id=rng.choice((generation, generation + 1, -1)), group_instance_id=None)
    if instance is None:
        yield consumer_heartbeat(-1)
    else:
        yield from _classic_join(values, group, ("range", "roundrobin", ""), instance_id=instance)
    leave = schema("leave_group", rng.randint(0, 5))
    yield values.entity(leave.LeaveGroupRequest, hostility=CALM, group_id=group, member_id=member)


def share_session(values: HostileValues) -> Sequence:
    """Join a share group, open a share session, then acknowledge hostile ranges (up to [0, 2**63-1]) both in
    ShareFetch and in ShareAcknowledge, with hostile session epochs."""
    rng = values.rng
    metadata = schema("metadata", 12)
    answer = yield metadata.MetadataRequest(topics=(metadata.MetadataRequestTopic(topic_id=None, name="hostile"),),
                                            allow_auto_topic_creation=False,
                                            include_topic_authorized_operations=False)
    known = answer.topics[0].topic_id if answer is not None and answer.topics else None
    topic_id = known or uuid.UUID(int=values.rng.getrandbits(128))
    heartbeat = schema("share_group_heartbeat", 1)
    yield values.entity(heartbeat.ShareGroupHeartbeatRequest, group_id="hostile-share", member_id=MEMBER,
                        member_epoch=0, rack_id=None, subscribed_topic_names=("hostile",))
    version = rng.randint(1, 2)
    fetch, acknowledge = schema("share_fetch", version), schema("share_acknowledge", version)
    epoch = 0
    for _ in range(rng.randint(1, 3)):
        batches = tuple(_acknowledgement(values, fetch.AcknowledgementBatch) for _ in range(rng.choice((0, 1, 2))))
        partition = fetch.FetchPartition(partition_index=rng.choice((0, 0, 1, -1)), acknowledgement_batches=batches)
        answer = yield values.entity(
            fetch.ShareFetchRequest, hostility=CALM, group_id="hostile-share", member_id=MEMBER,
            share_session_epoch=rng.choice((epoch, epoch, -1, 2**31 - 1)), max_wait=_millis(rng.choice((0, 50))),
            min_bytes=1, max_bytes=1 << 20, max_records=rng.choice((10, 2**31 - 1)), batch_size=10,
            forgotten_topics_data=(), topics=(fetch.FetchTopic(topic_id=topic_id, partitions=(partition,)),))
        epoch += answer is not None and int(answer.error_code) == 0
    batch = _acknowledgement(values, acknowledge.AcknowledgementBatch)
    partition = acknowledge.AcknowledgePartition(partition_index=0, acknowledgement_batches=(batch,))
    yield acknowledge.ShareAcknowledgeRequest(group_id="hostile-share", member_id=MEMBER, share_session_epoch=epoch,
                                              topics=(acknowledge.AcknowledgeTopic(topic_id=topic_id,
                                                                                   partitions=(partition,)),))


def _acknowledgement(values: HostileValues, cls: type[Any]) -> Any:
    first, last = sorted((values.rng.choice(OFFSETS), values.rng.choice(OFFSETS)))
    if values.rng.random() < 0.3:
        first, last = last, first
    return cls(first_offset=first, last_offset=last,
               acknowledge_types=values.rng.choice(((1,), (2,), (3,), (1, 2, 3), (127,), (-1,), ())))


def consumer_group_regex(values: HostileValues) -> Sequence:
    """A ConsumerGroupHeartbeat whose topic regex backtracks catastrophically over a 27-character name, and a
    ListTransactions whose id pattern does the same over a 27-character transactional id."""
    rng = values.rng
    create = schema("create_topics", 7)
    yield create.CreateTopicsRequest(topics=(create.CreatableTopic(name="a" * 27, num_partitions=1,
                                                                   replication_factor=1, assignments=(), configs=()),),
                                     timeout=_millis(5000), validate_only=False)
    heartbeat = schema("consumer_group_heartbeat", rng.randint(0, 1))
    yield values.entity(heartbeat.ConsumerGroupHeartbeatRequest, hostility=0.1, group_id="hostile-consumers",
                        member_id=MEMBER, member_epoch=0, rebalance_timeout=_millis(5000), topic_partitions=(),
                        subscribed_topic_names=None, subscribed_topic_regex=rng.choice(REGEXES))
    initialize = schema("init_producer_id", rng.randint(0, 5))
    yield values.entity(initialize.InitProducerIdRequest, hostility=0, transactional_id="a" * 27,
                        transaction_timeout=_millis(60_000), producer_id=-1, producer_epoch=-1)
    listing = schema("list_transactions", 2)
    yield values.entity(listing.ListTransactionsRequest, hostility=CALM,
                        transactional_id_pattern=rng.choice(REGEXES))


def transaction(values: HostileValues) -> Sequence:
    """Begin a transaction, add hostile partitions, produce a batch with a forged producer id, epoch or sequence,
    end it with a hostile epoch."""
    rng = values.rng
    initialize = schema("init_producer_id", 4)
    answer = yield initialize.InitProducerIdRequest(transactional_id="hostile-tx", transaction_timeout=_millis(60_000),
                                                    producer_id=-1, producer_epoch=-1)
    producer_id, epoch = (answer.producer_id, answer.producer_epoch) if answer is not None else (0, 0)
    add = schema("add_partitions_to_txn", 3)
    yield add.AddPartitionsToTxnRequest(
        v3_and_below_transactional_id="hostile-tx", v3_and_below_producer_id=producer_id,
        v3_and_below_producer_epoch=epoch, v3_and_below_topics=(
            add.AddPartitionsToTxnTopic(name="hostile", partitions=rng.choice(((0,), (0,) * 10_000 + (-1,)))),))
    produce = schema("produce", 9)
    yield produce.ProduceRequest(transactional_id=rng.choice(("hostile-tx", None)), acks=-1, timeout=_millis(5000),
                                 topic_data=(produce.TopicProduceData(name="hostile", partition_data=(
                                     produce.PartitionProduceData(index=0, records=Records(hostile_batch(rng))),)),))
    end = schema("end_txn", rng.randint(0, 4))
    yield values.entity(end.EndTxnRequest, transactional_id="hostile-tx", producer_id=producer_id,
                        producer_epoch=rng.choice((epoch, epoch + 5, -1)))


def pop_then_settle(values: HostileValues) -> Sequence:
    """Pop (32009) from the hostile topic, then ack, nack, change the invisible time of, inspect or reset what came
    back, with durations up to 2**64-1."""
    rng = values.rng
    hostile_millis = (0, 1, 60_000, 60_000, 60_000, 2**31, 2**63 - 1, 2**63, 2**64 - 1, -1)
    answer = yield Extension(32009, rng.randint(0, 1), {
        "group_id": "hostile-pop", "topic": "hostile", "max_messages": rng.choice((1, 5, 2**31)),
        "invisible_time_ms": rng.choice(hostile_millis), "long_poll_ms": rng.choice((0, 0, 2**64 - 1))})
    messages = answer.get("messages") if isinstance(answer, dict) else None
    first = messages[0] if isinstance(messages, list) and messages else None
    handle = first.get("handle") if isinstance(first, dict) else rng.choice(EXTENSION_VALUES)
    # 1,000 copies of a 100,000-item handle made ~95 MiB of small items that msgpack decoded on the event loop for
    # 1.5 s (fixed: extension bodies over 8 MiB are refused unread)
    copies = rng.choice((1, 1000))
    for api_key in rng.sample((32010, 32011, 32012, 32013, 32014), 2):
        yield Extension(api_key, 0, {"group_id": "hostile-pop", "topic": "hostile", "consumer": "hostile",
                                     "handle": handle, "handles": [handle] * copies,
                                     "invisible_time_ms": rng.choice(hostile_millis),
                                     "delay_ms": rng.choice(hostile_millis), "to": rng.choice(("offset", "timestamp")),
                                     "value": rng.choice(EXTENSION_VALUES)})


SEQUENCES: tuple[Callable[[HostileValues], Sequence], ...] = (
    topic_then_produce, config_then_join, classic_group, group_migration, share_session, consumer_group_regex,
    transaction, pop_then_settle)


def _millis(milliseconds: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=milliseconds))
