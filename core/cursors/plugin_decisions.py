"""Values exchanged with plugins at decision points: a released delivery and its fate, an append's admission.

They are plain frozen dataclasses (`Admission` an immutable class of its own, for its cheap extension) so that the
core and the wire layer can build and read them without pluggy; the plugin host passes them through the decision
and wrapper hooks of `plugins/spec.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Generic, TypeVar

import immutables
from logwright.core.errors import DomainError
from logwright.core.events.cursors import OffsetRanges
from logwright.core.keys.dedup import Deduplication


class ReleaseReason(Enum):
    """Why records stopped being in flight without being acknowledged."""

    RELEASED = "released"
    """The consumer gave them back (negative ack, KIP-932 RELEASE)."""
    LOCK_EXPIRED = "lock_expired"
    """Their acquisition lock ran out (ack timeout)."""
    CONSUMER_LEFT = "consumer_left"
    """Their consumer left or its session timed out."""


@dataclass(frozen=True, slots=True)
class ReleasedDelivery:
    """Records of one partition, all delivered ``delivery_count`` times, that came back.

    ``requested_delay_ms`` is the delay the consumer asked for (a negative ack with a delay), if any;
    ``settings`` are the group's effective configs (``share.delivery.count.limit`` and plugin keys).
    """

    subscription: str
    topic: str
    partition_index: int
    ranges: OffsetRanges
    delivery_count: int
    reason: ReleaseReason
    consumer: str
    now_ms: int
    requested_delay_ms: int | None = None
    settings: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Redeliver:
    """Make the records available again ``delay_ms`` from now (0: at once)."""

    delay_ms: int = 0


@dataclass(frozen=True, slots=True)
class Reject:
    """Archive the records (dead-letter): they are never delivered again; ``reason`` is recorded."""

    reason: str


ReleaseDecision = Redeliver | Reject

ReleaseDecider = Callable[[ReleasedDelivery], ReleaseDecision]
"""The plugins' ``logwright_decide_release`` chain, resolved once by the plugin host."""


@dataclass(frozen=True, slots=True)
class ArchivedRecords:
    """Records of one partition about to be archived (REJECT, or a `Reject` decision such as the delivery limit).

    ``deliveries`` are ``(first, last, delivery_count)``; ``consumer`` is the last holder ("" after a lock
    expiry); ``settings`` are the group's effective configs. ``reconsume_times`` is above 0 only for a
    record a consumer asked to reconsume later (retry letter topic, 32008) past
    ``logwright.retry.max.reconsume.times``: the attempt that went over (Pulsar's ``RECONSUMETIMES``),
    ``reason`` then says so, and ``real_topic`` is the topic the record was first produced to (its
    ``REAL_TOPIC`` header; ``topic`` is then its retry topic). ``feature_levels`` are the cluster's finalized
    feature levels (KIP-584) by name, for decisions a level turns off: KIP-1191's copies need share.version 2 (empty:
    not asked, as for pop groups, which are logwright's own).
    """

    subscription: str
    topic: str
    partition_index: int
    deliveries: tuple[tuple[int, int, int], ...]
    reason: str
    consumer: str
    now_ms: int
    settings: Mapping[str, str] = field(default_factory=dict)
    reconsume_times: int = 0
    real_topic: str = ""
    feature_levels: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """Append a copy of each archived record to ``topic`` in the WriteBatch that archives it.

    The copy carries ``headers`` (each value may use ``{topic}``, ``{partition}``, ``{offset}``,
    ``{delivery_count}``, ``{group}`` and ``{reason}``, filled per record; they replace original headers
    of the same name) and ``headers_once`` (the same placeholders, added only where the original has no
    header of that name: Pulsar's ``ORIGIN_MESSAGE_ID`` is set once, never overwritten). With
    ``copy_record`` the copy keeps the original's key, value, headers and timestamp; without it the copy
    has no key and no value. The copy goes to partition ``source partition mod partitions of topic``.
    If the broker cannot append to ``topic`` (deleted, refused, the source topic itself, or without
    ``enabled_by`` set to true in its topic configs when given) the records are not archived: a
    ``DeadLetterDeferred`` event keeps them and offers them again later, when archiving retries the copy.
    With ``auto_create`` a missing ``topic`` is created in the same WriteBatch as the copy when the broker key
    ``auto_create_enabled_by`` (default ``auto.create.topics.enable``) is true: with ``auto_create_partitions``
    partitions (``None``: the source topic's count; -1: the broker's ``num.partitions``, as a CreateTopics of -1)
    and the topic configs ``auto_create_configs``. The original's
    delivery-delay headers (``logwright.deliver.*``) are not copied, so the copy is not delayed again
    (a decision's own ``headers`` may still set one). ``initial_subscription`` (Pulsar's
    ``initialSubscriptionName``) names a subscription (a share group) that gets a cursor on every partition of
    ``topic`` it has none on, at the partition's end, in the copy's WriteBatch: it holds every copy from the first,
    whenever its consumers come (a share group's own archives; pop groups' copies do not use it).
    ``existing_topic`` names a topic the copies go to instead of ``topic`` when it exists (Pulsar's legacy
    dead-letter name, ``<namespace>/<subscription>-DLQ``, taken when a topic has it).
    """

    topic: str
    copy_record: bool = False
    headers: tuple[tuple[str, str], ...] = ()
    enabled_by: str | None = None
    headers_once: tuple[tuple[str, str], ...] = ()
    auto_create: bool = False
    auto_create_enabled_by: str = "auto.create.topics.enable"
    auto_create_partitions: int | None = None
    auto_create_configs: tuple[tuple[str, str], ...] = ()
    initial_subscription: str = ""
    existing_topic: str = ""


