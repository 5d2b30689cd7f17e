"""What a plugin's background task may do with the broker: the `BrokerFacade` port, and its values.

A task never holds the `Broker` itself: it gets this narrow port (implemented over the broker in
`logwright.compat.plugin_facade`), so the broker's internals can change without breaking plugins and a
task cannot bypass validation, admission or the group commit. Every wait goes through the broker clock,
so a ``--manual-clock`` broker drives a task in tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from logwright.core.errors import DomainError
from logwright.core.events import Event


@dataclass(frozen=True, slots=True)
class OutgoingRecord:
    """One record a task appends; ``timestamp_ms`` ``None`` means the broker clock's time of the append."""

    value: bytes | None
    key: bytes | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_ms: int | None = None


class AppendRefused(DomainError):
    """The broker refused a task's append, as it would have refused a producer's.

    ``error`` is the Kafka error name a producer would have received (``UNKNOWN_TOPIC_OR_PARTITION``,
    ``POLICY_VIOLATION`` from an admission plugin, ``MESSAGE_TOO_LARGE``...); the message says why.
    """

    def __init__(self, error: str, message: str) -> None:
        super().__init__(f"{error}: {message}")
        self.error = error


@dataclass(frozen=True, slots=True)
class StoredBatchInfo:
    """One stored record batch as its header describes it: offsets, stored size, newest timestamp.

    ``record_count`` is the offsets the batch spans (its last offset delta + 1): after compaction a batch holds
    fewer records than that, and the next batch starts at ``base_offset + record_count``."""

    base_offset: int
    record_count: int
    byte_size: int
    max_timestamp: int


class BrokerTimer(Protocol):
    """A background task's timer on the broker clock (`BrokerFacade.deadline_timer`)."""

    def schedule(self, deadline_ms: int) -> None:
        """A deadline was set: re-arm if it is earlier than the one the timer sleeps toward."""
        ...

    def wake(self) -> None:
        """Ask ``next_deadline`` again, after anything that may have moved the deadline either way."""
        ...

    def close(self) -> None:
        """Stop for good (call it when the task ends)."""
        ...


@runtime_checkable
class BrokerFacade(Protocol):
    """The broker as a plugin's background task sees it (``run(facade)``; see `BackgroundTask`)."""

    def now_ms(self) -> int:
        """The broker clock's time in milliseconds (the manual clock's under ``--manual-clock``)."""
        ...

    async def sleep(self, milliseconds: int) -> None:
        """Wait ``milliseconds`` of broker time."""
        ...

    async def sleep_until(self, time_ms: int) -> None:
        """Wait until the broker clock reads ``time_ms`` or later."""
        ...

    async def give_way(self) -> None:
        """Let the requests waiting run before the task's next slice of long work (a few turns of the event loop,
        no broker time): a task going over 100,000 rows in one stretch holds every client."""
        ...

    def deadline_timer(self, name: str, next_deadline: Callable[[], int | None],
                       tick: Callable[[], object]) -> BrokerTimer:
        """A timer that calls ``tick`` when the broker clock reaches ``next_deadline()`` (ms; ``None``: none).

        One deadline at a time, asked again after each tick and on ``wake``; the broker's coordinators keep
        theirs the same way (`DeadlineTimer`). Unlike a task sleeping in `sleep_until`, a manual clock's
        LogwrightAdvanceClock runs a due tick itself and answers once what it staged is durable, so tests
        read its effect right after advancing. ``tick`` runs in the broker's loop: quick, it stages events
        (`stage`) and must not wait.
        """
        ...

    def broker_config(self, name: str) -> str:
        """The effective value of a broker config (stored override, ``--config``, default); `KeyError` if
        no one registered ``name``."""
        ...

    def topic_config(self, topic: str, name: str) -> str | None:
        """The effective value of a topic config; ``None`` if the topic does not exist or the key has none."""
        ...

    def group_config(self, group: str, name: str) -> str | None:
        """The effective value of a group config (the group need not exist); ``None`` for an unknown key."""
        ...

    def partition_count(self, topic: str) -> int | None:
        """How many partitions ``topic`` has; ``None`` if it does not exist."""
        ...

    async def append(self, topic: str, records: Sequence[OutgoingRecord], partition: int = 0) -> int:
        """Append ``records`` to one partition as one batch and wait until they are durable.

        The batch goes the way of a producer's: validated, shown to the admission plugins, staged with
        this turn's WriteBatch. Returns the first record's offset; raises `AppendRefused` otherwise.
        """
        ...

    def entities(self, projection: str) -> Mapping[str, object]:
        """Every entity of a projection (a plugin's own, typically) by key, staged events included; read-only.

        For sweeps such as expiring entries past a time-to-live: the view reads the store as it is iterated.
        """
        ...

    def stored_batches(self, partition_id: int, from_offset: int) -> Iterator[StoredBatchInfo]:
        """The committed batches of a partition (by its id, as events name it) from the one holding
        ``from_offset`` on, as their headers describe them; each batch is read once, lazily."""
        ...

    def add_commit_listener(self, listener: Callable[[Sequence[Event]], None],
                            event_types: Iterable[type[Event]] | None = None) -> None:
        """Call ``listener`` with the events of every commit, once they are durable, in the broker's loop; with
        ``event_types``, only commits holding at least one event of those types (all of their events).

        For state a plugin keeps in memory beside the projections (indexes, waiters); it must be quick and
        must not raise. Listeners stay for the broker's life.
        """
        ...

    def stage(self, events: Sequence[Event]) -> None:
        """Stage the plugin's own events (registered with its projection) for this turn's WriteBatch.

        They are visible to later reads at once; `durable` says when they survive a crash.
        """
        ...

    async def durable(self) -> None:
        """Wait until everything staged so far is written under the broker's durability setting."""
        ...


Row = TypeVar("Row")


async def sweep_expired(facade: BrokerFacade, projection: str,
                        expired_of: Callable[[list[tuple[str, object]], int], tuple[Row, ...]],
                        event_of: Callable[[tuple[Row, ...]], Event], interval_ms: int = 60_000,
                        per_event: int = 10_000) -> None:
    """Forever, every ``interval_ms`` of broker time: stage ``event_of(rows)`` for the rows of ``projection`` that
    ``expired_of(rows, now)`` names (asked of slices of the rows as they are then, each staged before the sweep
    gives way), at most ``per_event`` per event, and wait until they are durable. For a
    plugin keeping rows with a time-to-live in its projection (the key index's ``key_dedup`` and
    ``processed_keys``); run it from a background task."""
    while True:
        now = facade.now_ms()
        keys = list(facade.entities(projection))
        staged = False
        for start in range(0, len(keys), SWEEP_ROWS_PER_TURN):  # 100,000 expired keys were 167 ms in one stretch
            if start:
                await facade.give_way()
            # each slice decided from the rows as they are now and staged in the same turn: a row refreshed while
            # the sweep gave way (a key recorded again) must not go on an expiry read before
            states = facade.entities(projection)
            rows = [(key, states[key]) for key in keys[start:start + SWEEP_ROWS_PER_TURN] if key in states]
            expired = expired_of(rows, now)
            for first in range(0, len(expired), per_event):
                facade.stage([event_of(tuple(expired[first:first + per_event]))])
                staged = True
        if staged:
            await facade.durable()
        await facade.sleep(interval_ms)


SWEEP_ROWS_PER_TURN = 10_000
"""Rows `sweep_expired` asks ``expired_of`` about at a time, staging what it names before giving way (``expired_of``
is asked of each slice: it must name a row by the row alone)."""
