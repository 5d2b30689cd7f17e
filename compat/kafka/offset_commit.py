"""OffsetCommit (key 8), versions 2-10: committed positions of a group, one `OffsetCommitted` event each.

v0-v1 are not served: kio cannot parse them (they are answered UNSUPPORTED_VERSION). Members commit
with their generation (v7+ also with ``group.instance.id``); generation -1 with no member id is a
"simple" commit, accepted while the group has no members. A retention time (v2-v4, not -1) makes each offset
expire that long after its commit, whatever its group does (`core.groups.offset_expiry`); the
metadata string is round-tripped (null is stored as ""), and a commit counts as a member's heartbeat.
As in Kafka, the empty group id is allowed here for backward compatibility. A KIP-848 consumer group's
members commit with their member epoch as the generation: an unknown member is UNKNOWN_MEMBER_ID, another
epoch than the member's STALE_MEMBER_EPOCH; epoch -1 without a member commits only while it has no members. A
generation named to a group that does not exist is GROUP_ID_NOT_FOUND from v9, ILLEGAL_GENERATION before (Kafka 4.4).
v10 names topics by id, as Kafka 4.4 does: an id no topic has is UNKNOWN_TOPIC_ID for each of its partitions,
whatever else (there is no name to authorize or commit under).

A request naming thousands of partitions lets other connections' requests run every `PARTITIONS_PER_TURN`
partitions (one of 5,000 held the event loop 73 ms, Kafka's coordinator 22); the committer is then checked again in
the turn its commits start being staged, so a member fenced meanwhile commits nothing. The commits are staged a part
at a time too (`Broker.stage_over_turns`: folding 5,000 of them took 35-49 ms at once) and still go to disk in one
WriteBatch. TxnOffsetCommit stages its commits at once: an EndTxn between two parts would end the transaction
with only some of them.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, cast

from logwright.compat.authorization import allowed
from logwright.compat.broker import Broker
from logwright.compat.coordinators.consumer_coordinator import consumer_group
from logwright.compat.coordinators.group_coordinator import committed_offsets, coordinator, group_state
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.compat.turns import give_way
from logwright.compat.wire.encoder import Encoded, encode_entity
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.consumer_groups.consumer_reconciliation import check_member_epoch
from logwright.core.errors import CommitToNoGroup, DomainError, UnknownGroup
from logwright.core.events import OffsetCommitted
from logwright.core.groups.group_admin import check_offset_commit, check_offset_metadata
from logwright.core.groups.groups import GroupMember
from logwright.core.log.catalog import TopicState

if TYPE_CHECKING:
    from kio.schema.offset_commit import v2, v3, v4, v5, v6, v7, v8, v9, v10
    from typing_extensions import TypeIs

    OffsetCommitRequest: TypeAlias = (
        v2.OffsetCommitRequest | v3.OffsetCommitRequest | v4.OffsetCommitRequest | v5.OffsetCommitRequest
        | v6.OffsetCommitRequest | v7.OffsetCommitRequest | v8.OffsetCommitRequest | v9.OffsetCommitRequest
        | v10.OffsetCommitRequest
    )
    """Every version served: mypy checks each field read against all of them."""

PARTITIONS_PER_TURN = 250
"""Partitions checked before the handler yields to the event loop (about 3 ms of work)."""


@handler(8, "OffsetCommit", 2, 10, at_once=True)
async def handle(context: RequestContext, request: OffsetCommitRequest) -> Any:
    broker = context.broker
    module = response_module("offset_commit", context.api_version)
    group_id = request.group_id
    generation = int(request.generation_id_or_member_epoch)
    member: GroupMember | None = None
    instance_id = request.group_instance_id if _names_instance(request) else None

    def refusal() -> ErrorCode | None:
        nonlocal member
        try:
            member = check_committer(broker, group_id, generation, request.member_id, instance_id,
                                     modern_commit=context.api_version >= 9)
        except CommitToNoGroup:
            member = None
            return ErrorCode.GROUP_ID_NOT_FOUND if context.api_version >= 9 else ErrorCode.ILLEGAL_GENERATION
        except DomainError as error:
            member = None
            return error_code_for(error)
        return None

    now_ms = broker.clock.now_ms()
    events, topics = await commit_partitions(broker, request.topics, group_id, refusal, now_ms,
                                             module.OffsetCommitResponseTopic, module.OffsetCommitResponsePartition,
                                             _expire_time_ms(request, now_ms), context)
    if events:
        await broker.stage_over_turns(events)
        await broker.durable()
        if len(events) > PARTITIONS_PER_TURN:  # the answer's encoding is a stretch of its own, not the commit's next
            await give_way()
    if member is not None:
        coordinator(broker).sessions.touch(group_id, member.member_id, now_ms)
    return make(module.OffsetCommitResponse, throttle_time=datetime.timedelta(0), topics=topics)


def check_committer(broker: Broker, group_id: str, generation: int, member_id: str,
                    group_instance_id: str | None, modern_commit: bool = True) -> GroupMember | None:
    """Whether this member (or a simple committer) may commit the group's offsets now; raises if not.

    A KIP-848 consumer group checks the member epoch (``modern_commit``: OffsetCommit v9+ or transactional, what its
    consumer-protocol members must use), a classic group the generation; the classic member is returned so its
    session can be touched."""
    check_not_share_group(broker, group_id)
    consumer = consumer_group(broker, group_id)
    if consumer is not None:
        check_member_epoch(consumer, member_id, generation, commit=True, modern_commit=modern_commit)
        return None
    state = group_state(broker, group_id)
    has_offsets = state is None and committed_offsets(broker, group_id) is not None
    return check_offset_commit(group_id, state, has_offsets, generation, member_id, group_instance_id)


def check_not_share_group(broker: Broker, group_id: str) -> None:
    """Refuses a commit under a share group's id, whoever sends it (GROUP_ID_NOT_FOUND, as Kafka 4.4): group ids are
    one namespace, and a share group's positions are its share-partition states, not committed offsets."""
    if share_coordinator(broker).group(group_id) is not None:
        raise UnknownGroup(f"group {group_id!r} is a share group: it has no committed offsets")


