"""KIP-848 consumer groups: assignors, and the reconciliation state machine given events, when a heartbeat runs.

The property tests drive random joins, leaves, heartbeats (acknowledging or not), topic growth and timeouts
and check the promise the protocol makes: no partition is ever owned by two members at once, and once
everyone heartbeats and acknowledges, every partition is owned.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from logwright.core.consumer_groups import consumer_assignors, consumer_reconciliation
from logwright.core.consumer_groups.consumer_assignors import (
    ASSIGNORS,
    AssignorMember,
    RangeAssignor,
    UniformAssignor,
    assignor_names,
)
from logwright.core.consumer_groups.consumer_groups import (
    CONSUMER_GROUPS,
    ConsumerGroupState,
    ConsumerMember,
    MemberState,
    as_set,
    fold,
)
from logwright.core.consumer_groups.consumer_reconciliation import (
    AT_ONCE,
    UNBOUNDED_GROUP_SIZE,
    AssignmentPace,
    ConsumerHeartbeat,
    TopicCatalog,
    check_member_epoch,
    heartbeat,
    remove,
)
from logwright.core.consumer_groups.topic_patterns import CompiledPattern, PatternError
from logwright.core.errors import (
    FencedMemberEpoch,
    GroupMaxSizeReached,
    InvalidRegularExpression,
    InvalidRequest,
    StaleMemberEpoch,
    UnknownMember,
    UnreleasedInstanceId,
    UnsupportedAssignor,
)
from logwright.core.events import Event, GroupDeleted
from logwright.core.events.consumer_groups import ConsumerTargetAssignmentComputed, TopicPartitions
from logwright.core.projection import fold as fold_projection

GROUP = "g"


def compile_for_tests(pattern: str) -> CompiledPattern:
    """The standard library's engine: the decisions only need a pattern's ``fullmatch`` (the broker gives RE2)."""
    try:
        return re.compile(pattern)
    except re.error as error:
        raise PatternError(str(error)) from error


class Group:
    """A group's log; heartbeats decide against the folded state and append what they decide."""

    def __init__(self, topics: Mapping[str, tuple[bytes, int]] | None = None) -> None:
        self.log: list[Event] = []
        self.topics = dict(topics or {"orders": (b"o" * 16, 6)})
        self.counter = 0
        self.pace = AT_ONCE
        self.max_size = UNBOUNDED_GROUP_SIZE

    @property
    def state(self) -> ConsumerGroupState | None:
        state = fold_projection(CONSUMER_GROUPS, self.log).get(GROUP)
        assert state is None or isinstance(state, ConsumerGroupState)
        return state

    def beat(self, member_id: str, epoch: int, owned: TopicPartitions | None = None, *,
             names: tuple[str, ...] = ("orders",), instance_id: str | None = None, server_assignor: str | None = None,
             subscribed_topic_regex: str | None = None) -> int:
        """One heartbeat (a join carries the subscription and rebalance timeout); the member's epoch after it."""
        joining = epoch == 0
        command = ConsumerHeartbeat(GROUP, member_id, epoch, instance_id=instance_id,
                                    rebalance_timeout_ms=60_000 if joining else -1,
                                    subscribed_topic_names=names if joining else None,
                                    subscribed_topic_regex=subscribed_topic_regex, server_assignor=server_assignor,
                                    owned=() if joining and owned is None else owned)
        _, events = heartbeat(self.state, command, self.topics, self._new_id, compile_for_tests, self.pace,
                              self.max_size)
        self.log.extend(events)
        member = self.state.member(member_id) if self.state else None
        return member.member_epoch if member else epoch

    def _new_id(self) -> str:
        self.counter += 1
        return f"generated-{self.counter}"

    def member(self, member_id: str) -> ConsumerMember:
        state = self.state
        assert state is not None
        found = state.member(member_id)
        assert found is not None
        return found