@dataclass(frozen=True, slots=True)
class GroupConfigChange:
    """A group config change about to be stored, for checks one key's validator cannot make alone.

    ``settings`` are the group's effective configs after the change, ``changed`` the keys it sets or
    resets; ``subscribed_topics`` what the share group's members subscribe to now; ``broker_config``
    reads a broker config (``None`` for an unknown key) and ``topic_config(topic, key)`` a topic's
    (``None`` if the topic does not exist or the key is unknown).
    """

    group_id: str
    settings: Mapping[str, str]
    changed: tuple[str, ...]
    subscribed_topics: tuple[str, ...]
    broker_config: Callable[[str], str | None]
    topic_config: Callable[[str, str], str | None]


GroupConfigCheck = Callable[[GroupConfigChange], None]
"""Every plugin's ``logwright_check_group_config``, resolved once by the plugin host; raises `InvalidConfig`."""


DEAD_LETTER_MAX_DELIVERIES_KEY = "logwright.dead.letter.max.deliveries"
"""Group config of the built-in ``dead_letter`` plugin (deliveries, as Kafka's ``share.delivery.count.limit``
counts them; 0: off): a group with it above 0 has its releases decided by the built-in plugins' chain, as one with a
redelivery backoff policy."""

DEAD_LETTER_MAX_REDELIVER_COUNT_KEY = "logwright.dead.letter.max.redeliver.count"
"""Group config of the built-in ``dead_letter`` plugin: Pulsar's ``maxRedeliverCount`` exactly (redeliveries, so one
delivery more than ``logwright.dead.letter.max.deliveries`` of the same number; 0: off); decided as that key is."""

DEAD_LETTER_LIMIT_KEYS = (DEAD_LETTER_MAX_DELIVERIES_KEY, DEAD_LETTER_MAX_REDELIVER_COUNT_KEY)

DEAD_LETTER_DEFERRED_RETRY_KEY = "logwright.dead.letter.deferred.retry.ms"
"""Group config of the built-in ``dead_letter`` plugin: how long records whose dead-letter copy could not be
written are kept before they are offered again (and archiving them retries the copy)."""

