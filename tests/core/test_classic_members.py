"""Classic members inside KIP-848 consumer groups and a group's migration between the protocols: pure decisions.

A group's log is folded by the real projections (`consumer_groups` and `groups`); no I/O. The wire scenarios, on
both brokers, are in tests/integration/test_classic_members_in_consumer_groups.py.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from logwright.core.consumer_groups.classic_members import (
    ClassicJoin,
    ClassicSubscription,
    classic_heartbeat,
    classic_join,
    classic_leave,
    classic_sync,
    must_rejoin,
)
from logwright.core.consumer_groups.consumer_groups import CONSUMER_GROUPS, ConsumerGroupState, MemberState, fold
from logwright.core.consumer_groups.consumer_reconciliation import ConsumerHeartbeat, check_member_epoch, heartbeat
from logwright.core.consumer_groups.group_migration import (
    UpgradingMember,
    check_upgrade,
    downgrade,
    downgrades,
    downgrades_on_replacement,
    upgrade,
)
from logwright.core.errors import (
    FencedInstanceId,
    GroupMaxSizeReached,
    IllegalGeneration,
    InconsistentGroupProtocol,
    MalformedEmbeddedProtocol,
    MemberIdRequired,
    RebalanceInProgress,
    StaleMemberEpoch,
    UnknownGroup,
    UnknownMember,
    UnsupportedFeature,
)
from logwright.core.events import ConsumerGroupDowngraded, Event
from logwright.core.groups.groups import GROUPS, GroupMember, GroupPhase, GroupState
from logwright.core.projection import fold as fold_projection

GROUP = "g"
TOPICS = {"orders": (b"o" * 16, 4)}
SUBSCRIPTION = ClassicSubscription(topics=("orders",), owned=())


def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


class Log:
    """A group's events, folded by the real projections."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.ids = iter(f"m-{n}" for n in range(1000))

    def consumer(self) -> ConsumerGroupState:
        state = fold_projection(CONSUMER_GROUPS, self.events).get(GROUP)
        assert isinstance(state, ConsumerGroupState)
        return state

    def classic(self) -> GroupState | None:
        state = fold_projection(GROUPS, self.events).get(GROUP)
        assert state is None or isinstance(state, GroupState)
        return state

    def heartbeat(self, member_id: str, epoch: int, owned: tuple[tuple[str, tuple[int, ...]], ...] | None = None,
                  instance_id: str | None = None) -> str:
        command = ConsumerHeartbeat(GROUP, member_id, epoch, rebalance_timeout_ms=30_000, instance_id=instance_id,
                                    subscribed_topic_names=("orders",) if epoch == 0 else None,
                                    owned=() if epoch == 0 else owned)
        member, events = heartbeat(self.consumer() if self.events else None, command, TOPICS, lambda: next(self.ids),
                                   _compile)
        self.events += events
        return member

    def join(self, member_id: str = "", owned: tuple[tuple[str, tuple[int, ...]], ...] = (),
             names: tuple[str, ...] = ("range",), known: bool = False, max_size: int = 2**31 - 1) -> str:
        command = ClassicJoin(GROUP, member_id, None, 10_000, 30_000, "consumer",
                              tuple((name, b"\x00\x01") for name in names),
                              ClassicSubscription(("orders",), owned), require_known_member_id=known)
        member, events = classic_join(self.consumer(), command, TOPICS, lambda: next(self.ids), _compile,
                                      max_size=max_size)
        self.events += events
        return member


def _settle(log: Log, consumer: str, classic: str) -> None:
    """Both members heartbeat (the consumer one acknowledging) and rejoin until nothing moves."""
    for _ in range(10):
        state = log.consumer()
        member = state.member(consumer)
        assert member is not None
        log.heartbeat(consumer, member.member_epoch, member.assigned, member.instance_id)
        classic_member = log.consumer().member(classic)
        assert classic_member is not None
        if must_rejoin(log.consumer(), classic_member):
            log.join(classic, owned=classic_member.assigned,
                     names=tuple(name for name, _ in classic_member.classic_protocols))
    assert log.consumer().phase == "Stable"


def test_a_classic_member_joins_shares_and_is_told_to_rejoin() -> None:
    log = Log()
    consumer = log.heartbeat("", 0)
    with pytest.raises(MemberIdRequired) as required:
        log.join(known=True)
    classic = log.join(required.value.member_id)
    member = log.consumer().member(classic)
    assert member is not None and member.uses_classic_protocol
    assert (member.classic_session_timeout_ms, member.subscribed_topic_names) == (10_000, ("orders",))
    _settle(log, consumer, classic)
    state = log.consumer()
    owned = {member.member_id: member.assigned for member in state.members}
    assert sorted(len(partitions[0][1]) for partitions in owned.values()) == [2, 2]
    member = state.member(classic)
    assert member is not None
    assert classic_sync(state, classic, None, member.member_epoch, "consumer", "range") == member
    assert classic_heartbeat(state, classic, None, member.member_epoch) == (member, False)