def owners(state: ConsumerGroupState) -> dict[tuple[str, int], list[str]]:
    found: dict[tuple[str, int], list[str]] = {}
    for member in state.members:
        for partition in as_set(member.assigned) | as_set(member.revoking):
            found.setdefault(partition, []).append(member.member_id)
    return found


# -- assignors -------------------------------------------------------------------------------------


def test_uniform_balances_and_keeps_partitions_where_they_were() -> None:
    members = [AssignorMember(name, frozenset({"orders"})) for name in ("a", "b")]
    first = UniformAssignor().assign(members, {"orders": 6}, {})
    assert sorted(len(partitions) for partitions in first.values()) == [3, 3]
    third = [*members, AssignorMember("c", frozenset({"orders"}))]
    second = UniformAssignor().assign(third, {"orders": 6}, first)
    assert sorted(len(partitions) for partitions in second.values()) == [2, 2, 2]
    assert second["a"] <= first["a"] and second["b"] <= first["b"], "only the new member's share moved"


def test_range_gives_contiguous_partitions_in_member_order() -> None:
    members = [AssignorMember(name, frozenset({"orders"})) for name in ("b", "a")]
    assignment = RangeAssignor().assign(members, {"orders": 5}, {})
    assert assignment == {"a": frozenset(("orders", i) for i in (0, 1, 2)),
                          "b": frozenset(("orders", i) for i in (3, 4))}


@given(
    subscriptions=st.lists(st.sets(st.sampled_from(["t1", "t2", "t3"]), min_size=1), min_size=1, max_size=6),
    counts=st.tuples(st.integers(0, 7), st.integers(0, 7), st.integers(0, 7)),
    assignor=st.sampled_from(sorted(ASSIGNORS)),
)
def test_every_partition_goes_to_exactly_one_subscriber(subscriptions: list[set[str]],
                                                        counts: tuple[int, int, int], assignor: str) -> None:
    members = [AssignorMember(f"m{i}", frozenset(topics)) for i, topics in enumerate(subscriptions)]
    partition_counts = dict(zip(("t1", "t2", "t3"), counts, strict=True))
    assignment = ASSIGNORS[assignor].assign(members, partition_counts, {})
    subscribed = {t for m in members for t in m.subscribed_topics}
    expected = {(t, i) for t in subscribed for i in range(partition_counts[t])}
    handed = [p for partitions in assignment.values() for p in partitions]
    assert sorted(handed) == sorted(expected)
    for member in members:
        assert all(topic in member.subscribed_topics for topic, _ in assignment[member.member_id])
    if assignor == "uniform" and len({frozenset(s) for s in subscriptions}) == 1:
        sizes = [len(p) for p in assignment.values()]
        assert max(sizes) - min(sizes) <= 1


def _uniform_by_scanning(members: list[AssignorMember], partition_counts: Mapping[str, int],
                         previous: Mapping[str, frozenset[tuple[str, int]]]) -> dict[str, frozenset[tuple[str, int]]]:
    """The uniform assignor as first written: every candidate scanned for every partition, and again each pass. The
    heaps that replaced the scans must decide exactly as it did."""
    eligible: dict[tuple[str, int], list[str]] = {}
    for topic in sorted({t for m in members for t in m.subscribed_topics if t in partition_counts}):
        subscribers = sorted(m.member_id for m in members if topic in m.subscribed_topics)
        for index in range(partition_counts[topic]):
            eligible[(topic, index)] = subscribers
    owned: dict[str, set[tuple[str, int]]] = {m.member_id: set() for m in members}
    owner: dict[tuple[str, int], str] = {}
    for member_id in sorted(previous):
        for partition in sorted(previous[member_id]):
            if member_id in owned and member_id in eligible.get(partition, ()) and partition not in owner:
                owner[partition] = member_id
                owned[member_id].add(partition)
    for partition, candidates in eligible.items():
        if partition not in owner:
            chosen = min(candidates, key=lambda m: (len(owned[m]), m))
            owner[partition] = chosen
            owned[chosen].add(partition)
    moved = True
    while moved:
        moved = False
        for partition in sorted(owner, key=lambda p: (p[0], -p[1])):
            current = owner[partition]
            best = min(eligible[partition], key=lambda m: (len(owned[m]), m))
            if len(owned[current]) > len(owned[best]) + 1:
                owned[current].discard(partition)
                owned[best].add(partition)
                owner[partition] = best
                moved = True
    return {member_id: frozenset(partitions) for member_id, partitions in owned.items()}


