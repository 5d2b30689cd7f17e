"""The async glue around the sans-I/O group coordinator (`core.group_sessions`).

JoinGroup and SyncGroup may have to wait for other members (the rebalance barrier); here each waiting
request gets a future, and replies the core hands back resolve them once the group's events are
durable. A background task wakes every `TICK_SECONDS` to let the core expire sessions and close join
phases; all timing reads `broker.clock`. One coordinator serves one broker and lives on it.

After a restart, members' session deadlines restart from the moment the coordinator loads the groups
(the broker's ``started_ms`` when it has one, otherwise the first group request after start).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable, Sequence

from logwright.compat.broker import Broker
from logwright.core.errors import DomainError
from logwright.core.events import Event
from logwright.core.groups.group_membership import GroupLimits, Heartbeat, JoinGroup, SyncGroup
from logwright.core.groups.group_sessions import GroupSessions, JoinReply, Reply, SyncReply
from logwright.core.groups.groups import GroupState

log = logging.getLogger(__name__)

TICK_SECONDS = 0.1
_ATTRIBUTE = "_logwright_group_coordinator"


def coordinator(broker: Broker) -> GroupCoordinator:
    """The broker's group coordinator, loading the persisted groups on first use."""
    found = getattr(broker, _ATTRIBUTE, None)
    if not isinstance(found, GroupCoordinator):
        found = GroupCoordinator(broker)
        setattr(broker, _ATTRIBUTE, found)
    found.ensure_ticking()
    return found


def group_state(broker: Broker, group_id: str) -> GroupState | None:
    state = broker.store.state("groups", group_id)
    return state if isinstance(state, GroupState) else None


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


def _new_member_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}"


class GroupCoordinator:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        started_ms = getattr(broker, "started_ms", None)
        start = started_ms if isinstance(started_ms, int) else broker.clock.now_ms()
        self.sessions = GroupSessions(_BrokerGroupStore(broker), self.limits(), start, _new_member_id)
        self._waiters: dict[tuple[str, str, str], list[asyncio.Future[Reply]]] = {}
        self._ticker: asyncio.Task[None] | None = None

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
        """Raises `DomainError` for an immediate refusal (nothing changed); otherwise the member's reply."""
        member_id, replies = self.sessions.join(command, self._now())
        reply = await self._settle(replies, "join", command.group_id, member_id)
        assert isinstance(reply, JoinReply)
        return reply

    async def sync(self, command: SyncGroup) -> SyncReply:
        replies = self.sessions.sync(command, self._now())
        reply = await self._settle(replies, "sync", command.group_id, command.member_id)
        assert isinstance(reply, SyncReply)
        return reply

    def heartbeat(self, command: Heartbeat) -> None:
        self.sessions.heartbeat(command, self._now())

    async def leave(self, group_id: str, members: Sequence[tuple[str, str | None]]) -> list[DomainError | None]:
        outcomes: list[DomainError | None]
        outcomes, replies = self.sessions.leave(group_id, members, self._now())
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
        """Answer blocked members, but only once the events that decided the answers are durable."""
        await self.broker.durable()
        for reply in replies:
            for waiter in self._waiters.pop((_kind(reply), reply.group_id, reply.member_id), []):
                if not waiter.done():
                    waiter.set_result(reply)

    # -- time -------------------------------------------------------------------------------------

    def ensure_ticking(self) -> None:
        loop = asyncio.get_running_loop()
        if self._ticker is None or self._ticker.done() or self._ticker.get_loop() is not loop:
            self._ticker = loop.create_task(self._tick_forever(), name="logwright-group-sessions")

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            try:
                replies = self.sessions.tick(self._now())
                if replies:
                    await self._deliver(replies)
            except Exception:
                log.exception("the group session check failed; retrying")

    def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()


def _kind(reply: Reply) -> str:
    return "join" if isinstance(reply, JoinReply) else "sync"