DEFAULT_DEAD_LETTER_DEFERRED_RETRY_MS = 30_000


ArchiveDecider = Callable[[ArchivedRecords], "DeadLetter | None"]
"""The plugins' ``logwright_decide_archive`` chain, resolved once by the plugin host."""


@dataclass(frozen=True, slots=True)
class ReleaseContext:
    """What a plugin decision about returned records needs besides the cursor.

    Built only when a plugin other than the built-in ``redelivery`` implements the decision: without
    one, the cursor commands apply ``share.delivery.count.limit`` themselves and build no
    `ReleasedDelivery` at all.
    """

    decide: ReleaseDecider
    partition_index: int
    settings: Mapping[str, str]


TopicScope = Callable[[Mapping[str, str], Callable[[str], str | None]], bool]
"""Whether a plugin acts on appends to a topic, given the topic's effective configs (as `PartitionAppend` carries
them) and a reader of the broker's configs (``None`` for a key the broker does not know). Declared on a
``logwright_admit_append`` implementation (``logwright.plugins.api.acts_on_topics``) so that produce requests to
topics no plugin acts on skip the admission chain; answered once per distinct topic configs, never per request."""


@dataclass(frozen=True, slots=True)
class PartitionAppend:
    """What one request wants to append to one partition: counts and sizes, never the records.

    ``topic_configs`` are the topic's effective configs (its overrides over the defaults, plugin keys
    included), so a quota plugin reads its own topic keys from them.
    """

    topic: str
    partition_index: int
    partition_id: int
    record_count: int
    byte_size: int
    producer_id: int = -1
    topic_configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AppendRequest:
    """One produce request's appends, admitted or refused together before anything is written."""

    appends: tuple[PartitionAppend, ...]
    client_id: str | None
    now_ms: int


_Decision = TypeVar("_Decision")


class FirstDecisions(Generic[_Decision]):
    """Partitions' decisions in the order given, the first for a partition winning: persistent (extending one gives a
    new value and leaves it as it was) and cheap to extend one decision at a time.

    A third-party plugin refusing a wide Produce's partitions one call each made every refusal copy the tuple of
    the earlier ones: 10,000 took 61 ms of the event loop, 40,000 two seconds. The values extended from one another
    share one list: a value sees its first ``length`` items, and extending the newest appends to the list (another
    extension of an older value copies its part first). The partition index is a persistent map, extended with
    each decision."""

    __slots__ = ("_items", "_length", "_index", "_tuple")

    def __init__(self, items: Iterable[tuple[int, _Decision]] = ()) -> None:
        index, added = _with_first(immutables.Map(), items)
        self._items, self._length, self._index = added, len(added), index
        self._tuple: tuple[tuple[int, _Decision], ...] | None = None

    def with_decisions(self, decisions: Iterable[tuple[int, _Decision]]) -> FirstDecisions[_Decision]:
        """These decisions and ``decisions``' for partitions not decided yet; ``self`` when none is new."""
        index, added = _with_first(self._index, decisions)
        if not added:
            return self
        items = self._items
        if not self._length:  # a fresh list: an empty admission (`ADMIT_ALL`) keeps no request's decisions alive
            items = added
        else:
            if len(items) != self._length:  # another value extended this one first: copy this one's part
                items = items[: self._length]
            items.extend(added)
        extended: FirstDecisions[_Decision] = FirstDecisions.__new__(FirstDecisions)
        extended._items, extended._length, extended._index, extended._tuple = items, len(items), index, None
        return extended

    def get(self, partition_id: int) -> _Decision | None:
        return self._index.get(partition_id)

    def as_tuple(self) -> tuple[tuple[int, _Decision], ...]:
        """Made once per value, on the first call."""
        if self._tuple is None:
            self._tuple = tuple(self._items[: self._length])
        return self._tuple


