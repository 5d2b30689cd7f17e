"""Fetch (key 1), versions 4-18: stored batches returned as they are, never decoded (v18's high watermark, KIP-1166,
is a follower's: ignored).

A partition answers from the batch holding the fetch offset (clients skip records below it, as with
Kafka's segment reads), up to the high watermark, which moves only when records are durable. The
first batch is always returned whole even above ``max_bytes`` (KIP-74), so a large batch never
stalls a consumer; ``max_bytes`` is capped by the broker's ``fetch.max.bytes``. Long polls wait for a
commit that appends records to a partition they asked for, up to ``max_wait``. v13+ name
topics by id. v7+ keep incremental fetch sessions (KIP-227) as Kafka does (`compat.fetch_sessions`): a full fetch
of epoch 0 opens one, an incremental one names only what changed and is answered only what changed.
``max_bytes`` and ``partition_max_bytes`` are read as Kafka reads them: the answer's first
batch comes whole even when either is 0, and a negative one fails the partition it would read (UNKNOWN_SERVER_ERROR);
a negative ``max_bytes`` holds for the first partition asked only.
A partition named more than once is read and answered once, as Kafka 4.4 does (`_asked`); one whose
current leader epoch (v9+) is not the partition's is refused (`leader_epochs`).

A Fetch from a replica (replica id 0 or more: v15+ in its replica state) is a follower's, and logwright has no
followers: as Kafka 4.4 answers a broker id not among a partition's replicas, each partition it has is
NOT_LEADER_OR_FOLLOWER (with the current leader from v16, KIP-951), UNKNOWN_LEADER_EPOCH when the request names
the leader epoch, and nothing is read. Under an authorizer a follower needs CLUSTER_ACTION on the cluster; without
it every partition asked is TOPIC_AUTHORIZATION_FAILED (`_follower_answers`).

Every answer carries the last stable offset (LSO: the first offset of the earliest open transaction, see
`core.partition_transactions`). READ_COMMITTED (isolation level 1) reads only below it and gets the
aborted transactions (producer id, first offset) overlapping what it read, so clients drop their records;
control batches are returned like any other, clients skip them.
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

from logwright.compat.aborted_transactions import aborted_between
from logwright.compat.authorization import allowed, allowed_on_cluster
from logwright.compat.broker import Broker
from logwright.compat.client_quota_enforcement import FETCH
from logwright.compat.errors import ErrorCode
from logwright.compat.fetch_sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    CachedPartition,
    FetchSession,
    PartitionKey,
    Refusal,
    next_epoch,
)
from logwright.compat.leader_epochs import PARTITION_LEADER_EPOCH, leader_epoch_error
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.compat.turns import give_way
from logwright.compat.wire.encoder import Encoded, encode_entity
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.log.catalog import TopicState
from logwright.eventstore.file_ranges import FileRange, StoredPiece

if TYPE_CHECKING:
    from kio.schema.fetch import v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18
    from typing_extensions import TypeIs

    FetchRequest: TypeAlias = (
        v4.FetchRequest | v5.FetchRequest | v6.FetchRequest | v7.FetchRequest | v8.FetchRequest | v9.FetchRequest
        | v10.FetchRequest | v11.FetchRequest | v12.FetchRequest | v13.FetchRequest | v14.FetchRequest
        | v15.FetchRequest | v16.FetchRequest | v17.FetchRequest | v18.FetchRequest
    )
    """Every version served: mypy checks each field read against all of them."""


@handler(1, "Fetch", 4, 18, at_once=True)
async def handle(context: RequestContext, request: FetchRequest) -> Any:
    """Started in the turn that read the request (`start_at_once`): a Fetch with records to return is answered a
    turn sooner, and a consumer keeps one Fetch in flight, so under a busy loop each turn it waits is a turn its
    reads stop. A long poll hands itself to a task before it waits (`asyncio.timeout` needs one)."""
    broker = context.broker
    version = context.api_version
    session: FetchSession | None = None
    follower = _replica_id(request) >= 0
    may_read = _readable(context) if not follower else None
    refused_follower = follower and not allowed_on_cluster(context, AclOperation.CLUSTER_ACTION)
    opens_session = False
    epoch = FINAL_EPOCH
    if _names_session(request):
        session_id, epoch = int(request.session_id), int(request.session_epoch)
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):  # a full fetch closes the session it names
            if session_id != INVALID_SESSION_ID:
                broker.fetch_sessions.close(session_id)
            opens_session = epoch == INITIAL_EPOCH
        else:
            taken = broker.fetch_sessions.incremental(session_id, epoch, version >= 13, _asked_params(request),
                                                      _forgotten(request), broker.clock.now_ms())
            if isinstance(taken, Refusal):
                return _session_refused(version, taken.value, INVALID_SESSION_ID)
            session = taken  # None: the update left it empty, closed; the request is answered without one

    def to_read(read_as_of: object) -> tuple[dict[tuple[object, int], tuple[_Topic, Any]], list[int], list[int]]:
        """The partitions to read; the ids and high watermarks of those a session skips (`_session_asked`)."""
        if session is None:
            return _asked(broker, request, may_read), [], []
        return _session_asked(broker, session, read_as_of, may_read)

    if not refused_follower and int(request.isolation_level) not in (0, 1):
        asked, _, _ = to_read(None)  # refused once it would read a partition it has, as Kafka
        if any(topic.state is not None and 0 <= index < len(topic.state.partition_ids)
               for (_, index), (topic, _) in asked.items()):
            if follower:  # Kafka reads a follower's isolation level before its partitions: the whole request fails
                return _session_refused(version, ErrorCode.UNKNOWN_SERVER_ERROR, INVALID_SESSION_ID)
            return _refused(broker, version, _asked(broker, request, may_read), ErrorCode.UNKNOWN_SERVER_ERROR,
                            int(request.session_id) if _names_session(request) else INVALID_SESSION_ID)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(request.max_wait.total_seconds(), 0.0)
    min_bytes = int(request.min_bytes)
    quotas = broker.client_quotas
    quota_cap = quotas.fetch_cap(context.client_id, context.principal) if quotas.fetching else None
    if quota_cap is not None:
        min_bytes = min(min_bytes, quota_cap)
    while True:
        read_as_of = (broker.catalog_version, broker.log_starts_version)
        asked, quiet_ids, quiet_marks = to_read(read_as_of)
        if follower:
            answers, total_bytes, had_error, partition_ids, watermarks, gave_way = _follower_answers(
                version, asked, refused_follower)
            break
        answers, total_bytes, had_error, partition_ids, watermarks, gave_way = await _read(
            broker, version, request, asked, quota_cap)
        if quiet_ids:  # a long poll waits on the partitions it skipped too (`_read`'s lists are its own)
            partition_ids += quiet_ids
            watermarks += quiet_marks
        remaining = deadline - loop.time()
        if total_bytes >= min_bytes or had_error or remaining <= 0:
            break
        _close(piece for _, _, answer in answers for piece in answer[6] or ())
        if gave_way and _moved(broker, partition_ids, watermarks):
            continue  # records came while the read gave way: a wait would only hear of later ones
        if asyncio.current_task() is None:  # started at once, outside a task: one takes the rest over from here
            await asyncio.sleep(0)
            if _moved(broker, partition_ids, watermarks):
                continue  # a commit in the turn it waited for its task woke no waiter of its own
        await broker.wait_for_data(remaining, partition_ids)
    answered_session = INVALID_SESSION_ID
    if session is not None and session.epoch != next_epoch(epoch):  # a duplicate request took the epoch meanwhile
        _close(piece for _, _, answer in answers for piece in answer[6] or ())
        return _session_refused(version, ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.session_id)
    if quota_cap is not None:  # the records' bytes recorded on the client's consumer byte-rate quota
        throttle_ms = quotas.record(FETCH, context.client_id, context.connection_id, total_bytes,
                                   context.principal)
        if throttle_ms:  # answered empty, and what it read not counted, as Kafka answers it
            quotas.unrecord(FETCH, context.client_id, total_bytes, context.principal)
            _close(piece for _, _, answer in answers for piece in answer[6] or ())
            return _throttled(version, throttle_ms, session.session_id if session is not None else INVALID_SESSION_ID)
    if session is not None:
        answers = _changed(session, answers)
        session.read_as_of = read_as_of
        answered_session = session.session_id
    elif opens_session:
        answered_session = broker.fetch_sessions.open(
            [_cached(key, asked[key][1], answer) for key, _, answer in answers], version >= 13, broker.clock.now_ms())
        if answered_session != INVALID_SESSION_ID:
            broker.fetch_sessions.sessions[answered_session].read_as_of = read_as_of
    module = response_module("fetch", version)
    return make(
        module.FetchResponse,
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.NONE,
        session_id=answered_session,
        responses=tuple(
            make(module.FetchableTopicResponse, topic=name, topic_id=topic_id,
                 partitions=tuple(_partition_data(module, answer, broker.node_id) for answer in partitions))
            for name, topic_id, partitions in _by_topic(answers)
        ),
    )


def _replica_id(request: FetchRequest) -> int:
    """Who fetches: a consumer's id is negative (-1; -2 and -3 are Kafka's debugging and future-local ids, read as
    a consumer's), a broker replica's its node id; v15+ carry it in the replica state (KIP-903)."""
    state = getattr(request, "replica_state", None)
    return int(state.replica_id) if state is not None else int(getattr(request, "replica_id", -1))


def _follower_answers(version: int, asked: dict[tuple[object, int], tuple[_Topic, Any]], refused: bool
                      ) -> tuple[list[_Answered], int, bool, list[int], list[int], bool]:
    """A follower's Fetch answered as `_read` answers (nothing read). ``refused``: the principal may not
    CLUSTER_ACTION, and every partition asked is TOPIC_AUTHORIZATION_FAILED in the order asked, known or not, as
    Kafka refuses a follower before it looks."""
    if refused:
        return [(key, topic, (key[1], ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1, -1, None, None))
                for key, (topic, _) in asked.items()], 0, bool(asked), [], [], False
    answered: list[_Answered] = []
    missing: list[_Answered] = []  # Kafka sorts them out before it reads: after the others, in the order asked
    for key, (topic, partition) in asked.items():
        index = key[1]
        state = topic.state
        if state is None or not 0 <= index < len(state.partition_ids):
            missing.append((key, topic, (index, topic.missing_code, -1, -1, -1, [], None)))
            continue
        epoch = int(getattr(partition, "current_leader_epoch", -1))
        code = leader_epoch_error(epoch, negative_is_none=True) if version >= 9 else None
        if code is None:  # Kafka's followerReplicaOrThrow: an epoch named means "not yet a replica of it"
            code = ErrorCode.UNKNOWN_LEADER_EPOCH if epoch >= 0 else ErrorCode.NOT_LEADER_OR_FOLLOWER
        answered.append((key, topic, (index, code, -1, -1, -1, None, None)))
    return [*answered, *missing], 0, bool(asked), [], [], False


def _names_session(request: FetchRequest) -> TypeIs[
    v7.FetchRequest | v8.FetchRequest | v9.FetchRequest | v10.FetchRequest | v11.FetchRequest | v12.FetchRequest
    | v13.FetchRequest | v14.FetchRequest | v15.FetchRequest | v16.FetchRequest | v17.FetchRequest | v18.FetchRequest
]:
    """v7+ carry a fetch session's id and epoch."""
    return has_field(request, "session_epoch")


