"""Group and member epochs of KIP-848 consumer groups and KIP-932 share groups, as Kafka 4.4 numbers them: a new
group starts at epoch 1 (so its first member gets 2), every change moves it by one, a consumer group's target
assignment waits ``consumer.assignment.interval.ms`` after the last one (KIP-1263), and a share member catches up
with the group's epoch on its next heartbeat, told the epoch alone when its partitions did not move. Each scenario
but the manual-clock one passes on Apache Kafka 4.4 unchanged (``--against kafka``); share groups' assignments are
not paced on logwright (docs/share-groups.md)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from logwright.compat.registry import make

from .broker_process import BrokerProcess
from .consumer_protocol_wire import NOT_READY, assigned, describe, find_coordinator, heartbeat, request
from .group_configs import set_group_configs
from .test_share_groups import advance_clock


def _topic(bootstrap: str, partitions: int = 2) -> str:
    name = f"epochs-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions)])[name].result(30)
    return name


@pytest.mark.differential
def test_a_consumer_group_starts_at_epoch_one_and_moves_by_one(bootstrap: str) -> None:
    topic, group, member = _topic(bootstrap), f"epochs-{uuid.uuid4().hex[:8]}", "m" * 22
    find_coordinator(bootstrap, group)
    joined = heartbeat(bootstrap, group, member, 0, topics=(topic,), rebalance_timeout_ms=30_000)
    described = describe(bootstrap, group)
    assert (joined.error_code, joined.member_epoch) == (0, 2)
    assert (described.group_epoch, described.assignment_epoch, described.group_state) == (2, 2, "Stable")
    assert heartbeat(bootstrap, group, member, -1).member_epoch == -1
    empty = describe(bootstrap, group)
    assert (empty.group_epoch, empty.assignment_epoch, empty.group_state) == (3, 3, "Empty")
    rejoined = heartbeat(bootstrap, group, member, 0, topics=(topic,), rebalance_timeout_ms=30_000)
    assert rejoined.member_epoch == 4 and describe(bootstrap, group).group_state == "Stable"


def _epochs(bootstrap: str, group: str) -> tuple[int, int, str]:
    described = describe(bootstrap, group)
    return int(described.group_epoch), int(described.assignment_epoch), str(described.group_state)


@pytest.mark.differential
def test_changes_within_the_assignment_interval_wait_for_the_next_target(bootstrap: str) -> None:
    """The group's interval at its largest (15 s) so that wall time cannot run out mid-scenario: every change after
    the first assignment bumps the group epoch and leaves the target where it was (Assigning), members at its
    epoch; the last member leaving empties the target, so a rejoin is assigned at once."""
    topics = (_topic(bootstrap), _topic(bootstrap, 1))
    group, first, second = f"epochs-paced-{uuid.uuid4().hex[:8]}", "m" * 22, "n" * 22
    find_coordinator(bootstrap, group)
    set_group_configs(bootstrap, group, {"consumer.assignment.interval.ms": "15000"})
    joined = heartbeat(bootstrap, group, first, 0, topics=topics[:1], rebalance_timeout_ms=30_000)
    assert (joined.member_epoch, len(assigned(joined) or {})) == (2, 1) and _epochs(bootstrap, group) == (
        2, 2, "Stable")
    owned = assigned(joined) or {}
    widened = heartbeat(bootstrap, group, first, 2, topics=topics, owned=owned)
    assert widened.member_epoch == 2 and _epochs(bootstrap, group) == (3, 2, "Assigning")
    second_joined = heartbeat(bootstrap, group, second, 0, topics=topics[:1], rebalance_timeout_ms=30_000)
    assert (second_joined.member_epoch, assigned(second_joined)) == (2, {}), "the old target: nothing for it"
    assert _epochs(bootstrap, group) == (4, 2, "Assigning")
    assert heartbeat(bootstrap, group, second, -1).member_epoch == -1
    assert _epochs(bootstrap, group) == (5, 2, "Assigning"), "a leave computes no target"
    assert heartbeat(bootstrap, group, first, -1).member_epoch == -1
    assert _epochs(bootstrap, group) == (6, 6, "Empty")
    rejoined = heartbeat(bootstrap, group, first, 0, topics=topics, rebalance_timeout_ms=30_000)
    assert rejoined.member_epoch == 7 and _epochs(bootstrap, group) == (7, 7, "Stable")


def test_a_paced_target_is_computed_by_the_first_heartbeat_after_the_interval(clock_broker: BrokerProcess) -> None:
    """On the broker clock: the target waits one second (the default interval) after the last, however many members
    join meanwhile, and is computed once by whichever member heartbeats first after it."""
    bootstrap = clock_broker.bootstrap
    topic, group = _topic(bootstrap, 6), "epochs-clock"
    first = heartbeat(bootstrap, group, "a" * 22, 0, topics=(topic,), rebalance_timeout_ms=30_000)
    owned = assigned(first) or {}
    for name in "bcd":
        assert heartbeat(bootstrap, group, name * 22, 0, topics=(topic,), rebalance_timeout_ms=30_000).member_epoch \
            == 2
    assert _epochs(bootstrap, group) == (5, 2, "Assigning")
    advance_clock(bootstrap, 999)
    assert heartbeat(bootstrap, group, "a" * 22, 2, owned=owned).assignment is None
    assert _epochs(bootstrap, group) == (5, 2, "Assigning")
    advance_clock(bootstrap, 1)
    revoking = heartbeat(bootstrap, group, "a" * 22, 2, owned=owned)
    assert _epochs(bootstrap, group)[:2] == (5, 5) and sum(map(len, (assigned(revoking) or {}).values())) == 2, \
        "one target for the three joins: a keeps a quarter (rounded up) and revokes the rest"


@pytest.mark.differential
def test_an_epoch_moving_alone_sends_no_assignment_but_a_full_request_gets_one(bootstrap: str) -> None:
    """As Kafka 4.4 answers: the assignment goes with a join, a full request (rebalance timeout, subscription and
    owned partitions: a client resynchronizing) or a change of the member's partitions, never for an epoch alone."""
    mine, theirs = _topic(bootstrap), _topic(bootstrap, 1)
    group, first, second = f"epochs-alone-{uuid.uuid4().hex[:8]}", "m" * 22, "n" * 22
    find_coordinator(bootstrap, group)
    set_group_configs(bootstrap, group, {"consumer.assignment.interval.ms": "0"})
    joined = heartbeat(bootstrap, group, first, 0, topics=(mine,), rebalance_timeout_ms=30_000)
    owned = assigned(joined) or {}
    assert joined.member_epoch == 2 and sum(map(len, owned.values())) == 2
    assert heartbeat(bootstrap, group, second, 0, topics=(theirs,), rebalance_timeout_ms=30_000).member_epoch == 3
    moved = heartbeat(bootstrap, group, first, 2, owned=owned)
    assert (moved.member_epoch, moved.assignment) == (3, None), "the same partitions: the epoch alone"
    full = heartbeat(bootstrap, group, first, 3, topics=(mine,), owned=owned, rebalance_timeout_ms=30_000)
    assert (full.member_epoch, assigned(full)) == (3, owned)


