"""The async glue around the sans-I/O group coordinator (`core.group_sessions`).

JoinGroup and SyncGroup may have to wait for other members (the rebalance barrier); here each waiting
request gets a future, and replies the core hands back resolve them once the group's events are
durable. A `DeadlineTimer` sleeps until the core's next deadline (a session or rebalance timeout, a
pending member id, the end of the initial rebalance delay) on `broker.clock` and runs `tick`, which
LogwrightAdvanceClock also runs after moving a manual clock. One coordinator serves one broker, built with
it (`logwright.compat.wiring`).

After a restart, members' session deadlines restart from the broker's start (when this coordinator is
built and loads the groups), as Kafka's restart them when a coordinator loads its groups.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from kio.schema.consumer_protocol_subscription.v0.data import ConsumerProtocolSubscription
from kio.serial import entity_reader
from logwright.compat.broker import Broker
from logwright.compat.coordinators.deadline_timer import DeadlineTimer
from logwright.compat.turns import give_way
from logwright.core.errors import DomainError
from logwright.core.events import Event, GroupDeleted, OffsetCommitted, OffsetDeleted
from logwright.core.groups.group_membership import GroupLimits, Heartbeat, JoinGroup, SyncGroup
from logwright.core.groups.group_offsets import PROJECTION_NAME as OFFSETS_PROJECTION
from logwright.core.groups.group_offsets import (
    GroupOffsets,
    group_key,
    group_offsets,
    groups_with_offsets,
    row_deletion,
    rows_on_topics,
    topics_with_offsets,
)
from logwright.core.groups.group_sessions import GroupSessions, JoinReply, Reply, SyncReply
from logwright.core.groups.groups import GroupState
from logwright.eventstore.interface import LoggedEvent

log = logging.getLogger(__name__)


def coordinator(broker: Broker) -> GroupCoordinator:
    """The broker's classic group coordinator."""
    return broker.coordinators.groups


def group_state(broker: Broker, group_id: str) -> GroupState | None:
    state = broker.store.state("groups", group_id)
    return state if isinstance(state, GroupState) else None


_read_subscription = entity_reader(ConsumerProtocolSubscription)


def subscribed_topics(state: GroupState | None) -> frozenset[str] | None:
    """Topics the members subscribe to; ``None`` when they cannot be read.

    Every version of the subscription starts with an int16 version and then the v0 fields, so the
    v0 schema reads the topic list of any version.
    """
    if state is None or not state.members:
        return frozenset()
    if state.protocol_type != "consumer" or state.protocol_name is None:
        return None
    topics: set[str] = set()
    for member in state.members:
        try:
            subscription, _ = _read_subscription(member.metadata(state.protocol_name), 2)
        except Exception:
            return None
        if subscription.topics is None:  # a null array where the schema has none: a subscription that does not read
            return None
        topics.update(subscription.topics)
    return frozenset(topics)


OFFSETS_DELETED_PER_TURN = 200
"""Offsets of deleted topics deleted before `forget_topic_offsets` yields to the event loop (1,000 at a time held it
15-20 ms a slice after a 5,000-partition topic's deletion)."""


ROWS_SEARCHED_PER_TURN = 20_000
"""Committed-offset rows looked at for a deleted topic's before `forget_topic_offsets` yields (about 3 ms)."""


async def forget_topic_offsets(broker: Broker, topics: Sequence[str]) -> None:
    """Delete every group's committed offsets on ``topics``, which were just deleted (Kafka's coordinator does the
    same: a topic created again under the name starts with no committed offsets).

    In slices, letting other requests run between them; a row committed again meanwhile (a new topic of the same
    name) is kept. Each deletion is independent of the others, as in Kafka, which deletes them after the topic."""
    states = broker.store.entities(OFFSETS_PROJECTION)
    # looked at in slices (a 1 M-row pass was one stretch), as they were when the deletion began: a row committed
    # anew meanwhile (a new topic of the same name) is another object, kept by the check below
    keys, values = list(states), list(states.values())
    rows: list[tuple[str, Any]] = []
    for start in range(0, len(keys), ROWS_SEARCHED_PER_TURN):
        if start:
            await give_way()
        end = start + ROWS_SEARCHED_PER_TURN
        rows += rows_on_topics(zip(keys[start:end], values[start:end], strict=True), topics)
    for start in range(0, len(rows), OFFSETS_DELETED_PER_TURN):
        if start:
            await give_way()
        doomed = [row_deletion(key) for key, state in rows[start:start + OFFSETS_DELETED_PER_TURN]
                  if states.get(key) is state]
        if doomed:
            broker.stage(doomed)
    if rows:
        await broker.durable()


