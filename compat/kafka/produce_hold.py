"""Held produce requests: what an admission plugin answers with `AppendHeld` waits instead of failing.

Pulsar's ``producer_request_hold`` disconnects the producer, which retries until its send timeout
(apache/pulsar PR #17320). Here the request itself waits, its connection open (requests on other
connections carry on; Kafka answers one connection's requests in order, so that connection's later
requests queue behind it), and the admission plugins are asked again after every commit that holds more than
appends, since such a commit is what settles records (an acknowledgement, an offset commit, an eviction, a
truncation, a config change): a held producer proceeds in the turn after the commit that drains the backlog, never
at a poll. A commit of appends alone (what the producers not held write) settles nothing: asking again after each
cost every held request's partitions at every produce (100 held requests of 1,000 partitions: 100,000 admissions
a commit). At the request's ``timeout_ms``
on the broker clock the partitions still held are answered THROTTLING_QUOTA_EXCEEDED (retriable) with
the plugin's message and `HOLD_THROTTLE_MS` as ``throttle_time_ms``.

Shared by the Produce handler only; serves no key.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from logwright.compat.broker import Broker
from logwright.compat.errors import ErrorCode
from logwright.core.events import Event, RecordsAppended
from logwright.core.events.keys import DedupKeysIndexed, DuplicateDropped
from logwright.core.events.log import DelayedRecordsDropped, DelayedRecordsIndexed
from logwright.eventstore.interface import LoggedEvent

APPENDS_ONLY: frozenset[type[Event]] = frozenset({
    RecordsAppended, DelayedRecordsIndexed, DelayedRecordsDropped, DedupKeysIndexed, DuplicateDropped})
"""What a produce commits: a commit of these alone settles nothing, and wakes no held request."""

HOLD_THROTTLE_MS = 1000
"""The ``throttle_time_ms`` a request held to its timeout is answered with: how long the client should wait."""

P = TypeVar("P")
R = TypeVar("R")


class _Commits:
    """One broker's signal that a commit happened; registered once per broker, as store listeners stay."""

    def __init__(self, broker: Broker) -> None:
        self._event: asyncio.Event | None = None
        broker.store.add_commit_listener(self._on_commit)

    def _on_commit(self, events: Sequence[LoggedEvent]) -> None:
        if self._event is not None and not all(type(logged.event) in APPENDS_ONLY for logged in events):
            self._event.set()
            self._event = None

    async def next_commit(self, broker: Broker, deadline_ms: int) -> None:
        """Wait for the next commit, or until the broker clock reaches ``deadline_ms``."""
        if self._event is None:
            self._event = asyncio.Event()
        committed = asyncio.ensure_future(self._event.wait())
        timeout = asyncio.ensure_future(broker.sleep_until(deadline_ms))
        try:
            await asyncio.wait((committed, timeout), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in (committed, timeout):
                waiter.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await waiter


_COMMITS: weakref.WeakKeyDictionary[Broker, _Commits] = weakref.WeakKeyDictionary()


class Hold(Generic[P, R]):
    """The held partitions of one request and how to ask again."""

    def __init__(self, held_code: ErrorCode = ErrorCode.THROTTLING_QUOTA_EXCEEDED) -> None:
        self._held_code = held_code
        self.throttle_ms = 0

    async def settle(self, broker: Broker, items: list[P], partition_of: Callable[[P], int],
                     results: dict[int, R], code_of: Callable[[R], int],
                     ask: Callable[[list[P]], dict[int, R]], timeout_ms: int) -> dict[int, R]:
        """``results`` (partition id → refusal) with the held ones asked again after each commit until they are
        admitted (dropped from the result) or refused otherwise, or ``timeout_ms`` passes (kept as held)."""
        held = [item for item in items if partition_of(item) in results
                and code_of(results[partition_of(item)]) == self._held_code]
        if not held:
            return results
        commits = _COMMITS.get(broker)
        if commits is None:
            commits = _COMMITS[broker] = _Commits(broker)
        deadline = broker.clock.now_ms() + max(0, timeout_ms)
        while held and broker.clock.now_ms() < deadline:
            await commits.next_commit(broker, deadline)
            again = ask(held)
            still: list[P] = []
            for item in held:
                partition_id = partition_of(item)
                answer = again.get(partition_id)
                if answer is None:
                    results.pop(partition_id, None)
                else:
                    results[partition_id] = answer
                    if code_of(answer) == self._held_code:
                        still.append(item)
            held = still
        if held:
            self.throttle_ms = HOLD_THROTTLE_MS
        return results