_topics = ["t1", "t2", "t3", "t4"]


@settings(max_examples=300)
@given(
    subscriptions=st.lists(st.sets(st.sampled_from(_topics), min_size=1), min_size=1, max_size=7),
    counts=st.tuples(*(st.integers(0, 9) for _ in _topics)),
    previous_owners=st.lists(st.integers(0, 9), max_size=40),
)
def test_the_uniform_assignor_decides_as_scanning_every_candidate_did(
        subscriptions: list[set[str]], counts: tuple[int, ...], previous_owners: list[int]) -> None:
    members = [AssignorMember(f"m{i}", frozenset(topics)) for i, topics in enumerate(subscriptions)]
    partition_counts = dict(zip(_topics, counts, strict=True))
    everything = [(t, i) for t in _topics for i in range(partition_counts[t])]
    previous: dict[str, set[tuple[str, int]]] = {}
    for partition, member in zip(everything, previous_owners, strict=False):  # some gone, some not subscribed
        previous.setdefault(f"m{member}", set()).add(partition)
    frozen = {member: frozenset(partitions) for member, partitions in previous.items()}
    assert UniformAssignor().assign(members, partition_counts, frozen) == _uniform_by_scanning(
        members, partition_counts, frozen)


def test_the_uniform_assignor_scans_no_candidates_per_partition(monkeypatch: pytest.MonkeyPatch) -> None:
    """1,000 members over 10,000 partitions: a scan of every candidate for every partition, in each of two passes,
    was about 6 s of event loop on each membership change. Every candidate a ``min`` of the module looks at is
    counted; the least loaded member comes from a heap instead."""
    scanned = 0

    def counting_min(candidates: Any, **kwargs: Any) -> Any:
        nonlocal scanned
        listed = list(candidates)
        scanned += len(listed)
        return min(listed, **kwargs)

    monkeypatch.setattr(consumer_assignors, "min", counting_min, raising=False)
    members = [AssignorMember(f"m{i:04}", frozenset({"t"})) for i in range(1_000)]
    assignment = UniformAssignor().assign(members, {"t": 10_000}, {})
    assert {len(partitions) for partitions in assignment.values()} == {10}
    assert scanned < 10_000, scanned


# -- reconciliation --------------------------------------------------------------------------------


def test_a_second_member_gets_partitions_only_after_the_first_revoked_them() -> None:
    group = Group()
    assert group.beat("a", 0) == 2, "a new group is at epoch 1; its first member bumps it"
    assert len(as_set(group.member("a").assigned)) == 6
    assert group.beat("b", 0) == 3
    b = group.member("b")
    assert (b.state, b.assigned) == (MemberState.UNRELEASED_PARTITIONS, ())
    assert group.beat("a", 2) == 2
    a = group.member("a")
    assert a.state == MemberState.UNREVOKED_PARTITIONS and len(as_set(a.revoking)) == 3
    assert group.beat("b", 3, owned=()) == 3 and group.member("b").assigned == (), "still owned by a"
    assert group.beat("a", 2, owned=a.assigned) == 3
    assert group.member("a").state == MemberState.STABLE
    assert group.beat("b", 3) == 3
    assert as_set(group.member("b").assigned) == as_set(a.revoking)
    state = group.state
    assert state is not None and state.phase == "Stable"


