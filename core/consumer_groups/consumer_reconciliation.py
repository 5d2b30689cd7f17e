"""Decisions of KIP-848 consumer groups: ConsumerGroupHeartbeat, leaving, timeouts and offset commit checks.

One heartbeat: validate the member and its epoch, record what it changed, bump the group epoch when
membership, a subscription or a subscribed topic changed, recompute the target assignment with the
group's server-side assignor, then move the member one step towards its target. A partition moves only
through revocation: its old owner is told to give it up, the new owner gets it only once no member
still owns it (it acknowledged the revocation by heartbeating without it, or it left).

Epochs follow Kafka: a member's epoch moves to the target epoch once it revoked what it had to; a
heartbeat with an epoch above the member's, or below it other than the previous one sent with a subset
of its partitions (a lost response), is FENCED_MEMBER_EPOCH. Epoch -1 leaves, -2 leaves a static
member temporarily: it keeps its partitions until it rejoins under its instance id or times out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from logwright.core.consumer_groups.consumer_assignors import (
    ASSIGNORS,
    DEFAULT_ASSIGNORS,
    AssignorMember,
    supported_listing,
)
from logwright.core.consumer_groups.consumer_groups import (
    STATIC_LEAVE_EPOCH,
    ConsumerGroupState,
    ConsumerMember,
    MemberState,
    as_set,
    as_tuple,
    fold,
)
from logwright.core.consumer_groups.topic_patterns import CompiledPattern, PatternCompiler, PatternError
from logwright.core.errors import (
    FencedMemberEpoch,
    GroupMaxSizeReached,
    IllegalGeneration,
    InvalidRegularExpression,
    InvalidRequest,
    StaleMemberEpoch,
    UnknownMember,
    UnreleasedInstanceId,
    UnsupportedAssignor,
    UnsupportedFeature,
    quoted,
)
from logwright.core.events import Event
from logwright.core.events.consumer_groups import (
    ConsumerGroupEpochBumped,
    ConsumerMemberLeft,
    ConsumerMemberReconciled,
    ConsumerMemberSubscribed,
    ConsumerStaticMemberReplaced,
    ConsumerTargetAssignmentComputed,
    SubscriptionMetadata,
    TopicPartitions,
)

LEAVE_EPOCH = -1
JOIN_EPOCH = 0

Topics = Mapping[str, tuple[bytes, int]]
"""Every existing topic: name → (topic id, partition count)."""


class TopicCatalog(dict[str, tuple[bytes, int]]):
    """`Topics` that remember which topics each regex matches: every heartbeat asks again for every member of the
    group, and matching each regex member against every topic each time cost members x topics (about 0.5 s a
    heartbeat for 50 regex members beside 10,000 topics). Build a new one when the topics change."""

    def __init__(self, topics: Mapping[str, tuple[bytes, int]]) -> None:
        super().__init__(topics)
        self._matches: dict[str, tuple[CompiledPattern, frozenset[str]]] = {}

    def matching(self, regex: str, pattern: CompiledPattern) -> frozenset[str]:
        """The topics ``pattern`` (compiled from ``regex``) matches in full."""
        found = self._matches.get(regex)
        if found is None:
            found = self._matches[regex] = (pattern, frozenset(name for name in self if pattern.fullmatch(name)))
        return found[1]

    def with_changes(self, changes: Mapping[str, tuple[bytes, int] | None]) -> TopicCatalog:
        """A new catalog: this one with the topics in ``changes`` set (``None``: gone), the regexes' matches carried
        over and only the changed names tried against them (each topic created beside 50,000 rebuilt the catalog and
        matched every regex against every name again: about 16 ms, and as much per regex)."""
        changed = TopicCatalog(self)
        for name, entry in changes.items():
            if entry is None:
                changed.pop(name, None)
            else:
                changed[name] = entry
        for regex, (pattern, found) in self._matches.items():
            gone = {name for name in changes if name in found and name not in changed}
            new = {name for name in changes if name in changed and name not in found and pattern.fullmatch(name)}
            changed._matches[regex] = (pattern, found.difference(gone).union(new) if gone or new else found)
        return changed

    def regex_matches_within(self, allowed: frozenset[str]) -> TopicCatalog:
        """This catalog with every regex's matches kept to ``allowed`` (topics subscribed by name are not touched):
        a group's regexes resolved once for a principal that may not DESCRIBE every topic they match, as Kafka's
        TopicRegexResolver leaves those out of the group's resolution. A topic created since is in no regex's
        matches until the group resolves its regexes again."""
        return _RegexMatchesWithin(self, allowed)


class _RegexMatchesWithin(TopicCatalog):
    """`TopicCatalog.regex_matches_within`: the entries and the unrestricted matches shared with the catalog."""

    def __init__(self, catalog: TopicCatalog, allowed: frozenset[str]) -> None:
        super().__init__(catalog)
        self._catalog = catalog
        self._allowed = allowed
        self._within: dict[str, frozenset[str]] = {}

    def matching(self, regex: str, pattern: CompiledPattern) -> frozenset[str]:
        found = self._within.get(regex)
        if found is None:
            found = self._within[regex] = self._catalog.matching(regex, pattern) & self._allowed
        return found

    def with_changes(self, changes: Mapping[str, tuple[bytes, int] | None]) -> TopicCatalog:
        return self._catalog.with_changes(changes).regex_matches_within(self._allowed)


@dataclass(frozen=True, slots=True)
class AssignmentPace:
    """When a heartbeat may compute a new target assignment (KIP-1263, Kafka 4.3+): not sooner than ``interval_ms``
    (the group's ``consumer.assignment.interval.ms``) after the last one, on the broker clock, so a burst of joins
    costs one assignor run instead of one each. A target never paced (an empty group's) lets the next change be
    assigned at once; 0 assigns every change at once."""

    now_ms: int = 0
    interval_ms: int = 0

    def allows(self, state: ConsumerGroupState) -> bool:
        return (state.assignment_time_ms == 0 or self.interval_ms == 0
                or self.now_ms >= state.assignment_time_ms + self.interval_ms)


AT_ONCE = AssignmentPace()


@dataclass(frozen=True, slots=True)
class ConsumerHeartbeat:
    """One ConsumerGroupHeartbeat; ``None`` fields did not change since the member's last heartbeat."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: TopicPartitions | None = None
    client_id: str = ""
    client_host: str = ""
    member_id_required: bool = False
    """v1+ (KIP-1082): the client generates its member id, so an empty one is INVALID_REQUEST; v0 gets one."""


def subscribed_topics(member: ConsumerMember, topics: Topics, patterns: PatternCompiler) -> frozenset[str]:
    """The existing topics a member subscribes to: its names, and every topic its regex matches in full
    (compiled by ``patterns``: RE2 in the broker, as Kafka's RE2J). As in Kafka, internal topics are not
    skipped: a client that does not want ``__consumer_offsets`` writes a regex that does not match it."""
    names = {name for name in member.subscribed_topic_names if name in topics}
    if member.subscribed_topic_regex:
        try:
            pattern = patterns(member.subscribed_topic_regex)
        except PatternError:
            pattern = None
        if pattern is not None:
            names.update(topics.matching(member.subscribed_topic_regex, pattern) if isinstance(topics, TopicCatalog)
                         else (name for name in topics if pattern.fullmatch(name)))
    return frozenset(names)


def subscription_metadata(state: ConsumerGroupState, topics: Topics,
                          patterns: PatternCompiler) -> SubscriptionMetadata:
    """The topics the group subscribes to, with their ids and partition counts. Every heartbeat asks, and a stable
    group's members and its `TopicCatalog` are the same objects from one heartbeat to the next: the answer is kept
    for the last `METADATA_KEPT` (members, catalog) pairs asked about (a pass over 1,000 members' subscriptions at
    each of their heartbeats was the group's main cost)."""
    if not isinstance(topics, TopicCatalog):  # a plain mapping may change in place: nothing kept
        return _metadata(state, topics, patterns)
    key = (id(state.members), id(topics), id(patterns))
    kept = _METADATA.get(key)
    if kept is not None and kept[0] is state.members and kept[1] is topics and kept[2] is patterns:
        return kept[3]
    metadata = _metadata(state, topics, patterns)
    if len(_METADATA) >= METADATA_KEPT:
        _METADATA.clear()
    _METADATA[key] = (state.members, topics, patterns, metadata)
    return metadata


def _metadata(state: ConsumerGroupState, topics: Topics, patterns: PatternCompiler) -> SubscriptionMetadata:
    names = set().union(*(subscribed_topics(member, topics, patterns) for member in state.members))
    return tuple((name, topics[name][0], topics[name][1]) for name in sorted(names))


METADATA_KEPT = 64
_METADATA: dict[tuple[int, int, int], tuple[object, object, object, SubscriptionMetadata]] = {}
"""Answers of `subscription_metadata` by the identities of what they were computed from, kept with them (so no id is
reused while kept): a state's members tuple and a `TopicCatalog` never change."""


def choose_assignor(state: ConsumerGroupState, enabled: Sequence[str] = DEFAULT_ASSIGNORS) -> str:
    """The enabled server assignor most members name (ties by name), else the first enabled
    (``group.consumer.assignors``)."""
    votes = Counter(name for member in state.members
                    if (name := member.server_assignor) is not None and name in enabled)
    if not votes:
        return enabled[0]
    return min(votes, key=lambda name: (-votes[name], name))


def check_heartbeat(command: ConsumerHeartbeat, patterns: PatternCompiler, assignors: Sequence[str]) -> None:
    """Kafka 4.4's checks of a heartbeat, in its order (``throwIfConsumerGroupHeartbeatRequestIsInvalid``)."""
    if not command.group_id:
        raise InvalidRequest("a consumer group heartbeat needs a non-empty group id")
    if command.instance_id == "":
        raise InvalidRequest("InstanceId can't be empty.")
    if command.rack_id == "":
        raise InvalidRequest("RackId can't be empty.")
    if command.member_id_required and not command.member_id:
        raise InvalidRequest("MemberId can't be empty: from version 1 the client generates it.")
    if command.member_epoch < STATIC_LEAVE_EPOCH:
        raise InvalidRequest(f"member epoch {command.member_epoch} is not valid (-2, -1, 0 or a member's epoch)")
    if command.member_epoch != JOIN_EPOCH and not command.member_id:
        raise InvalidRequest("a heartbeat with a non-zero epoch needs the member id")
    if command.member_epoch == STATIC_LEAVE_EPOCH and command.instance_id is None:
        raise InvalidRequest("InstanceId can't be null: epoch -2 is a static member's leave.")
    if command.member_epoch == JOIN_EPOCH:
        if command.rebalance_timeout_ms < 0:
            raise InvalidRequest("RebalanceTimeoutMs must be provided in first request.")
        if command.subscribed_topic_names is None and command.subscribed_topic_regex is None:
            raise InvalidRequest("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        if command.owned is None or command.owned:
            raise InvalidRequest("TopicPartitions must be empty when (re-)joining.")
    if command.server_assignor and command.server_assignor not in assignors:
        raise UnsupportedAssignor(f"ServerAssignor {command.server_assignor} is not supported. Supported assignors: "
                                  f"{supported_listing(assignors)}.")
    if command.subscribed_topic_regex:
        try:
            patterns(command.subscribed_topic_regex)
        except PatternError as error:
            raise InvalidRegularExpression(
                f"subscribed topic regex {command.subscribed_topic_regex!r} does not compile: {error}") from error


def _check_epoch(group_id: str, member: ConsumerMember, command: ConsumerHeartbeat) -> None:
    received = command.member_epoch
    if received == member.member_epoch:
        return
    if (received < member.member_epoch and received == member.previous_member_epoch and command.owned is not None
            and as_set(command.owned) <= as_set(member.assigned)):
        return
    raise FencedMemberEpoch(f"member {quoted(member.member_id)} of consumer group {quoted(group_id)} sent epoch "
                            f"{received}, "
                            f"its epoch is {member.member_epoch}; rejoin with epoch 0")


def _check_room(group: ConsumerGroupState, max_size: int) -> None:
    """Refuse a member new to a group that has ``max_size`` members (static members that left count: they may come
    back), in Kafka 4.4's words; a static member replacing one that left takes its place and is not refused."""
    if len(group.members) >= max_size:
        raise GroupMaxSizeReached(f"The consumer group has reached its maximum capacity of {max_size} members.")


def _subscribed_event(group_id: str, member_id: str, existing: ConsumerMember | None,
                      command: ConsumerHeartbeat) -> ConsumerMemberSubscribed:
    def pick(new: str | None, old: str | None) -> str | None:
        return old if new is None else (new or None)

    return ConsumerMemberSubscribed(
        group_id, member_id,
        instance_id=pick(command.instance_id, existing.instance_id if existing else None),
        rack_id=pick(command.rack_id, existing.rack_id if existing else None),
        client_id=command.client_id or (existing.client_id if existing else ""),
        client_host=command.client_host or (existing.client_host if existing else ""),
        rebalance_timeout_ms=(command.rebalance_timeout_ms if command.rebalance_timeout_ms >= 0
                              else existing.rebalance_timeout_ms if existing else 0),
        server_assignor=pick(command.server_assignor, existing.server_assignor if existing else None),
        subscribed_topic_names=(tuple(sorted(set(command.subscribed_topic_names)))
                                if command.subscribed_topic_names is not None
                                else existing.subscribed_topic_names if existing else ()),
        subscribed_topic_regex=pick(command.subscribed_topic_regex,
                                    existing.subscribed_topic_regex if existing else None),
    )


def _changes_subscription(before: ConsumerMember | None, event: ConsumerMemberSubscribed) -> bool:
    return before is None or (before.subscribed_topic_names, before.subscribed_topic_regex, before.server_assignor,
                              before.rack_id) != (event.subscribed_topic_names, event.subscribed_topic_regex,
                                                  event.server_assignor, event.rack_id)


UNBOUNDED_GROUP_SIZE = 2**31 - 1
"""``group.consumer.max.size``'s default (Kafka's Integer.MAX_VALUE): no limit in practice."""


def heartbeat(state: ConsumerGroupState | None, command: ConsumerHeartbeat, topics: Topics,
              new_member_id: Callable[[], str], patterns: PatternCompiler,
              pace: AssignmentPace = AT_ONCE, max_size: int = UNBOUNDED_GROUP_SIZE,
              assignors: Sequence[str] = DEFAULT_ASSIGNORS) -> tuple[str, list[Event]]:
    """Decide one ConsumerGroupHeartbeat: the member id to answer with and the events to append; ``patterns``
    compiles subscribed regexes (`topic_patterns`); ``pace`` says whether a new target may be computed now;
    ``max_size`` is ``group.consumer.max.size`` and ``assignors`` ``group.consumer.assignors`` (names, the default
    first).

    Raises `InvalidRequest`, `UnknownMember`, `FencedMemberEpoch`, `UnreleasedInstanceId`, `GroupMaxSizeReached`,
    `UnsupportedAssignor` or `InvalidRegularExpression` without changing anything.
    """
    check_heartbeat(command, patterns, assignors)
    group_id = command.group_id
    current = state if state is not None else ConsumerGroupState(group_id)
    if command.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
        return command.member_id, leave(current, command.member_id, command.instance_id, command.member_epoch,
                                        topics, patterns, assignors)
    events: list[Event] = []
    member_id = command.member_id or new_member_id()
    existing = current.member(member_id)
    if command.member_epoch == JOIN_EPOCH:
        static = current.static_member(command.instance_id) if command.instance_id else None
        if static is not None and static.member_id != member_id:
            if static.member_epoch != STATIC_LEAVE_EPOCH:
                raise UnreleasedInstanceId(f"instance id {quoted(command.instance_id)} of consumer group "
                                           f"{quoted(group_id)} is "
                                           f"still held by member {static.member_id!r}")
            events.append(ConsumerStaticMemberReplaced(group_id, member_id, static.member_id))
            existing = static
        elif existing is not None:
            events.append(ConsumerMemberReconciled(group_id, member_id, 0, -1, MemberState.STABLE, (), ()))
        else:
            _check_room(current, max_size)
    else:
        if existing is None:
            _check_room(current, max_size)  # Kafka 4.4 says the group is full before that it does not know the member
            raise UnknownMember(f"member {quoted(member_id)} is not in consumer group {quoted(group_id)}; rejoin "
                                "with epoch 0")
        _check_epoch(group_id, existing, command)
    subscribed = _subscribed_event(group_id, member_id, existing, command)
    if existing is None or _changes_subscription(existing, subscribed) or (
            subscribed.client_host, subscribed.client_id, subscribed.rebalance_timeout_ms, subscribed.instance_id
    ) != (existing.client_host, existing.client_id, existing.rebalance_timeout_ms, existing.instance_id):
        events.append(subscribed)
    events.extend(refresh(fold(current, events, group_id), topics, member_id,
                          force=_changes_subscription(existing, subscribed), patterns=patterns, pace=pace,
                          assignors=assignors))
    folded = fold(current, events, group_id)
    lagging = folded.group_epoch > folded.assignment_epoch
    member = folded.member(member_id)
    subscribed_now = subscribed_topics(member, topics, patterns) if lagging and member is not None else None
    events.extend(reconcile(folded, member_id, command.owned, subscribed_now))
    return member_id, events


def refresh(state: ConsumerGroupState, topics: Topics, member_id: str, force: bool,
            patterns: PatternCompiler, pace: AssignmentPace | None,
            assignors: Sequence[str] = DEFAULT_ASSIGNORS) -> list[Event]:
    """Bump the group epoch if forced or the subscribed topics changed, and recompute a stale target when ``pace``
    allows it (``None``: not on this path, as Kafka computes none when members leave) or nobody is left; with the
    assignor `choose_assignor` picks among ``assignors``."""
    events: list[Event] = []
    metadata = subscription_metadata(state, topics, patterns)
    if force or metadata != state.subscription_metadata:
        bumped = ConsumerGroupEpochBumped(state.group_id, member_id, state.group_epoch + 1, metadata)
        events.append(bumped)
        state = fold(state, [bumped], state.group_id)
    if not state.members and state.group_epoch > state.assignment_epoch:  # the next join is assigned at once
        events.append(ConsumerTargetAssignmentComputed(state.group_id, member_id, state.group_epoch,
                                                       choose_assignor(state, assignors), ()))
    elif state.group_epoch > state.assignment_epoch and pace is not None and pace.allows(state):
        name = choose_assignor(state, assignors)
        members = [AssignorMember(m.member_id, subscribed_topics(m, topics, patterns)) for m in state.members]
        counts = {name_: count for name_, _, count in state.subscription_metadata}
        previous = {owner: as_set(partitions) for owner, partitions in state.targets}
        targets = ASSIGNORS[name].assign(members, counts, previous)
        events.append(ConsumerTargetAssignmentComputed(
            state.group_id, member_id, state.group_epoch, name,
            tuple((owner, as_tuple(targets[owner])) for owner in sorted(targets)), pace.now_ms))
    return events


def reconcile(state: ConsumerGroupState, member_id: str, owned: TopicPartitions | None,
              subscribed: frozenset[str] | None = None) -> list[Event]:
    """Move one member a step towards its target: revoke first, then take only partitions nobody owns.

    While the target lags the group (its computation paced), ``subscribed`` are the topics the member subscribes to
    now: its target's partitions of others are dropped, and one it holds is revoked at once, its epoch kept, as
    Kafka 4.4 does (KAFKA-19431)."""
    member = state.member(member_id)
    if member is None or member.member_epoch == STATIC_LEAVE_EPOCH:
        return []
    target = as_set(state.target(member_id))
    epoch = state.assignment_epoch
    assigned = as_set(member.assigned)
    if subscribed is not None:
        target = frozenset(partition for partition in target if partition[0] in subscribed)
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        if owned is None or as_set(owned) & as_set(member.revoking):
            return []
    elif member.member_epoch == epoch and member.state == MemberState.STABLE and (
            subscribed is None or all(partition[0] in subscribed for partition in assigned)):
        return []
    keep, revoke = assigned & target, assigned - target
    if revoke:
        step = (member.member_epoch, member.previous_member_epoch, MemberState.UNREVOKED_PARTITIONS, keep, revoke)
    else:
        pending = target - assigned
        free = pending - _owned_by_others(state, member_id) if pending else pending
        previous = member.member_epoch if epoch != member.member_epoch else member.previous_member_epoch
        unreleased = bool(pending - free)
        step = (epoch, previous, MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
                keep | free, frozenset())
    new_epoch, previous_epoch, new_state, new_assigned, new_revoking = step
    if (new_epoch, previous_epoch, new_state, as_tuple(new_assigned), as_tuple(new_revoking)) == (
            member.member_epoch, member.previous_member_epoch, member.state, member.assigned, member.revoking):
        return []
    return [ConsumerMemberReconciled(state.group_id, member_id, new_epoch, previous_epoch, new_state,
                                     as_tuple(new_assigned), as_tuple(new_revoking))]


def _owned_by_others(state: ConsumerGroupState, member_id: str) -> set[tuple[str, int]]:
    """Every partition another member holds or is revoking: built only for a member waiting for partitions (every
    heartbeat of a stable member built it, the whole group's partitions each time)."""
    owned: set[tuple[str, int]] = set()
    for other in state.members:
        if other.member_id != member_id:
            owned |= as_set(other.assigned) | as_set(other.revoking)
    return owned


def leave(state: ConsumerGroupState, member_id: str, instance_id: str | None, epoch: int,
          topics: Topics, patterns: PatternCompiler, assignors: Sequence[str] = DEFAULT_ASSIGNORS) -> list[Event]:
    """Epoch -1 (or -2 of a member that joined without an instance id): the member leaves and the group rebalances.
    Epoch -2 of a static member: it keeps its partitions, at epoch -2, until it rejoins or its session times out."""
    member = state.member(member_id)
    if member is None and instance_id:
        member = state.static_member(instance_id)
    if member is None:
        raise UnknownMember(f"member {quoted(member_id)} is not in consumer group {quoted(state.group_id)}")
    if epoch == STATIC_LEAVE_EPOCH and member.instance_id:
        return [ConsumerMemberReconciled(state.group_id, member.member_id, STATIC_LEAVE_EPOCH, member.member_epoch,
                                         member.state, member.assigned, member.revoking)]
    return remove(state, member.member_id, "left the group", topics, patterns, assignors)


def remove(state: ConsumerGroupState, member_id: str, reason: str, topics: Topics,
           patterns: PatternCompiler, assignors: Sequence[str] = DEFAULT_ASSIGNORS) -> list[Event]:
    """A member is gone (left, session or rebalance timeout): free its partitions and rebalance the rest."""
    return remove_all(state, ((member_id, reason),), topics, patterns, assignors)


def remove_all(state: ConsumerGroupState, gone: Sequence[tuple[str, str]], topics: Topics,
               patterns: PatternCompiler, assignors: Sequence[str] = DEFAULT_ASSIGNORS) -> list[Event]:
    """Members gone together, each with its reason (the session timeouts one timer pass found): their partitions
    freed and the rest rebalanced once, where a rebalance per member made 1,000 members timing out together cost
    1,000 assignments. A member not in the group, or named again, is skipped."""
    present = {member.member_id for member in state.members}
    lefts: list[Event] = []
    for member_id, reason in gone:
        if member_id in present:
            present.discard(member_id)
            lefts.append(ConsumerMemberLeft(state.group_id, member_id, reason))
    if not lefts:
        return []
    return [*lefts, *refresh(fold(state, lefts, state.group_id), topics, "", force=True, patterns=patterns,
                             pace=None, assignors=assignors)]


def check_member_epoch(state: ConsumerGroupState, member_id: str | None, member_epoch: int,
                       commit: bool, modern_commit: bool = True) -> ConsumerMember | None:
    """OffsetCommit and OffsetFetch (v9+) of a consumer group: a member must send its current epoch.

    Epoch -1 is an admin or unmanaged consumer: a commit is allowed while the group has no members (whatever member
    id it names), a fetch when it names no member (a null id; an empty one is a member no group has). Otherwise
    raises `UnknownMember`, or for a wrong epoch `StaleMemberEpoch` (`IllegalGeneration` for a member that speaks
    the classic protocol: its epoch is its generation). ``modern_commit``: the commit may come from a
    consumer-protocol member (OffsetCommit v9+, or transactional); one below refuses them with `UnsupportedFeature`.
    As Kafka 4.4's ``ConsumerGroup.validateOffsetCommit/Fetch``.
    """
    if member_epoch < 0 and (not state.members if commit else member_id is None):
        return None
    member = state.member(member_id or "")
    if member is None:
        raise UnknownMember(f"member {quoted(member_id)} is not in consumer group {quoted(state.group_id)}")
    if commit and not modern_commit and not member.uses_classic_protocol:
        raise UnsupportedFeature("OffsetCommit version 9 or above must be used by members using the modern group "
                                 "protocol")
    if member_epoch != member.member_epoch:
        if member.uses_classic_protocol:
            raise IllegalGeneration(f"The received generation id {member_epoch} does not match the expected member "
                                    f"epoch {member.member_epoch}.")
        raise StaleMemberEpoch(f"member {quoted(member_id)} of consumer group {quoted(state.group_id)} sent epoch "
                               f"{member_epoch}, its epoch is {member.member_epoch}")
    return member