class Admission:
    """The partitions of an `AppendRequest` that are refused, each with the error its client gets, and those
    whose records are deduplicated before they are stored. Immutable: each decision gives a new admission.

    A plugin may decide one partition a call (`refuse`, `deduplicate`) or many at once (`refusing`,
    `deduplicating`); either costs the same per partition (`FirstDecisions`), and lookups go through an index."""

    __slots__ = ("_refused", "_deduplicated")

    def __init__(self, refused: Iterable[tuple[int, DomainError]] = (),
                 deduplicated: Iterable[tuple[int, Deduplication]] = ()) -> None:
        self._refused: FirstDecisions[DomainError] = FirstDecisions(refused)
        self._deduplicated: FirstDecisions[Deduplication] = FirstDecisions(deduplicated)

    @classmethod
    def _of(cls, refused: FirstDecisions[DomainError], deduplicated: FirstDecisions[Deduplication]) -> Admission:
        admission = cls.__new__(cls)
        admission._refused, admission._deduplicated = refused, deduplicated
        return admission

    @property
    def refused(self) -> tuple[tuple[int, DomainError], ...]:
        """``(partition id, error)`` in the order refused, one for each partition refused (its first)."""
        return self._refused.as_tuple()

    @property
    def deduplicated(self) -> tuple[tuple[int, Deduplication], ...]:
        """``(partition id, deduplication)`` in the order asked, one for each partition (its first)."""
        return self._deduplicated.as_tuple()

    def refuse(self, partition_id: int, error: DomainError) -> Admission:
        """This admission with ``partition_id`` refused (the first refusal of a partition wins)."""
        return self.refusing(((partition_id, error),))

    def refusing(self, refusals: Iterable[tuple[int, DomainError]]) -> Admission:
        """This admission with each ``(partition id, error)`` refused, the first refusal of a partition winning."""
        refused = self._refused.with_decisions(refusals)
        return self if refused is self._refused else Admission._of(refused, self._deduplicated)

    def deduplicate(self, partition_id: int, deduplication: Deduplication) -> Admission:
        """This admission with ``partition_id``'s records deduplicated (the first plugin to ask wins): the broker
        drops records whose key was appended within the window and stores the rest as one rewritten batch."""
        return self.deduplicating(((partition_id, deduplication),))

    def deduplicating(self, deduplications: Iterable[tuple[int, Deduplication]]) -> Admission:
        """This admission with each ``(partition id, deduplication)`` asked for, the first for a partition winning."""
        deduplicated = self._deduplicated.with_decisions(deduplications)
        return self if deduplicated is self._deduplicated else Admission._of(self._refused, deduplicated)

    def deduplication_for(self, partition_id: int) -> Deduplication | None:
        return self._deduplicated.get(partition_id)

    def error_for(self, partition_id: int) -> DomainError | None:
        return self._refused.get(partition_id)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Admission):
            return NotImplemented
        return self.refused == other.refused and self.deduplicated == other.deduplicated

    def __hash__(self) -> int:
        return hash((self.refused, self.deduplicated))

    def __repr__(self) -> str:
        return f"Admission(refused={self.refused!r}, deduplicated={self.deduplicated!r})"


def _with_first(index: immutables.Map[int, _Decision], decisions: Iterable[tuple[int, _Decision]]
                ) -> tuple[immutables.Map[int, _Decision], list[tuple[int, _Decision]]]:
    """The index with each partition's first decision added (one already there wins), and the decisions added. A
    persistent map: a third-party plugin refusing one partition at a time (`refuse`) copied a dict of every earlier
    refusal each time (10,000 refusals: 215 ms)."""
    added: list[tuple[int, _Decision]] = []
    with index.mutate() as building:
        for partition_id, decision in decisions:
            if partition_id not in building:
                building[partition_id] = decision
                added.append((partition_id, decision))
        finished = building.finish()
    return finished, added


ADMIT_ALL = Admission()