def test_a_lost_response_is_forgiven_but_a_wrong_epoch_is_fenced() -> None:
    group = Group()
    group.beat("a", 0)
    group.beat("b", 0)
    a = group.member("a")
    group.beat("a", 2, owned=group.member("a").assigned)
    group.beat("a", 2, owned=group.member("a").assigned)
    assert group.member("a").member_epoch == 3
    lost = group.beat("a", 2, owned=group.member("a").assigned)
    assert lost == 3, "previous epoch with a subset: the answer was lost"
    with pytest.raises(FencedMemberEpoch):
        group.beat("a", 2, owned=a.assigned)
    with pytest.raises(FencedMemberEpoch):
        group.beat("a", 7)
    with pytest.raises(UnknownMember):
        group.beat("nobody", 3)


def test_a_full_group_refuses_members_it_does_not_know_but_lets_a_static_member_take_its_place() -> None:
    """group.consumer.max.size as Kafka 4.4 applies it (tests/integration/test_group_max_size.py runs on both)."""
    group = Group()
    group.max_size = 2
    group.beat("a", 0)
    group.beat("b", 0, instance_id="i1")
    before = list(group.log)
    for epoch in (0, 4):  # whatever the epoch: full before unknown
        with pytest.raises(GroupMaxSizeReached, match="maximum capacity of 2 members"):
            group.beat("c", epoch)
    with pytest.raises(GroupMaxSizeReached):
        group.beat("c", 0, instance_id="i2")
    assert group.log == before
    assert group.beat("a", 0) > 0, "a member of the group may rejoin"
    with pytest.raises(UnreleasedInstanceId):  # the instance's holder has not left: that comes first
        group.beat("c", 0, instance_id="i1")
    group.beat("b", -2, instance_id="i1")
    assert group.beat("c", 0, instance_id="i1") > 0, "the static member that left is replaced"
    assert {member.member_id for member in group.state.members} == {"a", "c"}  # type: ignore[union-attr]


def test_group_consumer_assignors_names_the_assignors_a_member_may_ask_for_and_the_default() -> None:
    assert assignor_names(" range , org.apache.kafka.coordinator.group.assignor.UniformAssignor,range") == (
        "range", "uniform")
    for wrong in ("", " , ", "sticky", "org.example.Sticky"):
        with pytest.raises(ValueError):
            assignor_names(wrong)
    state = ConsumerGroupState(GROUP)
    join = ConsumerHeartbeat(GROUP, "a", 0, rebalance_timeout_ms=60_000, subscribed_topic_names=("orders",), owned=())
    topics = {"orders": (b"o" * 16, 6)}
    _, events = heartbeat(state, join, topics, lambda: "x", compile_for_tests, assignors=("range",))
    computed = [event for event in events if isinstance(event, ConsumerTargetAssignmentComputed)]
    assert [event.assignor for event in computed] == ["range"], "no member names one: the first listed"
    with pytest.raises(UnsupportedAssignor, match=r"^ServerAssignor uniform is not supported\. Supported assignors: "
                                                  r"range\.$"):
        heartbeat(state, replace(join, server_assignor="uniform"), topics, lambda: "x", compile_for_tests,
                  assignors=("range",))


def test_refusals_change_nothing() -> None:
    group = Group()
    group.beat("a", 0, instance_id="i1")
    before = list(group.log)
    with pytest.raises(UnreleasedInstanceId):
        group.beat("b", 0, instance_id="i1")
    with pytest.raises(UnsupportedAssignor):
        group.beat("c", 0, server_assignor="cooperative-sticky")
    with pytest.raises(InvalidRegularExpression):
        group.beat("d", 0, subscribed_topic_regex="orders(")
    with pytest.raises(InvalidRequest):
        heartbeat(group.state, ConsumerHeartbeat(GROUP, "e", 0), group.topics, group._new_id, compile_for_tests)
    join = ConsumerHeartbeat(GROUP, "f", 0, rebalance_timeout_ms=60_000, subscribed_topic_names=("orders",), owned=())
    for invalid in (replace(join, instance_id=""), replace(join, rack_id=""),
                    replace(join, member_id="", member_id_required=True),
                    replace(join, member_epoch=-2, subscribed_topic_names=None, owned=None)):
        with pytest.raises(InvalidRequest):
            heartbeat(group.state, invalid, group.topics, group._new_id, compile_for_tests)
    assert group.log == before
    assert heartbeat(group.state, replace(join, member_id=""), group.topics, group._new_id, compile_for_tests)[0]