def _share_heartbeat(bootstrap: str, group: str, member: str, epoch: int,
                     topics: tuple[str, ...] | None = None) -> tuple[int, int, bool]:
    """(error code, member epoch, whether the assignment was sent) of one ShareGroupHeartbeat."""
    deadline = time.monotonic() + 60
    while True:
        answer = request(bootstrap, make(ShareGroupHeartbeatRequest, group_id=group, member_id=member,
                                         member_epoch=epoch, rack_id=None, subscribed_topic_names=topics))
        if answer.error_code not in NOT_READY or time.monotonic() > deadline:
            return int(answer.error_code), int(answer.member_epoch), answer.assignment is not None
        find_coordinator(bootstrap, group)
        time.sleep(0.3)


def _share_described(bootstrap: str, group: str) -> tuple[Any, ...]:
    [described] = request(bootstrap, make(ShareGroupDescribeRequest, group_ids=(group,),
                                          include_authorized_operations=False)).groups
    return (described.group_state, int(described.group_epoch), int(described.assignment_epoch),
            sorted((member.member_id, int(member.member_epoch)) for member in described.members))


KAFKA_ASSIGNMENT_INTERVAL_S = 1.0
"""``group.share.assignment.interval.ms``'s default: Kafka 4.4 computes no new target assignment sooner after the
last (KIP-1263), on its wall clock; logwright computes one at once, so only a run on Kafka waits it out."""


def _settled(bootstrap: str, group: str, member: str, epoch: int) -> int:
    """Heartbeat ``member`` until it holds partitions at the group's epoch, and return that epoch. logwright is
    there at once; Kafka 4.4 initializes a share partition's state asynchronously and assigns only initialized
    ones, bumping the group epoch once they are (so its first member may reach 3 instead of 2)."""
    deadline = time.monotonic() + 30
    while True:
        code, epoch, _ = _share_heartbeat(bootstrap, group, member, epoch)
        assert code == 0
        [described] = request(bootstrap, make(ShareGroupDescribeRequest, group_ids=(group,),
                                              include_authorized_operations=False)).groups
        [found] = [each for each in described.members if each.member_id == member]
        if (int(found.member_epoch) == described.group_epoch == described.assignment_epoch
                and found.assignment.topic_partitions):
            return epoch
        assert time.monotonic() < deadline, described
        time.sleep(0.2)


@pytest.mark.differential
def test_a_share_member_catches_up_with_the_groups_epoch_told_the_epoch_alone(bootstrap: str, target: str) -> None:
    topic, group = _topic(bootstrap, 1), f"epochs-share-{uuid.uuid4().hex[:8]}"  # one partition: both hold it
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    find_coordinator(bootstrap, group)
    assert _share_heartbeat(bootstrap, group, first, 0, (topic,)) == (0, 2, True)
    epoch = _settled(bootstrap, group, first, 2)
    assert epoch == 2 or target == "kafka"
    assert _share_heartbeat(bootstrap, group, first, epoch) == (0, epoch, False)
    if target == "kafka":
        time.sleep(KAFKA_ASSIGNMENT_INTERVAL_S + 0.2)
    assert _share_heartbeat(bootstrap, group, second, 0, (topic,)) == (0, epoch + 1, True)
    assert _share_heartbeat(bootstrap, group, first, epoch) == (0, epoch + 1, False), "the same partitions: the " \
        "epoch alone"
    assert _share_described(bootstrap, group)[3] == sorted([(first, epoch + 1), (second, epoch + 1)])
    assert _share_heartbeat(bootstrap, group, first, epoch + 1, (topic,)) == (0, epoch + 1, True), "topics named"
    assert _share_heartbeat(bootstrap, group, second, -1)[:2] == (0, -1)
    assert _share_heartbeat(bootstrap, group, first, -1)[:2] == (0, -1)
    assert _share_described(bootstrap, group) == ("Empty", epoch + 3, epoch + 3, [])
