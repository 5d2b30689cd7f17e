"""OffsetFetch (key 9), versions 1-10: a group's committed offsets.

v0 is not served (kio cannot parse it). v2+ accept null topics for "every committed partition" and
carry a top-level error; v5+ return the leader epoch; v7+ ``require_stable`` answers
UNSTABLE_OFFSET_COMMIT for a partition with a transactional offset still pending (TxnOffsetCommit in an
open transaction), which the client retries; v8+ batch groups. In v9, members of a KIP-848 consumer group
send their member id and epoch (else UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH; epoch -1 without a member
id is an admin read). v10 names topics by id, as Kafka 4.4 does: an id no topic has is UNKNOWN_TOPIC_ID for each
partition asked, and a group's every committed partition leaves out topics that no longer exist (no id names them).
A partition without a commit, or of an unknown group or topic, answers offset -1 with no error, as Kafka does.
A fetch of thousands of partitions lets other connections' requests run every
`PARTITIONS_PER_TURN` partitions; each partition's offset is read in the turn it is answered, and its answer is
encoded there too (`Encoded`): encoding 5,000 partitions' answers at the end held the event loop 11-16 ms, longer
than any of the slices. A partition, or a group's every partition, asked for again in one request is answered again,
as Kafka does, from the first answer's bytes: 4 bytes of request asking again for a partition with 4 KB of commit
metadata made 4 KB of answer each time.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.broker import Broker
from logwright.compat.coordinators.consumer_coordinator import consumer_group
from logwright.compat.coordinators.group_coordinator import committed_offsets
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.compat.turns import give_way
from logwright.compat.wire.encoder import Encoded, encode_entity
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.consumer_groups.consumer_reconciliation import check_member_epoch
from logwright.core.errors import DomainError
from logwright.core.transactions.transactions import pending_offsets

if TYPE_CHECKING:
    from kio.schema.offset_fetch import v1, v2, v3, v4, v5, v6, v7, v8, v9, v10
    from typing_extensions import TypeIs

    OffsetFetchRequest: TypeAlias = (
        v1.OffsetFetchRequest | v2.OffsetFetchRequest | v3.OffsetFetchRequest | v4.OffsetFetchRequest
        | v5.OffsetFetchRequest | v6.OffsetFetchRequest | v7.OffsetFetchRequest | v8.OffsetFetchRequest
        | v9.OffsetFetchRequest | v10.OffsetFetchRequest
    )
    """Every version served: mypy checks each field read against all of them."""
    OffsetFetchRequestGroup: TypeAlias = (v8.request.OffsetFetchRequestGroup | v9.request.OffsetFetchRequestGroup
                                          | v10.request.OffsetFetchRequestGroup)

PARTITIONS_PER_TURN = 200
"""Partitions answered (and encoded) before the handler yields to the event loop (about 2 ms of work; at 500, 4-5 ms,
a ping during a 5,000-partition OffsetFetch waited 16-18 ms, at 200 8-9, in process)."""


@handler(9, "OffsetFetch", 1, 10, at_once=True)
async def handle(context: RequestContext, request: OffsetFetchRequest) -> Any:
    module = response_module("offset_fetch", context.api_version)
    known: dict[tuple[str, str, int], Encoded] = {}
    if _batched(request):
        pending = _Pending(context.broker) if request.require_stable else None
        groups: list[Any] = []
        every_partition: dict[tuple[str, str, int], Any] = {}
        for group in request.groups:
            if group.topics is not None:
                groups.append(await _group(context, module, group, pending, known))
                continue
            key = (group.group_id, *_member(group))
            answer = every_partition.get(key)
            if answer is None:
                answer = every_partition[key] = await _group(context, module, group, pending, known)
            elif answer.__class__ is not Encoded:  # the same group's every partition, asked again: the same bytes
                answer = every_partition[key] = Encoded(encode_entity(answer))
            groups.append(answer)
        return make(module.OffsetFetchResponse, throttle_time=datetime.timedelta(0), groups=tuple(groups))
    stable = _may_require_stable(request) and request.require_stable
    topics = await _topics(context, module, request.group_id, request.topics, batched=False,
                           pending=_Pending(context.broker) if stable else None, known=known)
    return make(module.OffsetFetchResponse, throttle_time=datetime.timedelta(0), topics=topics,
                error_code=ErrorCode.NONE)


class _Pending:
    """The partitions each group has a transactional offset pending on, read in one pass over the transactions when
    the request first asks (a pass per group grew with the groups asked times the transactional ids), then kept
    for the request: an offset that settles while a long request yields is answered as it stood."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._by_group: dict[str, set[tuple[str, int]]] | None = None

    def of(self, group: str) -> set[tuple[str, int]]:
        if self._by_group is None:
            self._by_group = pending_offsets(self._broker.store.entities("transactions").values())
        return self._by_group.get(group, set())


def _member(group: OffsetFetchRequestGroup) -> tuple[str, int]:
    """Who asks for the group (v9 consumer group members): their answers may differ."""
    return (group.member_id or "", int(group.member_epoch)) if _names_member(group) else ("", -1)


async def _group(context: RequestContext, module: Any, group: OffsetFetchRequestGroup, pending: _Pending | None,
                 known: dict[tuple[str, str, int], Encoded]) -> Any:
    """One group of a batched fetch; v9 members of a consumer group must send their current epoch. A group the
    principal may not DESCRIBE is GROUP_AUTHORIZATION_FAILED (v1-7 are refused as a whole,
    `compat.authorization_rules`)."""
    if not allowed(context, AclOperation.DESCRIBE, ResourceType.GROUP, group.group_id):
        return make(module.OffsetFetchResponseGroup, group_id=group.group_id,
                    error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, topics=())
    consumer = consumer_group(context.broker, group.group_id)
    if consumer is not None and _names_member(group):
        try:
            check_member_epoch(consumer, group.member_id, int(group.member_epoch),
                               commit=False)
        except DomainError as error:
            return make(module.OffsetFetchResponseGroup, group_id=group.group_id, error_code=error_code_for(error),
                        topics=())
    return make(module.OffsetFetchResponseGroup, group_id=group.group_id, error_code=ErrorCode.NONE,
                topics=await _topics(context, module, group.group_id, group.topics, batched=True,
                                     pending=pending, known=known))