def test_classic_requests_are_refused_as_kafka_refuses_them() -> None:
    log = Log()
    consumer = log.heartbeat("", 0)
    classic = log.join("given-id")  # a member id the group does not know is taken, as Kafka takes it
    state = log.consumer()
    member = state.member(classic)
    assert member is not None
    epoch = member.member_epoch
    refusals = {
        "another generation": lambda: classic_sync(state, classic, None, epoch + 1, "consumer", "range"),
        "another protocol type": lambda: classic_sync(state, classic, None, epoch, "connect", "range"),
        "another protocol name": lambda: classic_sync(state, classic, None, epoch, "consumer", "roundrobin"),
        "an unknown member": lambda: classic_heartbeat(state, "nobody", None, epoch),
        "a consumer-protocol member": lambda: classic_heartbeat(state, consumer, None, 1),
        "an unknown instance id": lambda: classic_heartbeat(state, classic, "instance", epoch),
        "no protocol in common": lambda: log.join(names=("sticky",)),
        "the group is full": lambda: log.join(max_size=2),
    }
    raised = {}
    for case, attempt in refusals.items():
        with pytest.raises(Exception) as error:
            attempt()
        raised[case] = type(error.value)
    assert raised == {
        "another generation": IllegalGeneration, "another protocol type": InconsistentGroupProtocol,
        "another protocol name": InconsistentGroupProtocol, "an unknown member": UnknownMember,
        "a consumer-protocol member": UnknownMember, "an unknown instance id": UnknownMember,
        "no protocol in common": InconsistentGroupProtocol, "the group is full": GroupMaxSizeReached,
    }
    with pytest.raises(MalformedEmbeddedProtocol):
        classic_join(state, ClassicJoin(GROUP, "x", None, 10_000, 30_000, "consumer", (("range", b""),), None),
                     TOPICS, lambda: "y", _compile)


def test_a_classic_member_syncing_behind_the_target_must_rejoin_first() -> None:
    log = Log()
    log.heartbeat("", 0)
    classic = log.join()
    log.join()  # a second classic member: a newer target
    state = log.consumer()
    member = state.member(classic)
    assert member is not None and member.member_epoch < state.assignment_epoch
    with pytest.raises(RebalanceInProgress):
        classic_sync(state, classic, None, member.member_epoch, "consumer", "range")
    assert classic_heartbeat(state, classic, None, member.member_epoch)[1] is True


def test_commits_of_a_classic_member_check_its_generation() -> None:
    log = Log()
    consumer = log.heartbeat("", 0)
    classic = log.join()
    state = log.consumer()
    classic_epoch = state.member(classic).member_epoch  # type: ignore[union-attr]
    with pytest.raises(IllegalGeneration):
        check_member_epoch(state, classic, classic_epoch + 1, commit=True, modern_commit=False)
    assert check_member_epoch(state, classic, classic_epoch, commit=True, modern_commit=False) is not None
    with pytest.raises(StaleMemberEpoch):
        check_member_epoch(state, consumer, 99, commit=True)
    with pytest.raises(UnsupportedFeature):
        check_member_epoch(state, consumer, 1, commit=True, modern_commit=False)


def test_leave_group_removes_any_member_and_answers_each() -> None:
    log = Log()
    consumer = log.heartbeat("", 0)
    classic = log.join()
    outcomes, events = classic_leave(log.consumer(), [(classic, None), ("nobody", None), ("x", "instance")], TOPICS,
                                     _compile)
    assert [type(outcome) for outcome in outcomes] == [type(None), UnknownMember, UnknownMember]
    log.events += events
    assert [member.member_id for member in log.consumer().members] == [consumer]
    outcomes, _ = classic_leave(log.consumer(), [(consumer, None)], TOPICS, _compile)
    assert outcomes == [None]


def test_a_static_classic_member_naming_another_id_is_fenced() -> None:
    log = Log()
    log.heartbeat("", 0)
    command = ClassicJoin(GROUP, "static-1", "instance", 10_000, 30_000, "consumer", (("range", b"\x00\x01"),),
                          SUBSCRIPTION)
    _, events = classic_join(log.consumer(), command, TOPICS, lambda: "unused", _compile)
    log.events += events
    with pytest.raises(FencedInstanceId):
        classic_heartbeat(log.consumer(), "static-2", "instance", 0)


def _classic_group(generation: int = 3) -> GroupState:
    members = tuple(GroupMember(f"c-{n}", None, "client", "/host", 10_000, 30_000, (("range", b"sub"),),
                                assignment=b"assigned") for n in range(2))
    return GroupState(GROUP, GroupPhase.STABLE, generation, "consumer", "range", "c-0", members)