def _throttled(version: int, throttle_ms: int, session_id: int) -> Any:
    """A Fetch that would take its client over its consumer byte-rate quota, answered as Kafka answers it: no
    partitions, the throttle time, and the session it named (its epoch moved on, what it last answered unchanged;
    a full fetch opens none)."""
    module = response_module("fetch", version)
    return make(module.FetchResponse, throttle_time=datetime.timedelta(milliseconds=throttle_ms),
                error_code=ErrorCode.NONE, session_id=session_id, responses=())


def _session_refused(version: int, code: int, session_id: int) -> Any:
    """The whole request refused for its session (``code``), as Kafka answers it: no partitions."""
    module = response_module("fetch", version)
    return make(module.FetchResponse, throttle_time=datetime.timedelta(0), session_id=session_id, responses=(),
                error_code=ErrorCode(code))


def _asked_params(request: FetchRequest) -> list[tuple[PartitionKey, int, int, int, int, int]]:
    """An incremental request's partitions as a session keeps them: key (topic id from v13, else name) and what is
    asked (fetch offset, partition max bytes, log start offset, current leader epoch, last fetched epoch)."""
    return [((fetch_topic.topic_id if _named_by_id(fetch_topic) else fetch_topic.topic, int(partition.partition)),
             *_params(partition))
            for fetch_topic in request.topics for partition in fetch_topic.partitions]