def _expire_time_ms(request: OffsetCommitRequest, now_ms: int) -> int:
    """When a v2-v4 commit with its own retention time expires (Kafka's ``expireTimestampMs``); -1 otherwise."""
    if not has_field(request, "retention_time"):
        return -1
    retention_ms = cast(Any, request).retention_time // datetime.timedelta(milliseconds=1)
    return -1 if retention_ms == -1 else min(max(now_ms + retention_ms, 0), 2**63 - 1)


async def commit_partitions(broker: Broker, requested: Sequence[RequestedTopic], group_id: str,
                            refusal: Callable[[], ErrorCode | None], now_ms: int, topic_cls: Any,
                            partition_cls: Any, expire_time_ms: int = -1,
                            context: RequestContext | None = None,
                            ) -> tuple[list[OffsetCommitted], tuple[Any, ...]]:
    """The commits an OffsetCommit or TxnOffsetCommit asks for and its per-partition answers. ``refusal`` (the
    group's or the transaction's check) fails every partition; it is asked again after the last yield, so the caller
    stages the commits in the turn they were last allowed. A request longer than a turn's share starts its checks a
    turn after the read that decoded it (decoding 5,000 partitions is a turn's work of its own: 5 ms). With an
    authorizer, a topic the ``context``'s principal may not READ is TOPIC_AUTHORIZATION_FAILED, whatever else."""
    if sum(len(topic.partitions) for topic in requested) > PARTITIONS_PER_TURN:
        await give_way()
    refused = refusal()
    most_metadata = int(broker.broker_config("offset.metadata.max.bytes"))
    events: list[OffsetCommitted] = []
    answers: list[list[Encoded]] = []
    checked = 0
    names = [_name_of(broker, topic) for topic in requested]  # v10 names topics by id

    def readable(name: str) -> bool:
        return context is None or allowed(context, AclOperation.READ, ResourceType.TOPIC, name)

    for topic, name in zip(requested, names, strict=True):
        topic_answers = []
        state = broker.topic(name) if name is not None else None  # looked up again after each yield
        may_read = name is not None and readable(name)
        with_epoch: bool | None = None  # every partition of a request is of one class: asked once
        for partition in topic.partitions:
            checked += 1
            if checked % PARTITIONS_PER_TURN == 0:
                await give_way()
                state = broker.topic(name) if name is not None else None
            if name is None:
                code: ErrorCode | None = ErrorCode.UNKNOWN_TOPIC_ID
            else:
                code = (refused or partition_error(state, partition, most_metadata)) if may_read \
                    else ErrorCode.TOPIC_AUTHORIZATION_FAILED
            if code is None and name is not None:
                code = ErrorCode.NONE
                if with_epoch is None:
                    with_epoch = _names_leader_epoch(partition)
                events.append(committed_offset(group_id, name, partition, now_ms, with_epoch, expire_time_ms))
            assert code is not None
            topic_answers.append(_answer(partition_cls, partition.partition_index, code))
        answers.append(topic_answers)
    if checked >= PARTITIONS_PER_TURN and refused is None and (refused := refusal()) is not None:
        events = []
        answers = [[_answer(partition_cls, partition.partition_index, code) for partition in topic.partitions]
                   for topic, name in zip(requested, names, strict=True)
                   for code in [ErrorCode.UNKNOWN_TOPIC_ID if name is None
                                else refused if readable(name) else ErrorCode.TOPIC_AUTHORIZATION_FAILED]]
    topics = tuple(make(topic_cls, **_topic_field(topic), partitions=tuple(topic_answers))
                   for topic, topic_answers in zip(requested, answers, strict=True))
    return events, topics