def offsets_of_missing_topics(broker: Broker) -> list[str]:
    """Topics that no longer exist but still hold committed offsets: a process that stopped between a topic's
    deletion and its offsets' (`forget_topic_offsets` runs after the deletion is durable), or a store written
    before DeleteTopics deleted them. OffsetCommit refuses a topic that does not exist, so no such row is live."""
    states = broker.store.entities(OFFSETS_PROJECTION)
    return sorted(topic for topic in topics_with_offsets(states) if broker.topic(topic) is None)


def committed_offsets(broker: Broker, group_id: str) -> GroupOffsets | None:
    """The group's committed offsets (a view: read it in this turn); ``None`` when it has committed none."""
    return group_offsets(broker.store.entities(OFFSETS_PROJECTION), group_id)


class _BrokerGroupStore:
    """`GroupStore` over the broker's event store: reads the ``groups`` projection, stages events."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    def group(self, group_id: str) -> GroupState | None:
        return group_state(self._broker, group_id)

    def groups(self) -> Iterable[GroupState]:
        return [state for state in self._broker.store.entities("groups").values() if isinstance(state, GroupState)]

    def stage(self, events: Sequence[Event]) -> None:
        self._broker.stage(events)


MEMBER_ID_BYTES = 32_767
"""The longest member id: non-flexible answers (JoinGroup v0-5, DescribeGroups v0-4) carry it as an int16-length
string of UTF-8 bytes. The prefix is a client's instance or client id, up to 32,767 bytes itself."""


def _new_member_id(prefix: str) -> str:
    """Kafka's classic member id, the group instance id (else the client id), a dash and a UUID; a prefix too long
    for the id to fit `MEMBER_ID_BYTES` is cut (a whole character at a time), so every version can answer it."""
    suffix = f"-{uuid.uuid4()}"
    room = MEMBER_ID_BYTES - len(suffix)
    if len(prefix) * 4 > room and len(encoded := prefix.encode()) > room:
        prefix = encoded[:room].decode(errors="ignore")
    return prefix + suffix