def _params(partition: Any) -> tuple[int, int, int, int, int]:
    """What a request's partition asks; the epochs are -1 in versions that do not carry them (v7-v8, v7-v11)."""
    return (int(partition.fetch_offset), int(partition.partition_max_bytes), int(partition.log_start_offset),
            int(getattr(partition, "current_leader_epoch", -1)), int(getattr(partition, "last_fetched_epoch", -1)))


def _forgotten(request: FetchRequest) -> list[PartitionKey]:
    if not _names_session(request):
        return []
    forgotten_topics: Any = request.forgotten_topics_data  # v7-v12 name topics, v13+ give ids
    return [(forgotten.topic_id if has_field(forgotten, "topic_id") else forgotten.topic, int(index))
            for forgotten in forgotten_topics for index in forgotten.partitions]


def _cached(key: tuple[object, int], partition: Any, answer: PartitionAnswer) -> CachedPartition:
    """A partition of a session opened by a full fetch: what it asked and what it was answered."""
    return CachedPartition(key, *_params(partition), high_watermark=answer[2], local_log_start=answer[4])


def _changed(session: FetchSession, answers: list[_Answered]) -> list[_Answered]:
    """An incremental answer: the partitions with records, errors or moved offsets (`CachedPartition.must_answer`);
    those answered with records go to the end of the session's order."""
    kept: list[_Answered] = []
    for key, topic, answer in answers:
        cached = session.partitions.get(key)
        has_records = bool(answer[6])
        if cached is None or not cached.must_answer(has_records, answer[1], answer[2], answer[4]):
            continue
        if has_records:
            session.answered_with_records(cached.key)
        kept.append((key, topic, answer))
    return kept