def _name_of(broker: Broker, topic: RequestedTopic) -> str | None:
    """The name of a topic the request names: itself, or (OffsetCommit v10) its id's topic's, ``None`` when no topic
    has that id."""
    named: Any = topic
    if not has_field(named, "topic_id"):
        return str(named.name)
    state = broker.topic_by_id(named.topic_id) if named.topic_id is not None else None
    return state.name if state is not None else None


def _topic_field(topic: RequestedTopic) -> dict[str, Any]:
    """The answer names a topic as the request did."""
    named: Any = topic
    return {"topic_id": named.topic_id} if has_field(named, "topic_id") else {"name": named.name}


_ANSWERS: dict[Any, dict[int, bytes]] = {}
ANSWERS_KEPT = 50_000
"""Encoded partition answers by response class, then partition and error: an answer holds nothing else, and making
and encoding it again for every committed partition was a fifth of what each partition of a commit cost. Keyed by
an int and holding plain bytes (an `Encoded`, like any instance of a class defined in Python, is tracked), no entry
is an object the garbage collector walks: 50,000 of them were 100,000 tracked objects."""


def _answer(partition_cls: Any, partition_index: int, code: ErrorCode) -> Encoded:
    """One partition's answer, encoded in the turn that decides it: making and encoding 5,000 of them at the end held
    the event loop 15-20 ms."""
    kept = _ANSWERS.get(partition_cls)
    if kept is None:
        kept = _ANSWERS[partition_cls] = {}
    key = partition_index << 16 | code & 0xFFFF  # error codes are int16
    encoded = kept.get(key)
    if encoded is None:
        if len(kept) >= ANSWERS_KEPT:
            kept.clear()
        encoded = kept[key] = encode_entity(make(partition_cls, partition_index=partition_index, error_code=code))
    return Encoded(encoded)


def partition_error(topic: TopicState | None, partition: RequestedCommit, most_metadata: int) -> ErrorCode | None:
    """Why one partition of an OffsetCommit or TxnOffsetCommit of ``topic`` (``None``: no such topic) cannot be
    committed, if it cannot; ``most_metadata``: the broker's ``offset.metadata.max.bytes``."""
    if topic is None or not 0 <= partition.partition_index < len(topic.partition_ids):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    try:
        check_offset_metadata(partition.committed_metadata, most_metadata)
    except DomainError as error:
        return error_code_for(error)
    return None


class RequestedCommit(Protocol):
    """What a request partition of OffsetCommit (v2-9) and TxnOffsetCommit (v0-4) both say."""

    @property
    def partition_index(self) -> int: ...
    @property
    def committed_offset(self) -> int: ...
    @property
    def committed_metadata(self) -> str | None: ...


class RequestedTopic(Protocol):
    """A request topic of OffsetCommit (v2-10) or TxnOffsetCommit (v0-4): named by a ``name``, or (OffsetCommit v10)
    a ``topic_id`` (`_name_of`)."""

    @property
    def partitions(self) -> Sequence[RequestedCommit]: ...


class _WithLeaderEpoch(RequestedCommit, Protocol):
    @property
    def committed_leader_epoch(self) -> int: ...


def committed_offset(group_id: str, topic: str, partition: RequestedCommit, now_ms: int,
                     with_epoch: bool, expire_time_ms: int = -1) -> OffsetCommitted:
    """The commit one request partition asks for (null metadata stored as ""); ``with_epoch``: its version carries the
    leader epoch it was read at (`_names_leader_epoch`, asked once per topic)."""
    leader_epoch = int(cast(_WithLeaderEpoch, partition).committed_leader_epoch) if with_epoch else -1
    return OffsetCommitted(group_id, topic, int(partition.partition_index), int(partition.committed_offset),
                           leader_epoch, partition.committed_metadata or "", now_ms, expire_time_ms)


def _names_instance(request: OffsetCommitRequest) -> TypeIs[
    v7.OffsetCommitRequest | v8.OffsetCommitRequest | v9.OffsetCommitRequest
]:
    """v7+ carry the static member's ``group.instance.id``."""
    return has_field(request, "group_instance_id")


def _names_leader_epoch(partition: RequestedCommit) -> TypeIs[_WithLeaderEpoch]:
    """OffsetCommit v6+ and TxnOffsetCommit v2+ carry the leader epoch the commit was read at."""
    return has_field(partition, "committed_leader_epoch")