class GroupCoordinator:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.sessions = GroupSessions(_BrokerGroupStore(broker), self.limits(), broker.clock.now_ms(),
                                      _new_member_id)
        self._waiters: dict[tuple[str, str, str], list[asyncio.Future[Reply]]] = {}
        self.timer = DeadlineTimer(broker.clock, self.sessions.next_deadline_ms, self.tick,
                                   "logwright-group-sessions")
        self._sweep: asyncio.Task[None] | None = None
        self._offset_groups: set[str] | None = None
        """Every group with committed offsets, once asked for (`groups_with_offsets`); kept by the commits."""
        broker.store.add_commit_listener(self._offsets_committed, (OffsetCommitted, OffsetDeleted, GroupDeleted))
        broker.store.add_reload_listener(self._forget_offset_groups)

    def groups_with_offsets(self) -> frozenset[str]:
        """Every group that has committed offsets (ListGroups, ListConfigResources). A group's head row says so, and
        heads share their projection with every partition's row: a search of the rows for heads read them all, 32 ms
        at 1 M rows. Found once, then kept by the commits that write heads (`_offsets_committed`)."""
        if self._offset_groups is None:
            self._offset_groups = set(groups_with_offsets(self.broker.store.entities(OFFSETS_PROJECTION)))
        return frozenset(self._offset_groups)

    def _offsets_committed(self, events: Sequence[LoggedEvent]) -> None:
        if self._offset_groups is None:
            return
        changed = {logged.event.group for logged in events
                   if isinstance(logged.event, OffsetCommitted | OffsetDeleted | GroupDeleted)}
        for group in changed:
            if self.broker.store.state(OFFSETS_PROJECTION, group_key(group)) is None:
                self._offset_groups.discard(group)
            else:
                self._offset_groups.add(group)

    def _forget_offset_groups(self) -> None:
        """The store reloaded from disk (after a failed commit): found again when next asked for."""
        self._offset_groups = None

    def start(self) -> None:
        """On the running loop, at start: delete the offsets left on topics that no longer exist
        (`offsets_of_missing_topics`), in slices as DeleteTopics does, while requests are served."""
        missing = offsets_of_missing_topics(self.broker)
        if missing and self._sweep is None:
            log.info("deleting committed offsets left on %d deleted topics", len(missing))
            self._sweep = asyncio.get_running_loop().create_task(forget_topic_offsets(self.broker, missing))

    def limits(self) -> GroupLimits:
        config = self.broker.broker_config
        return GroupLimits(
            min_session_timeout_ms=int(config("group.min.session.timeout.ms")),
            max_session_timeout_ms=int(config("group.max.session.timeout.ms")),
            max_size=int(config("group.max.size")),
            initial_rebalance_delay_ms=int(config("group.initial.rebalance.delay.ms")),
        )

    def _now(self) -> int:
        self.sessions.limits = self.limits()
        now_ms: int = self.broker.clock.now_ms()
        return now_ms

    # -- requests ---------------------------------------------------------------------------------

    async def join(self, command: JoinGroup) -> JoinReply:
        """Raises `DomainError` for an immediate refusal (nothing changed but a pending member id); otherwise
        the member's reply."""
        try:
            member_id, replies = self.sessions.join(command, self._now())
        finally:
            self._reschedule(command.group_id)
        reply = await self._settle(replies, "join", command.group_id, member_id)
        assert isinstance(reply, JoinReply)
        return reply

    async def sync(self, command: SyncGroup) -> SyncReply:
        replies = self.sessions.sync(command, self._now())
        self._reschedule(command.group_id)
        reply = await self._settle(replies, "sync", command.group_id, command.member_id)
        assert isinstance(reply, SyncReply)
        return reply

    def heartbeat(self, command: Heartbeat) -> None:
        self.sessions.heartbeat(command, self._now())

    async def leave(self, group_id: str, members: Sequence[tuple[str, str | None]]) -> list[DomainError | None]:
        outcomes: list[DomainError | None]
        outcomes, replies = self.sessions.leave(group_id, members, self._now())
        self._reschedule(group_id)
        await self._deliver(replies)
        return outcomes

    # -- waiting ----------------------------------------------------------------------------------

    async def _settle(self, replies: list[Reply], kind: str, group_id: str, member_id: str) -> Reply:
        own = next((r for r in replies if _kind(r) == kind and r.member_id == member_id), None)
        waiter: asyncio.Future[Reply] | None = None
        if own is None:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.setdefault((kind, group_id, member_id), []).append(waiter)
        await self._deliver([r for r in replies if r is not own])
        if waiter is None:
            assert own is not None
            return own
        return await waiter

    async def _deliver(self, replies: list[Reply]) -> None:
        """Answer blocked members, but only once the events that decided the answers are durable (if they
        cannot be made durable, the blocked members get the error too)."""
        try:
            await self.broker.durable()
        except Exception as error:
            self._answer(replies, error)
            raise
        self._answer(replies, None)

    def _answer(self, replies: list[Reply], error: BaseException | None) -> None:
        for reply in replies:
            for waiter in self._waiters.pop((_kind(reply), reply.group_id, reply.member_id), []):
                if waiter.done():
                    continue
                if error is None:
                    waiter.set_result(reply)
                else:
                    waiter.set_exception(error)

    # -- time -------------------------------------------------------------------------------------

    def _reschedule(self, group_id: str) -> None:
        """A request to ``group_id`` may have set an earlier deadline of that group (a pending member id, a
        rebalance): tell the timer, which looks at every group only if that one comes before what it sleeps for."""
        deadline = self.sessions.next_deadline_ms(group_id)
        if deadline is not None:
            self.timer.schedule(deadline)

    def hand_over(self, group_id: str) -> None:
        """``group_id`` is becoming a consumer group in the events just staged: its blocked members are answered
        REBALANCE_IN_PROGRESS once those are durable (`GroupSessions.hand_over`)."""
        self._answer_when_durable(self.sessions.hand_over(group_id))

    def take_over(self, group_id: str) -> None:
        """``group_id`` became a classic group again in the events just staged (`GroupSessions.take_over`)."""
        self.sessions.take_over(group_id, self._now())
        self._reschedule(group_id)

    def _answer_when_durable(self, replies: list[Reply]) -> None:
        if replies:
            def answer(durable: asyncio.Future[None]) -> None:
                if not durable.cancelled():
                    self._answer(replies, durable.exception())

            self.broker.durable().add_done_callback(answer)

    def tick(self) -> list[Reply]:
        """Expire sessions and pending member ids and close join phases now due; the replies this decided
        reach their waiting members once the staged events are durable."""
        replies = self.sessions.tick(self._now())
        self._answer_when_durable(replies)
        return replies

    def close(self) -> None:
        self.timer.close()
        if self._sweep is not None and not self._sweep.done():
            self._sweep.cancel()  # each slice it staged is whole; the next start deletes the rest


def _kind(reply: Reply) -> str:
    return "join" if isinstance(reply, JoinReply) else "sync"