def _refused(broker: Broker, version: int, asked: dict[tuple[object, int], tuple[_Topic, Any]],
             code: ErrorCode, session_id: int) -> Any:
    """The whole request failed with ``code``, as Kafka answers one it cannot take (an isolation level it does not
    know, found when it reads a partition it has): the error at the top and in every partition the request names
    (not those of its session), their offsets -1, and the session id the request gave (its session closed, or
    updated with its epoch moved on, as before any read)."""
    module = response_module("fetch", version)
    topics: dict[object, tuple[_Topic, list[PartitionAnswer]]] = {}
    for (named, index), (topic, _) in asked.items():
        topics.setdefault(named, (topic, []))[1].append((index, code, -1, -1, -1, [], None))
    return make(module.FetchResponse, throttle_time=datetime.timedelta(0), error_code=code, session_id=session_id,
                responses=tuple(make(module.FetchableTopicResponse, topic=topic.name, topic_id=topic.topic_id,
                                     partitions=tuple(_partition_data(module, answer, broker.node_id)
                                                      for answer in answers))
                                for topic, answers in topics.values()))


READ_SLICE_BYTES = 4 * 1024 * 1024
"""A partition read stops here and reads on after giving way (`_read_on`), and a Fetch gives way between partitions
each time it has read this much more: a consumer asking 55 MiB of 78-byte batches (700,000 stored rows) held every
other client about 0.4 s. Clients' default per-partition limit (1 MiB) never makes a read stop."""

_OFFSETS_ONLY: dict[tuple[str, int, ErrorCode, int, int, int, bool, int], Encoded] = {}
OFFSETS_ONLY_KEPT = 50_000
"""Encoded answers of partitions with nothing to return, by version and content: a consumer of 10,000 partitions
asks for all of them in every Fetch, and building and encoding each unchanged empty answer was about a third of
the broker's time for such a Fetch."""


def _partition_data(module: Any, answer: PartitionAnswer, node_id: int) -> Any:
    """The answer's ``PartitionData``; one with no records and no aborted transactions is encoded once."""
    index, code, high_watermark, stable, log_start, aborted, records = answer
    if records or aborted:
        return _partition_entity(module, answer, node_id)
    key = (module.__name__, index, code, high_watermark, stable, log_start, aborted is None, node_id)
    encoded = _OFFSETS_ONLY.get(key)
    if encoded is None:
        if len(_OFFSETS_ONLY) >= OFFSETS_ONLY_KEPT:
            _OFFSETS_ONLY.clear()
        encoded = _OFFSETS_ONLY[key] = Encoded(encode_entity(_partition_entity(module, answer, node_id)))
    return encoded