def test_a_static_member_leaving_temporarily_keeps_its_partitions_for_its_successor() -> None:
    group = Group()
    group.beat("a", 0, instance_id="i1")
    group.beat("b", 0)
    for _ in range(3):
        group.beat("a", group.member("a").member_epoch, owned=group.member("a").assigned)
        group.beat("b", group.member("b").member_epoch, owned=group.member("b").assigned)
    held = group.member("a").assigned
    epoch = group.state.group_epoch if group.state else 0
    assert group.beat("a", -2, instance_id="i1") == -2
    assert group.member("a").assigned == held
    group.beat("b", group.member("b").member_epoch)
    assert group.beat("a2", 0, instance_id="i1") >= 1
    assert group.member("a2").assigned == held
    state = group.state
    assert state is not None and state.member("a") is None and state.group_epoch == epoch


def test_leaving_frees_partitions_and_a_regex_follows_new_topics() -> None:
    group = Group({"orders": (b"o" * 16, 2), "__consumer_offsets": (b"c" * 16, 2), "audit": (b"a" * 16, 1)})
    group.beat("a", 0, names=(), subscribed_topic_regex="ord.*|__.*")
    assert {topic for topic, _ in as_set(group.member("a").assigned)} == {"orders", "__consumer_offsets"}, (
        "matched in full, internal topics included (as Kafka)")
    group.beat("a", group.member("a").member_epoch, subscribed_topic_regex="ord.*")
    group.beat("a", group.member("a").member_epoch, owned=group.member("a").assigned)
    assert as_set(group.member("a").assigned) == {("orders", 0), ("orders", 1)}
    group.topics["orders-eu"] = (b"e" * 16, 1)
    group.beat("a", group.member("a").member_epoch)
    assert ("orders-eu", 0) in as_set(group.member("a").assigned)
    group.beat("b", 0, names=("orders",))
    group.beat("a", group.member("a").member_epoch, owned=group.member("a").assigned)
    group.beat("a", -1)
    group.beat("b", group.member("b").member_epoch)
    assert as_set(group.member("b").assigned) == {("orders", 0), ("orders", 1)}


def test_a_topic_catalog_matches_each_regex_once_for_every_heartbeat_of_the_group() -> None:
    """Every heartbeat matched every regex member against every topic (members x topics each time); a
    `TopicCatalog` keeps the matches until the topics change, and decides as a plain mapping does."""
    matched = 0

    class Counted:
        def __init__(self, pattern: str) -> None:
            self.pattern = re.compile(pattern)

        def fullmatch(self, text: str) -> object | None:
            nonlocal matched
            matched += 1
            return self.pattern.fullmatch(text)

    names = {f"orders-{n}": (n.to_bytes(16, "big"), 1) for n in range(300)} | {"audit": (b"a" * 16, 1)}
    group, plain = Group(), Group(names)
    group.topics = TopicCatalog(names)  # type: ignore[assignment]
    for member in ("a", "b", "c"):
        for each in (group, plain):
            each.beat(member, 0, names=(), subscribed_topic_regex="orders-.*")
    assert [group.member(m).assigned for m in "abc"] == [plain.member(m).assigned for m in "abc"]
    beat = ConsumerHeartbeat(GROUP, "a", group.member("a").member_epoch)
    heartbeat(group.state, beat, group.topics, group._new_id, Counted)
    assert matched == 0, "the matches made when the members joined serve every later heartbeat"
    heartbeat(group.state, beat, TopicCatalog(names), group._new_id, Counted)
    assert matched == len(names), "a new catalog (the topics changed) matches the regex once for all three members"