def test_a_classic_group_upgrades_keeping_each_members_assignment() -> None:
    group = _classic_group()
    check_upgrade(group, upgrade_enabled=True, max_size=2)
    members = [UpgradingMember(member, SUBSCRIPTION, (("orders", (n * 2, n * 2 + 1)),))
               for n, member in enumerate(group.members)]
    events = upgrade(group, members, TOPICS, _compile, now_ms=1)
    folded = fold_projection(CONSUMER_GROUPS, events)[GROUP]
    assert isinstance(folded, ConsumerGroupState)
    assert (folded.group_epoch, folded.assignment_epoch) == (3, 3)
    assert [(m.member_id, m.member_epoch, m.state, m.assigned, m.uses_classic_protocol) for m in folded.members] == [
        ("c-0", 3, MemberState.STABLE, (("orders", (0, 1)),), True),
        ("c-1", 3, MemberState.STABLE, (("orders", (2, 3)),), True)]
    assert folded.target("c-1") == (("orders", (2, 3)),)
    assert fold_projection(GROUPS, events).get(GROUP) is None, "the classic group's state goes"


@pytest.mark.parametrize(("enabled", "protocol_type", "max_size", "words"), [
    (False, "consumer", 10, "online upgrade is disabled"),
    (True, "connect", 10, "does not use the consumer embedded protocol"),
    (True, "consumer", 1, "exceeds the consumer group maximum size"),
])
def test_an_upgrade_is_refused_in_kafkas_words(enabled: bool, protocol_type: str, max_size: int, words: str) -> None:
    group = replace(_classic_group(), protocol_type=protocol_type)
    with pytest.raises(UnknownGroup, match=words):
        check_upgrade(group, enabled, max_size)


@pytest.mark.parametrize(("assigned", "custom", "words"), [
    (None, False, "embedded consumer protocol is malformed"),
    ((), True, "unsupported custom assignor"),
])
def test_an_upgrade_refuses_bytes_it_cannot_carry_over(assigned: tuple[()] | None, custom: bool, words: str) -> None:
    group = _classic_group()
    members = [UpgradingMember(member, SUBSCRIPTION, assigned, custom) for member in group.members]
    with pytest.raises(UnknownGroup, match=words):
        upgrade(group, members, TOPICS, _compile, now_ms=1)


def test_when_the_last_consumer_member_leaves_the_classic_ones_form_a_rebalancing_classic_group() -> None:
    log = Log()
    consumer = log.heartbeat("", 0)
    classic = log.join(names=("range", "roundrobin"))
    _settle(log, consumer, classic)
    before = log.consumer()
    assert not downgrades(before, {classic}, True, 10), "a consumer-protocol member would stay"
    assert not downgrades(before, {consumer}, False, 10), "the policy"
    assert not downgrades(before, {consumer}, True, 0), "group.max.size"
    assert not downgrades(before, {consumer, classic}, True, 10), "nobody would stay"
    assert downgrades(before, {consumer}, True, 1)
    events = downgrade(before, {consumer}, 5,
                       lambda member, protocol, partitions: repr((protocol, partitions)).encode())
    assert isinstance(events[0], ConsumerGroupDowngraded)
    log.events += events
    assert fold_projection(CONSUMER_GROUPS, log.events).get(GROUP) is None
    classic_state = log.classic()
    assert classic_state is not None
    assert (classic_state.phase, classic_state.generation, classic_state.protocol_type, classic_state.protocol_name,
            classic_state.leader) == (GroupPhase.PREPARING_REBALANCE, before.group_epoch, "consumer", "range", None)
    [member] = classic_state.members
    assert (member.member_id, member.session_timeout_ms, member.protocol_names()) == (
        classic, 10_000, ("range", "roundrobin"))
    assert member.assignment == repr(("range", before.target(classic))).encode()


@pytest.mark.parametrize("stale", [False, True])
def test_a_classic_static_member_replacing_the_last_consumer_member_forms_a_classic_group(stale: bool) -> None:
    log = Log()
    consumer = log.heartbeat("", 0, instance_id="a")
    classic = log.join()
    _settle(log, consumer, classic)
    before = log.consumer()
    assert downgrades_on_replacement(before, consumer, True, 2)
    assert not downgrades_on_replacement(before, classic, True, 2), "a consumer-protocol member would stay"
    assert not downgrades_on_replacement(before, consumer, False, 2), "the policy"
    assert not downgrades_on_replacement(before, consumer, True, 1), "group.max.size"
    command = ClassicJoin(GROUP, "", "a", 10_000, 30_000, "consumer", (("range", b"\x00\x01"),), SUBSCRIPTION)
    joiner_id, joined = classic_join(before, command, TOPICS, lambda: "newcomer", _compile)
    joiner = fold(before, joined, GROUP).member(joiner_id)
    assert joiner is not None and joiner_id == "newcomer"
    log.events += downgrade(before, {consumer}, 5, lambda member, protocol, partitions: repr(partitions).encode(),
                            joining=joiner, stale=stale)
    assert fold_projection(CONSUMER_GROUPS, log.events).get(GROUP) is None
    classic_state = log.classic()
    assert classic_state is not None
    assert (classic_state.phase, classic_state.generation, classic_state.protocol_name) == (
        GroupPhase.PREPARING_REBALANCE if stale else GroupPhase.STABLE, before.group_epoch, "range")
    assert {member.member_id: member.assignment for member in classic_state.members} == {
        classic: repr(before.target(classic)).encode(), "newcomer": repr(before.target(consumer)).encode()}
    assert before.target(consumer), "the newcomer takes over partitions"