def _partition_entity(module: Any, answer: PartitionAnswer, node_id: int) -> Any:
    """From v16 a NOT_LEADER_OR_FOLLOWER names the current leader, this broker at epoch 0 (KIP-951, as Kafka 4.4:
    without its endpoint in ``node_endpoints``)."""
    index, code, high_watermark, stable, log_start, aborted, records = answer
    leader = ({"current_leader": make(module.LeaderIdAndEpoch, leader_id=node_id, leader_epoch=PARTITION_LEADER_EPOCH)}
              if code == ErrorCode.NOT_LEADER_OR_FOLLOWER and has_field(module.FetchResponse, "node_endpoints")
              else {})
    return make(module.PartitionData, partition_index=index, error_code=code, high_watermark=high_watermark,
                last_stable_offset=stable, log_start_offset=log_start,
                aborted_transactions=tuple(
                    make(module.AbortedTransaction, producer_id=producer_id, first_offset=first_offset)
                    for producer_id, first_offset in aborted
                ) if aborted is not None else None,
                preferred_read_replica=-1, records=records if records is not None else [], **leader)  # Kafka: empty


PartitionAnswer = tuple[int, ErrorCode, int, int, int, list[tuple[int, int]] | None, list[StoredPiece] | None]
"""Index, error, high watermark, last stable offset, log start, aborted transactions (producer id, first
offset; ``None`` for READ_UNCOMMITTED), and the stored batches: the encoder writes them uncopied, and a run of
them in a batch file goes to the socket with sendfile (`FileRange`, `compat.server`)."""


def last_stable_offset(broker: Broker, partition_id: int) -> int:
    return broker.partition_positions(partition_id)[1]


class _Topic(NamedTuple):
    """A topic as the answer names it; ``state`` is ``None`` for one the broker does not have."""

    name: str | None
    topic_id: uuid.UUID | None
    state: TopicState | None
    missing_code: ErrorCode


def _asked(broker: Broker, request: FetchRequest, may_read: Readable) -> dict[tuple[object, int], tuple[_Topic, Any]]:
    """Every partition asked for, as Kafka 4.4 takes a request: once, where it was first named, with the fetch
    position it was last given (a map by topic and partition), so a partition named 10,000 times is read once."""
    topics: dict[object, _Topic] = {}
    asked: dict[tuple[object, int], tuple[_Topic, Any]] = {}
    for fetch_topic in request.topics:
        named: object
        if by_id := _named_by_id(fetch_topic):
            named = fetch_topic.topic_id
        else:
            named = fetch_topic.topic
        topic = topics.get(named)
        if topic is None:
            topic = topics[named] = _resolved(broker, named, by_id, may_read)
        for partition in fetch_topic.partitions:
            asked[named, int(partition.partition)] = topic, partition
    return asked


def _session_asked(broker: Broker, session: FetchSession, read_as_of: object, may_read: Readable
                   ) -> tuple[dict[tuple[object, int], tuple[_Topic, Any]], list[int], list[int]]:
    """A session's partitions to read, in its order, each with what it last asked (a `CachedPartition` reads as a
    request's partition does); and the ids and high watermarks of those skipped as quiet, which a long poll still
    waits on. Quiet: the catalog and log starts are as they were when the session's last answer was read, the
    request did not name the partition, and its high watermark is both the one last answered and its fetch offset,
    so a read would find no records, no error and no moved offset (`FetchSession.read_as_of`). An idle consumer
    of 1,000 partitions cost 2.7 ms a fetch reading them all."""
    topics: dict[object, _Topic] = {}
    asked: dict[tuple[object, int], tuple[_Topic, Any]] = {}
    quiet_ids: list[int] = []
    quiet_marks: list[int] = []
    may_skip = session.read_as_of == read_as_of
    high_watermarks = broker.high_watermarks
    asked_now = session.asked_now
    for key, cached in session.partitions.items():
        named = key[0]
        topic = topics.get(named)
        if topic is None:
            topic = topics[named] = _resolved(broker, named, session.uses_topic_ids, may_read)
        if may_skip and (state := topic.state) is not None and key not in asked_now:
            partition_ids = state.partition_ids
            index = key[1]
            if 0 <= index < len(partition_ids):
                partition_id = partition_ids[index]
                high_watermark = high_watermarks.get(partition_id, 0)
                if high_watermark == cached.high_watermark == cached.fetch_offset:
                    quiet_ids.append(partition_id)
                    quiet_marks.append(high_watermark)
                    continue
        asked[key] = topic, cached
    return asked, quiet_ids, quiet_marks