def test_regex_matches_kept_within_the_allowed_topics() -> None:
    """A group's regexes resolved for a principal that may DESCRIBE some of the topics they match: the others are
    in no regex's matches (a name subscribed explicitly is not a regex match), and neither is a topic created after
    the resolution, until the group resolves again."""
    names = {"orders-eu": (b"e" * 16, 1), "orders-us": (b"u" * 16, 2), "audit": (b"a" * 16, 1)}
    group = Group()
    group.topics = TopicCatalog(names).regex_matches_within(frozenset({"orders-eu"}))  # type: ignore[assignment]
    group.beat("a", 0, names=("audit",), subscribed_topic_regex="orders-.*")
    assert as_set(group.member("a").assigned) == {("orders-eu", 0), ("audit", 0)}
    grown = group.topics.with_changes({"orders-ap": (b"p" * 16, 1)})  # type: ignore[attr-defined]
    assert grown.matching("orders-.*", re.compile("orders-.*")) == {"orders-eu"}
    assert "orders-ap" in grown


NAMES = st.sampled_from([f"{prefix}-{n}" for prefix in ("orders", "audit", "logs") for n in range(6)])


@settings(max_examples=300)
@given(st.dictionaries(NAMES, st.integers(1, 3)), st.lists(st.dictionaries(NAMES, st.none() | st.integers(1, 3)),
                                                         max_size=5))
def test_a_catalog_with_changes_matches_as_a_catalog_built_afresh(
        start: dict[str, int], steps: list[dict[str, int | None]]) -> None:
    regexes = ("orders-.*", ".*-[0-2]", "audit-5")
    catalog = TopicCatalog({name: (name.encode(), count) for name, count in start.items()})
    for regex in regexes[:2]:  # one regex never asked before the changes: matched on the new catalog
        catalog.matching(regex, re.compile(regex))
    for step in steps:
        older, snapshot = catalog, dict(catalog)
        matched_before = {regex: catalog.matching(regex, re.compile(regex)) for regex in regexes[:2]}
        catalog = catalog.with_changes({name: None if count is None else (name.encode(), count)
                                        for name, count in step.items()})
        assert dict(older) == snapshot, "a catalog never changes (answers are kept by its identity)"
        assert {regex: older.matching(regex, re.compile(regex)) for regex in regexes[:2]} == matched_before
        fresh = TopicCatalog(dict(catalog))
        for regex in regexes:
            assert catalog.matching(regex, re.compile(regex)) == fresh.matching(regex, re.compile(regex)), regex
    expected = dict(start)
    for step in steps:
        for name, count in step.items():
            if count is None:
                expected.pop(name, None)
            else:
                expected[name] = count
    assert dict(catalog) == {name: (name.encode(), count) for name, count in expected.items()}


def test_offset_commits_need_the_current_member_epoch() -> None:
    group = Group()
    group.beat("a", 0)
    state = group.state
    assert state is not None
    assert check_member_epoch(state, "a", 2, commit=True) is not None
    with pytest.raises(StaleMemberEpoch):
        check_member_epoch(state, "a", 1, commit=True)
    with pytest.raises(UnknownMember):
        check_member_epoch(state, "", -1, commit=True)
    with pytest.raises(StaleMemberEpoch):
        check_member_epoch(state, "a", -1, commit=True)
    assert check_member_epoch(state, None, -1, commit=False) is None  # an admin read names no member
    with pytest.raises(UnknownMember):  # an empty member id is a member, and not this group's (as Kafka 4.4)
        check_member_epoch(state, "", -1, commit=False)
    empty = ConsumerGroupState("g")
    assert check_member_epoch(empty, "anyone", -1, commit=True) is None  # a simple commit to an empty group