async def _topics(context: RequestContext, module: Any, group_id: str, requested: Sequence[Any] | None,
                  batched: bool, pending: _Pending | None, known: dict[tuple[str, str, int], Encoded]
                  ) -> tuple[Any, ...]:
    """``known``: the request's partition answers so far, by group, topic and partition; a partition asked for
    again is answered with the same bytes (passed to the socket by reference, `framing.frame_pieces`).
    ``pending``: the transactional offsets not yet settled, when the request requires stable offsets."""
    topic_cls = module.OffsetFetchResponseTopics if batched else module.OffsetFetchResponseTopic
    partition_cls = module.OffsetFetchResponsePartitions if batched else module.OffsetFetchResponsePartition
    broker = context.broker
    offsets = committed_offsets(broker, group_id)
    unstable = pending.of(group_id) if pending is not None else set()
    wanted: dict[str, list[int]] = {}
    denied: dict[str, list[int]] = {}
    unknown_ids: dict[uuid.UUID | None, list[int]] = {}
    by_id = has_field(topic_cls, "topic_id")
    checks = broker.authorizer is not None
    if requested is None:  # every partition: those of topics the principal may not DESCRIBE are left out
        for topic, partition in offsets.partitions() if offsets is not None else ():
            if (not by_id or broker.topic(topic) is not None) and (
                    not checks or allowed(context, AclOperation.DESCRIBE, ResourceType.TOPIC, topic)):
                wanted.setdefault(topic, []).append(partition)
    else:  # named: answered TOPIC_AUTHORIZATION_FAILED, after the others (as Kafka appends them)
        for entry in requested:
            name = _name_of(broker, entry)
            if name is None:
                unknown_ids.setdefault(entry.topic_id, []).extend(int(index) for index in entry.partition_indexes)
                continue
            readable = not checks or allowed(context, AclOperation.DESCRIBE, ResourceType.TOPIC, name)
            (wanted if readable else denied).setdefault(name, []).extend(
                int(index) for index in entry.partition_indexes)

    def topic_answer(name: str, partitions: tuple[Any, ...]) -> Any:
        if by_id:
            state = broker.topic(name)
            return make(topic_cls, topic_id=uuid.UUID(bytes=state.topic_id) if state is not None else None,
                        partitions=partitions)
        return make(topic_cls, name=name, partitions=partitions)

    topics = []
    answered = 0
    for topic, indexes in wanted.items():
        partitions = []
        for index in indexes:
            answered += 1
            if answered % PARTITIONS_PER_TURN == 0:
                await give_way()
            key = (group_id, topic, index)
            answer = known.get(key)
            if answer is None:
                committed = offsets.get(topic, index) if offsets is not None else None
                answer = known[key] = Encoded(encode_entity(make(
                    partition_cls, partition_index=index,
                    error_code=ErrorCode.UNSTABLE_OFFSET_COMMIT if (topic, index) in unstable else ErrorCode.NONE,
                    committed_offset=committed.offset if committed else -1,
                    committed_leader_epoch=committed.leader_epoch if committed else -1,
                    metadata=committed.metadata if committed and committed.metadata is not None else "",
                )))
            partitions.append(answer)
        topics.append(topic_answer(topic, tuple(partitions)))
    for topic, indexes in denied.items():
        topics.append(topic_answer(topic, _refused(partition_cls, indexes, ErrorCode.TOPIC_AUTHORIZATION_FAILED)))
    for topic_id, indexes in unknown_ids.items():
        topics.append(make(topic_cls, topic_id=topic_id,
                           partitions=_refused(partition_cls, indexes, ErrorCode.UNKNOWN_TOPIC_ID)))
    return tuple(topics)


def _refused(partition_cls: Any, indexes: list[int], code: ErrorCode) -> tuple[Any, ...]:
    return tuple(make(partition_cls, partition_index=index, error_code=code, committed_offset=-1,
                      committed_leader_epoch=-1, metadata="") for index in indexes)


def _name_of(broker: Broker, entry: Any) -> str | None:
    """The name of a topic the request names: itself, or (v10) its id's topic's, ``None`` when no topic has it."""
    if not has_field(entry, "topic_id"):
        return str(entry.name)
    state = broker.topic_by_id(entry.topic_id) if entry.topic_id is not None else None
    return state.name if state is not None else None


def _batched(request: OffsetFetchRequest) -> TypeIs[
    v8.OffsetFetchRequest | v9.OffsetFetchRequest | v10.OffsetFetchRequest
]:
    """v8+ fetch for several groups at once."""
    return has_field(request, "groups")


def _may_require_stable(request: OffsetFetchRequest) -> TypeIs[
    v7.OffsetFetchRequest | v8.OffsetFetchRequest | v9.OffsetFetchRequest | v10.OffsetFetchRequest
]:
    """v7+ may ask to wait for pending transactional commits (UNSTABLE_OFFSET_COMMIT)."""
    return has_field(request, "require_stable")


def _names_member(group: OffsetFetchRequestGroup) -> TypeIs[
    v9.request.OffsetFetchRequestGroup | v10.request.OffsetFetchRequestGroup
]:
    """v9 members of a consumer group send their id and epoch."""
    return has_field(group, "member_id")
