"""The hooks a logwright plugin may implement, each named ``logwright_*``.

Three families (DESIGN §5):

- **registries** (``historic``): a plugin adds subscription modes, config keys, extension API handlers,
  projections and background tasks. The host calls them once for each plugin, as the plugin is
  registered at start-up; what they add is handed out as plain objects, so per-record work never goes
  through pluggy.
- **decisions** (``firstresult``): the first plugin with an opinion decides; built-in defaults run last.
- **wrappers**: implement the hook with ``@hookimpl(wrapper=True)``, ``yield`` to get the inner result,
  and return it or a changed one. They run per request, never per record.

Implement a hook with ``from logwright.plugins.api import hookimpl``: a plugin imports logwright only
through `logwright.plugins.api`. A misspelled ``logwright_`` hook is refused when the broker starts
(`PluginHost.check_pending`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, TypeVar

import pluggy
from logwright.core.cursors.plugin_decisions import (
    Admission,
    AppendRequest,
    ArchivedRecords,
    DeadLetter,
    GroupConfigChange,
    ReleasedDelivery,
    ReleaseDecision,
    TopicScope,
)
from logwright.core.events import Event
from logwright.core.log.index_hooks import HeldBack, HoldBackQuery, StagedChange

from .registrars import (
    BackgroundTaskRegister,
    ConfigKeyRegister,
    ExtensionHandlerRegister,
    ProjectionRegister,
    SubscriptionModeRegister,
)

PROJECT = "logwright"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

TOPIC_SCOPE_ATTRIBUTE = "logwright_topic_scope"
_Implementation = TypeVar("_Implementation", bound=Callable[..., Any])


def acts_on_topics(scope: TopicScope) -> Callable[[_Implementation], _Implementation]:
    """Declare which topics' appends a ``logwright_admit_append`` implementation acts on (a decorator, beside
    ``@hookimpl``).

    :param scope: ``scope(topic_configs, broker_config)`` is true for a topic whose appends the implementation may
        refuse, hold or deduplicate; it must depend only on those configs (it is asked once per distinct topic
        configs and again after a broker config change, not per request).

    While every implementation declares a scope, a produce request's partitions on topics no scope takes are
    admitted without asking the chain, and the `AppendRequest` lists only the others; a request with none of them
    builds no request at all. One implementation without a scope makes every topic concerned (as before scopes
    existed). The built-ins declare theirs: ``key_dedup`` acts on topics with ``logwright.dedup.key``,
    ``backlog_quota`` on topics with a quota limit of their own or from the broker's defaults.
    """

    def declare(implementation: _Implementation) -> _Implementation:
        setattr(implementation, TOPIC_SCOPE_ATTRIBUTE, scope)
        return implementation

    return declare


DERIVES_FROM_ATTRIBUTE = "logwright_derives_from"


@dataclass(frozen=True, slots=True)
class DerivesFrom:
    """What a ``logwright_derive_events`` implementation derives from (`derives_from`)."""

    events: Callable[[type[Event]], bool]
    """Whether a staged event of this type may make it derive something (asked once per type)."""
    batches: bool
    """Whether appended record batches may."""
    while_rows: str | None = None
    """A projection without whose rows it derives nothing: it is not asked while that projection is empty."""


def derives_from(events: type[Event] | Collection[type[Event]] | Callable[[type[Event]], bool], *,
                 batches: bool, while_rows: str | None = None) -> Callable[[_Implementation], _Implementation]:
    """Declare which staged changes a ``logwright_derive_events`` implementation derives from (a decorator, beside
    ``@hookimpl``): the broker asks it only about changes holding one of those event types (or, with ``batches``,
    record batches), and builds no `StagedChange` for a change no implementation is asked about.

    :param events: an event type or several (subclasses included), or a predicate on an event type; asked once per
        type.
    :param batches: whether appended record batches concern it.
    :param while_rows: a projection's name: it is asked only while that projection holds rows (an implementation
        whose first step is ``if not staged.rows(name): return None``), checked per change before anything is built.

    An implementation that declares nothing is asked about every change (as before declarations existed). The
    built-ins declare theirs: ``delayed_delivery`` batches and every event naming a ``partition_id``, ``pop`` the
    backlog evictions, ``backlog_quota`` the offset commits. An OffsetCommit staged about 8 us of derive calls
    before, for events none of them reads.
    """
    if isinstance(events, type):  # a class is callable too: never take one for a predicate
        wanted = _any_of((events,))
    elif callable(events):
        wanted = events
    else:
        wanted = _any_of(tuple(events))

    def declare(implementation: _Implementation) -> _Implementation:
        setattr(implementation, DERIVES_FROM_ATTRIBUTE, DerivesFrom(wanted, batches, while_rows))
        return implementation

    return declare


def _any_of(kinds: tuple[type[Event], ...]) -> Callable[[type[Event]], bool]:
    return lambda kind: issubclass(kind, kinds)


def names_partition(kind: type[Event]) -> bool:
    """Whether events of this type carry a ``partition_id`` (a field, or an attribute of the class)."""
    return hasattr(kind, "partition_id") or (
        is_dataclass(kind) and any(field.name == "partition_id" for field in fields(kind)))


# -- registries ------------------------------------------------------------------------------------


@hookspec(historic=True)
def logwright_register_subscription_modes(register: SubscriptionModeRegister) -> None:
    """Add subscription modes with ``register.add(mode)``.

    :param register: takes objects implementing `SubscriptionMode` (most simply a subclass of
        `SubscriptionModeBase`); two plugins offering the same ``mode.name`` stop the broker from starting.

    Called once per plugin at start-up. The names become the allowed values of the group config
    ``logwright.subscription.mode``. Return value: ignored.
    """


@hookspec(historic=True)
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    """Add topic, group or broker config keys with ``register.add(ConfigKey(...))``.

    :param register: takes `ConfigKey` (name, resource type, default, validator,
        documentation, and for topic and broker keys optionally ``consistent``: a rule across keys, given
        the resource's effective values after a change that sets the key; group keys check such rules in
        ``logwright_check_group_config``, the one mechanism for them). The keys join the broker's `ConfigRegistry`, so
        DescribeConfigs lists them and (Incremental)AlterConfigs refuses bad values with INVALID_CONFIG and
        the validator's (or the rule's) message.

    Called once per plugin at start-up. Prefix names with ``logwright.`` and the plugin's name.
    Return value: ignored.
    """


@hookspec(historic=True)
def logwright_register_extension_handlers(register: ExtensionHandlerRegister) -> None:
    """Serve API keys Kafka does not have with ``register.add(api_key, name, min_version, max_version, handle)``.

    :param register: ``api_key`` must be in ``EXTENSION_API_KEYS``; ``handle`` is a coroutine
        ``(RequestContext, body: bytes) -> bytes | None`` reading the body after the request header v1
        and writing the body after the response header v0 (the server adds the correlation id).
        An exception it raises is logged; the request is answered with
        ``error_answer(UNKNOWN_SERVER_ERROR, message)`` if the plugin passed ``error_answer``, else its
        connection is closed. The broker and every other connection carry on either way.

    Called once per plugin at start-up; ApiVersions advertises the keys (standard clients ignore them).
    Return value: ignored.
    """


@hookspec(historic=True)
def logwright_register_projections(register: ProjectionRegister) -> None:
    """Add projections with ``register.add(projection, event_types, state_types)``.

    :param register: takes a `Projection` (declare ``handles`` so the store
        folds only the events it needs), the plugin's own event classes (each with a ``TAG`` that no
        other event uses) and its state classes (tag → class, tags from 2000 up) for the codec.

    Called once per plugin at start-up. The projection's state is written with each event, and
    ``logwright check`` refolds it like the core ones. Return value: ignored.
    """


@hookspec(historic=True)
def logwright_register_background_tasks(register: BackgroundTaskRegister) -> None:
    """Add long-running coroutines with ``register.add(BackgroundTask(name, run, doc))``.

    :param register: takes `BackgroundTask`; ``run(facade)`` gets a `BrokerFacade` (never the broker), starts
        once ``logwright serve`` listens and is cancelled at shutdown (an exception is logged; the task is not
        restarted). It must wait through the broker clock (``await facade.sleep(ms)``,
        ``facade.sleep_until(time_ms)``), never sleep on wall time alone, so a ``--manual-clock`` broker
        drives it in tests.

    Called once per plugin at start-up. Return value: ignored.
    """


# -- decisions -------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def logwright_decide_release(delivery: ReleasedDelivery) -> ReleaseDecision | None:
    """Decide what happens to records that came back unacknowledged.

    :param delivery: one partition's records with the same delivery count, why they came back
        (released by the consumer, lock expired, consumer left), the delay the consumer asked for and
        the group's configs.

    Called when a consumer releases records (RELEASE, a negative ack with its delay in
    ``requested_delay_ms``), when locks expire and when a member's session times out holding records
    (a clean leave gives the attempt back and is not asked): once per partition, consumer and delivery
    count, never per record. Return `Redeliver(delay_ms)` to make them available again after the delay,
    `Reject(reason)` to archive (dead-letter) them, or ``None`` to let the next plugin decide. The
    built-in ``redelivery`` plugin decides last: it rejects at ``share.delivery.count.limit`` deliveries
    and otherwise redelivers after the requested delay if above 0, else after the group's backoff policy
    (``logwright.redelivery.backoff.*`` in ``delivery.settings``) for ``delivery_count - 1``. While it is
    the only implementation the broker applies the limit itself and never calls the hook, except for
    groups whose backoff policy is not ``none``.
    """


@hookspec(firstresult=True)
def logwright_decide_archive(archived: ArchivedRecords) -> DeadLetter | None:
    """Decide whether records being archived are copied to a dead-letter topic.

    :param archived: one partition's records a share group (or logwright subscription) archives, with
        their delivery counts, the reason (a consumer's REJECT, a `Reject` release decision such as the
        delivery limit), the last holder and the group's configs.

    Called once per archiving event (per partition, consumer and reason), never per record. Return
    `DeadLetter(topic, copy_record, headers)` and the broker appends one copy per record to ``topic``
    and archives the originals in the same WriteBatch (a crash leaves both or neither), with a
    ``DeadLettered`` event recording the attempt history; ``None`` lets the next plugin decide, and
    with no answer the records are only archived; a copy the broker cannot write keeps the records
    (``DeadLetterDeferred``) instead of archiving them. ``archived.reconsume_times`` is above 0 for a
    record reconsumed past its limit (retry letter topics), which the built-in ``retry_letter`` plugin
    sends to Pulsar's dead-letter topic. The built-in ``dead_letter`` plugin answers last for groups with
    ``errors.deadletterqueue.topic.name`` set (KIP-1191's configs and headers). A pop group's records past
    its max reconsume times come here too, with ``settings`` marking ``logwright.subscription.mode=pop``
    (the built-in ``pop`` plugin answers ``DLQ.<group>``); their copies and the ``PopDeadLettered`` that
    settles them are one WriteBatch.
    """


@hookspec
def logwright_check_group_config(change: GroupConfigChange) -> None:
    """Refuse a group config change that depends on more than one key's value: raise `InvalidConfig`.

    :param change: the group's configs after the change, the keys changed, the topics its share-group
        members subscribe to, and readers of broker and topic configs.

    Called by (Incremental)AlterConfigs for every GROUP resource after each key passed its own validator,
    before anything is stored (also with validate_only). Every implementation runs; the first
    `InvalidConfig` refuses the resource with INVALID_CONFIG and its message. Return value: ignored.
    The built-ins use it too: ``redelivery`` refuses a backoff minimum above the maximum, and
    ``dead_letter`` checks ``errors.deadletterqueue.topic.name`` (prefix, source topic,
    ``errors.deadletterqueue.group.enable``).
    """


# -- indexes beside the log -----------------------------------------------------------------------


@hookspec
def logwright_derive_events(staged: StagedChange) -> list[Event] | None:
    """Derive events of your own from what the broker is staging, into the same WriteBatch.

    :param staged: the events being staged, the record batches being appended (offsets assigned; search
        their bytes with ``contains``, read them with ``records``), the broker clock, log start offsets,
        a projection's live rows (``rows(name)``) and ``memo``, a dictionary for derived caches that the
        broker empties whenever the store reloads.

    Called for every staged change (every append, acquisition, acknowledgement, truncation, ...), so keep
    what it does for changes you ignore to a few comparisons. Every implementation runs; the events they
    return are staged right after ``staged.events`` and are not shown to the hook again. A produce request's
    appends come as one change, every partition's batches together. An exception fails the change (the
    request gets an error; for a produce request, every change staged since the last commit is dropped and
    its requests get KAFKA_STORAGE_ERROR): an index must never miss what it indexes. Fold the
    events into your own projection (``logwright_register_projections``). Declare what you derive from with
    `derives_from`, so changes holding none of it skip your implementation. The built-in
    ``delayed_delivery`` plugin indexes delivery-delay headers here; ``pop`` derives the pop events that skip
    a pop group's records from a backlog eviction's ``BacklogEvicted``.
    """


@hookspec
def logwright_hold_back(query: HoldBackQuery) -> HeldBack | None:
    """Hold back offsets a consumption mode is about to acquire, until a time.

    :param query: one partition's candidate offsets ``first..last``, the broker clock, whether the mode
        delivers in offset order (Exclusive, Failover), the projections' rows and ``memo`` (as above).

    Called by share groups and logwright subscriptions (and any mode acquiring records one by one) before
    they acquire, per partition, never per record. Return `HeldBack` spans (offsets and the time each
    may go), or ``None``. Every implementation runs and their spans add up; the coordinator skips held
    offsets and its timer wakes waiting fetches at the earliest time. The built-in ``delayed_delivery``
    plugin holds back records whose delivery time has not come.
    """


# -- wrappers --------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def logwright_admit_append(request: AppendRequest) -> Admission | None:
    """Admit or refuse a produce request's appends before anything is written.

    :param request: every partition the request appends to, with record counts and sizes.

    Called once per produce request, after every partition is validated and before anything is
    written. The built-in ``admission`` plugin admits everything (while it is the only implementation the
    hook is not called at all); quota and dedup plugins wrap it (``@hookimpl(wrapper=True)``):
    ``admission = yield`` and return ``admission.refuse(partition_id, SomeDomainError("why"))`` for
    partitions they refuse (``PolicyViolation`` answers POLICY_VIOLATION; one call a partition costs what
    ``admission.refusing(pairs)`` does per partition). A refused partition is answered
    with the error's Kafka code and message; the others are appended. A partition refused with
    ``AppendHeld`` is held: the request waits and the chain is asked again for it after every commit, until
    admitted, refused otherwise, or the request's timeout (THROTTLING_QUOTA_EXCEEDED, retriable); the
    built-in ``backlog_quota`` plugin holds this way. An exception refuses the whole
    request with UNKNOWN_SERVER_ERROR. Declare the topics an implementation acts on with `acts_on_topics`: a
    request to topics outside every declared scope is then admitted without calling the chain.
    """