def test_group_deleted_removes_the_group() -> None:
    group = Group()
    group.beat("a", 0)
    group.beat("a", -1)
    group.log.append(GroupDeleted(GROUP))
    assert group.state is None


Step = tuple[str, int]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["join", "ack", "beat", "leave", "grow", "timeout"]),
                          st.integers(0, 3)), max_size=40))
def test_no_partition_is_ever_owned_by_two_members(steps: list[Step]) -> None:
    group = Group({"orders": (b"o" * 16, 4)})
    for action, number in steps:
        member_id = f"m{number}"
        state = group.state
        present = state is not None and state.member(member_id) is not None
        if action == "join" and not present:
            group.beat(member_id, 0)
        elif action in ("ack", "beat") and present:
            member = group.member(member_id)
            group.beat(member_id, member.member_epoch, owned=member.assigned if action == "ack" else None)
        elif action == "leave" and present:
            group.beat(member_id, -1)
        elif action == "timeout" and present and state is not None:
            group.log.extend(remove(state, member_id, "session timeout", group.topics, compile_for_tests))
        elif action == "grow":
            topic_id, count = group.topics["orders"]
            group.topics["orders"] = (topic_id, min(count + 1, 8))
        state = group.state
        if state is not None:
            doubled = {p: who for p, who in owners(state).items() if len(who) > 1}
            assert not doubled, doubled
    state = group.state
    if state is None or not state.members:
        return
    for _ in range(6):
        for member in list(state.members):
            current = group.member(member.member_id)
            group.beat(member.member_id, current.member_epoch, owned=current.assigned)
        state = group.state
        assert state is not None
    assert len(owners(state)) == group.topics["orders"][1]
    assert state.phase == "Stable"


def test_the_projection_folds_what_the_decisions_saw() -> None:
    group = Group()
    group.beat("a", 0)
    group.beat("b", 0)
    incremental = fold(None, group.log, GROUP)
    assert incremental == group.state


def test_a_members_target_is_found_by_bisection_of_the_sorted_targets() -> None:
    targets = tuple((f"m{i:04}", (("t", (i,)),)) for i in range(0, 2_000, 2))
    state = ConsumerGroupState("g", targets=targets)
    assert state.target("m0000") == (("t", (0,)),) and state.target("m1998") == (("t", (1998,)),)
    assert state.target("m0001") == () and state.target("m9999") == () and state.target("") == ()
    assert all(state.target(owner) == partitions for owner, partitions in targets)