def _resolved(broker: Broker, named: Any, by_id: bool, may_read: Readable) -> _Topic:
    """The topic a request names by id (v13+) or by name, as the answer names it. One the principal may not READ
    is answered TOPIC_AUTHORIZATION_FAILED whether it exists or not, as Kafka checks before it looks (an unknown
    topic id is UNKNOWN_TOPIC_ID first: it has no name to check)."""
    if by_id:
        state = broker.topic_by_id(named) if named is not None else None
        if state is None:
            return _Topic(None, named, None, ErrorCode.UNKNOWN_TOPIC_ID)
        topic_id = uuid.UUID(bytes=state.topic_id)
        if may_read is not None and not may_read(state.name):
            return _Topic(state.name, topic_id, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        return _Topic(state.name, topic_id, state, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if may_read is not None and not may_read(named):
        return _Topic(named, None, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    state = broker.topic(named)
    if state is None:
        return _Topic(named, None, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return _Topic(state.name, uuid.UUID(bytes=state.topic_id), state, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


Readable = Callable[[str], bool] | None
"""Whether the principal may READ a topic (``None``: no authorizer, every topic)."""


def _readable(context: RequestContext) -> Readable:
    if context.broker.authorizer is None:
        return None
    return lambda name: allowed(context, AclOperation.READ, ResourceType.TOPIC, name)


_Answered = tuple[tuple[object, int], _Topic, PartitionAnswer]
"""A partition's answer with the key it was asked by (topic name or id, index) and its topic."""


async def _read(broker: Broker, version: int, request: FetchRequest,
                asked: dict[tuple[object, int], tuple[_Topic, Any]], quota_cap: int | None
                ) -> tuple[list[_Answered], int, bool, list[int], list[int], bool]:
    """The partitions' answers, the bytes of records in them, whether a partition erred, the partitions read (those
    a long poll waits on), their high watermarks as it read them, and whether the read gave way (`READ_SLICE_BYTES`).

    As Kafka 4.4 answers: the partitions the broker has first, read in the order asked, then those of topic ids it
    does not know, then the other partitions it does not have (their offsets -1, aborted transactions empty)."""
    budget = min(int(request.max_bytes), int(broker.broker_config("fetch.max.bytes")))  # < 0: Kafka fails a read
    if quota_cap is not None:  # a consumer byte-rate quota: one quota window's worth at most, as Kafka caps it
        budget = min(budget, quota_cap)
    read_committed = int(request.isolation_level) == 1
    total = given_way_at = 0
    gave_way = False
    watermarks: list[int] = []
    partition_ids: list[int] = []
    answered: list[_Answered] = []
    unknown_ids: list[_Answered] = []
    unknown: list[_Answered] = []
    positions = broker.partition_positions
    for position, (key, (topic, partition)) in enumerate(asked.items()):
        index = key[1]
        if position:  # a negative max_bytes is only the first partition's (Kafka's limit is at least 0 after it)
            budget = max(budget, 0)
        state = topic.state
        if state is None or not 0 <= index < len(state.partition_ids):
            (unknown_ids if topic.missing_code == ErrorCode.UNKNOWN_TOPIC_ID else unknown).append(
                (key, topic, (index, topic.missing_code, -1, -1, -1, [], None)))
            continue
        if version >= 9 and (code := leader_epoch_error(int(partition.current_leader_epoch),
                                                        negative_is_none=True)) is not None:
            answered.append((key, topic, (index, code, -1, -1, -1, None, None)))
            continue
        partition_id = state.partition_ids[index]
        partition_ids.append(partition_id)
        high_watermark, stable, log_start = positions(partition_id)
        watermarks.append(high_watermark)
        offset = int(partition.fetch_offset)
        if offset < log_start or offset > high_watermark:
            answered.append((key, topic, (index, ErrorCode.OFFSET_OUT_OF_RANGE, -1, -1, -1, None, None)))
            continue
        end = stable if read_committed else high_watermark
        batches: list[StoredPiece] = []
        read_to = offset  # the aborted transactions listed are those overlapping what is read, as in Kafka
        partition_max = int(partition.partition_max_bytes)
        limit = min(partition_max, budget)
        if offset < end and limit < 0:  # Kafka's read of a negative size fails, alone
            answered.append((key, topic, (index, ErrorCode.UNKNOWN_SERVER_ERROR, -1, -1, -1, None, None)))
            continue
        if offset < end and (limit > 0 or not total):  # the answer's first batch comes whole, whatever the limits
            limit = max(limit, 1)
            pieces = broker.store.read_batch_pieces(partition_id, offset, min(limit, READ_SLICE_BYTES),
                                                    end_offset=end - 1,
                                                    first_within=budget if total and budget < partition_max else None)
            if total and pieces and len(pieces[0]) > budget:
                _close(pieces)
            elif pieces:
                batches, read_to = list(pieces), min(pieces.next_offset, end)  # the encoder takes a plain list
                if limit > READ_SLICE_BYTES:
                    read_to = await _read_on(broker, partition_id, batches, read_to, end, limit)
                    gave_way = True
            size = sum(map(len, batches))
            total += size
            budget = max(budget - size, 0)
            if total - given_way_at >= READ_SLICE_BYTES:  # many partitions' reads add up as one partition's do
                await give_way()
                given_way_at, gave_way = total, True
        aborted = _aborted(broker, partition_id, offset, read_to) if read_committed else None
        answered.append((key, topic, (index, ErrorCode.NONE, high_watermark, stable, log_start, aborted, batches)))
    had_error = bool(unknown_ids or unknown) or any(answer[1] != ErrorCode.NONE for _, _, answer in answered)
    return [*answered, *unknown_ids, *unknown], total, had_error, partition_ids, watermarks, gave_way


def _by_topic(answers: list[_Answered]) -> list[tuple[str | None, uuid.UUID | None, list[PartitionAnswer]]]:
    """A topic's consecutive partitions under one entry, as Kafka's answer has them."""
    topics: list[tuple[str | None, uuid.UUID | None, list[PartitionAnswer]]] = []
    last: _Topic | None = None
    for _, topic, answer in answers:
        if topic is not last:
            topics.append((topic.name, topic.topic_id, []))
            last = topic
        topics[-1][2].append(answer)
    return topics


def _moved(broker: Broker, partition_ids: list[int], watermarks: list[int]) -> bool:
    """Whether records came to any of the partitions read since their high watermarks were ``watermarks``."""
    return any(broker.high_watermark(partition_id) != seen
               for partition_id, seen in zip(partition_ids, watermarks, strict=True))


async def _read_on(broker: Broker, partition_id: int, batches: list[StoredPiece], read_to: int, end: int,
                   limit: int) -> int:
    """Read on after a first slice into ``batches``, a slice at a time up to ``limit`` bytes in all, giving way
    between slices; where the read stopped. The batches taken are those one read of ``limit`` would take (each
    while the total fits; only the answer's very first may be larger, and that was the first slice's)."""
    left = limit - sum(map(len, batches))
    while read_to < end and left > 0:
        await give_way()
        if not broker.partition_exists(partition_id) or broker.partition_positions(partition_id)[2] > read_to:
            break  # deleted or truncated past what was read meanwhile: the answer ends at what it has
        pieces = broker.store.read_batch_pieces(partition_id, read_to, min(left, READ_SLICE_BYTES), end_offset=end - 1)
        if not pieces or len(pieces[0]) > left:
            _close(pieces)
            break
        batches.extend(pieces)
        left -= sum(map(len, pieces))
        read_to = min(pieces.next_offset, end)
    return read_to


def _close(pieces: Iterable[StoredPiece]) -> None:
    """Close the file ranges of pieces not sent."""
    for piece in pieces:
        if isinstance(piece, FileRange):
            piece.close()


def _aborted(broker: Broker, partition_id: int, start: int, end: int) -> list[tuple[int, int]]:
    """The aborted transactions a read_committed answer lists for records ``start..end - 1``: none for an empty read,
    looked up in nothing (an idle consumer's Fetch reads every partition empty; the lookups were a seventh of it)."""
    if start >= end:
        return []
    return [(producer_id, first_offset)
            for producer_id, first_offset, _ in aborted_between(broker.store, partition_id, start, end)]


def _named_by_id(fetch_topic: object) -> TypeIs[
    v13.request.FetchTopic | v14.request.FetchTopic | v15.request.FetchTopic | v16.request.FetchTopic
    | v17.request.FetchTopic | v18.request.FetchTopic
]:
    """v13+ name topics by id."""
    return has_field(fetch_topic, "topic_id")