def test_a_stable_members_heartbeat_reads_neither_the_others_partitions_nor_the_subscriptions_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each heartbeat of a stable member built the set of every other member's partitions and went over every
    member's subscription: about 5 ms a heartbeat for 1,000 members over 10,000 partitions, a loop saturated by
    their heartbeats alone. Now the partitions are read only for a member waiting for some, and the subscribed
    topics are kept while the members and the `TopicCatalog` stay the same objects."""
    group = Group()
    group.beat("a", 0)
    group.beat("b", 0)
    for member_id in ("a", "b"):  # settle both: revocations, then the freed partitions
        for _ in range(3):
            member = group.member(member_id)
            group.beat(member_id, member.member_epoch, owned=member.assigned)
    state = group.state
    assert state is not None and all(m.state == MemberState.STABLE for m in state.members), state
    catalog = TopicCatalog(group.topics)
    reads = 0
    subscribed = consumer_reconciliation.subscribed_topics

    def counted(*args: Any) -> Any:
        nonlocal reads
        reads += 1
        return subscribed(*args)

    def refused(*_: Any) -> Any:
        raise AssertionError("a stable member's heartbeat read every other member's partitions")

    monkeypatch.setattr(consumer_reconciliation, "subscribed_topics", counted)
    monkeypatch.setattr(consumer_reconciliation, "_owned_by_others", refused)
    member = state.member("a")
    assert member is not None
    for _ in range(5):
        _, events = heartbeat(state, ConsumerHeartbeat(GROUP, "a", member.member_epoch, owned=member.assigned),
                              catalog, lambda: "unused", compile_for_tests)
        assert events == []
    assert reads == len(state.members), "the subscriptions read once, for the first heartbeat"


# -- paced target assignments (KIP-1263) --------------------------------------------------------------------------


def paced(now_ms: int, interval_ms: int = 1_000) -> AssignmentPace:
    return AssignmentPace(now_ms, interval_ms)


def epochs(group: Group) -> tuple[int, int, str]:
    state = group.state
    assert state is not None
    return state.group_epoch, state.assignment_epoch, state.phase


def test_a_change_within_the_interval_waits_for_a_heartbeat_after_it() -> None:
    group = Group()
    group.pace = paced(10_000)
    assert group.beat("a", 0) == 2, "the group's first target is computed at once"
    assert epochs(group) == (2, 2, "Stable")
    group.pace = paced(10_400)
    assert group.beat("b", 0) == 2 and group.member("b").assigned == (), "the old target's epoch, nothing in it"
    assert epochs(group) == (3, 2, "Assigning")
    assert group.beat("a", 2, owned=group.member("a").assigned) == 2
    assert epochs(group) == (3, 2, "Assigning"), "still within the interval"
    group.pace = paced(11_000)
    assert group.beat("a", 2, owned=group.member("a").assigned) == 2  # revoking half for b, at its old epoch
    assert epochs(group)[:2] == (3, 3) and len(as_set(group.member("a").revoking)) == 3
    state = group.state
    assert state is not None and state.assignment_time_ms == 11_000


def test_members_leaving_compute_no_target_unless_nobody_is_left() -> None:
    group = Group()
    group.pace = paced(10_000)
    group.beat("a", 0)
    group.pace = paced(20_000)
    group.beat("b", 0)
    group.beat("a", 2, owned=group.member("a").assigned)  # told to revoke half
    assert group.beat("a", 2, owned=group.member("a").assigned) == 3  # revoked
    assert group.beat("b", 3) == 3 and len(as_set(group.member("b").assigned)) == 3
    assert epochs(group) == (3, 3, "Stable")
    group.pace = paced(40_000)
    group.beat("b", -1)
    assert epochs(group) == (4, 3, "Assigning"), "Kafka patches the target, computes none"
    assert group.beat("a", 3, owned=group.member("a").assigned) == 4, "the next heartbeat computes it"
    assert len(as_set(group.member("a").assigned)) == 6
    group.beat("a", -1)
    state = group.state
    assert state is not None and (state.group_epoch, state.assignment_epoch, state.assignment_time_ms) == (5, 5, 0)
    group.pace = paced(40_100)
    assert group.beat("a", 0) == 6, "an emptied group assigns the next join at once"


def test_a_member_that_unsubscribes_while_the_target_lags_revokes_at_once() -> None:
    group = Group({"orders": (b"o" * 16, 2), "refunds": (b"r" * 16, 2)})
    group.pace = paced(10_000)
    group.beat("a", 0, names=("orders", "refunds"))
    assert len(as_set(group.member("a").assigned)) == 4
    group.pace = paced(10_100)
    command = ConsumerHeartbeat(GROUP, "a", 2, subscribed_topic_names=("orders",), owned=group.member("a").assigned)
    _, events = heartbeat(group.state, command, group.topics, group._new_id, compile_for_tests, group.pace)
    group.log.extend(events)
    a = group.member("a")
    assert epochs(group) == (3, 2, "Assigning")
    assert (a.member_epoch, a.state) == (2, MemberState.UNREVOKED_PARTITIONS)
    assert {topic for topic, _ in as_set(a.revoking)} == {"refunds"} and len(as_set(a.assigned)) == 2


def test_an_interval_of_zero_assigns_every_change_at_once() -> None:
    group = Group()
    group.pace = paced(10_000, 0)
    group.beat("a", 0)
    assert group.beat("b", 0) == 3 and epochs(group)[:2] == (3, 3)
