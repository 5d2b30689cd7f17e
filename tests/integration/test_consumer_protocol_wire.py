"""KIP-848 members played by hand with kio requests: reconciliation step by step, Kafka's error codes,
static membership, and (on a private logwright process with a manual clock) session and rebalance
timeouts. Scenarios marked differential pass on Apache Kafka 4.4 unchanged."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.offset_delete.v0.request import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)

from .broker_process import BrokerProcess
from .consumer_protocol_wire import assigned, describe, heartbeat, request
from .test_share_groups import advance_clock, check_consistent

NONE, UNKNOWN_MEMBER_ID, INCONSISTENT_GROUP_PROTOCOL = 0, 25, 23
FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR = 110, 111, 112
GROUP_SUBSCRIBED_TO_TOPIC = 86
PARTITIONS = 6
SESSION_MS = 45_000
ASSIGNMENT_INTERVAL_MS = 1_000
"""``group.consumer.assignment.interval.ms``: a change within it of the last target assignment waits (KIP-1263)."""


def _topic(bootstrap: str) -> str:
    name = f"kip848-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, PARTITIONS)])[name].result(30)
    return name


Owned = dict[uuid.UUID, tuple[int, ...]]


def _join(bootstrap: str, group: str, topic: str, instance_id: str | None = None) -> tuple[str, int, Owned]:
    """A member that joins alone gets every partition; retried while Kafka's coordinator does not know the topic."""
    member_id = str(uuid.uuid4())
    deadline = time.monotonic() + 30
    while True:
        response = heartbeat(bootstrap, group, member_id, 0, topics=(topic,), rebalance_timeout_ms=60_000,
                             instance_id=instance_id)
        # Kafka answers a subscription to a topic its coordinator does not know yet with an empty assignment.
        if response.error_code != NONE or assigned(response) or time.monotonic() > deadline:
            break
        heartbeat(bootstrap, group, member_id, -1)
        time.sleep(0.5)
    assert response.error_code == NONE, response.error_message
    found = assigned(response)
    assert found is not None
    return member_id, int(response.member_epoch), found


def _settle(bootstrap: str, group: str, members: dict[str, int], owned: dict[str, Owned], rounds: int = 20) -> None:
    """Heartbeat every member, acknowledging each assignment at once, until nobody's epoch or partitions move."""
    for _ in range(rounds):
        moved = False
        for member_id, epoch in list(members.items()):
            response = heartbeat(bootstrap, group, member_id, epoch, owned=owned[member_id])
            assert response.error_code == NONE, response.error_message
            new = assigned(response)
            if new is not None and new != owned[member_id]:
                owned[member_id] = new
                moved = True
            if response.member_epoch != epoch:
                members[member_id] = int(response.member_epoch)
                moved = True
        if not moved:
            return
        time.sleep(0.2)
    raise AssertionError(f"not settled: {members} {owned}")


def _partitions(owned: Owned) -> set[int]:
    return {index for indexes in owned.values() for index in indexes}


@pytest.mark.differential
def test_refusals_and_a_static_member_rejoining(bootstrap: str) -> None:
    topic = _topic(bootstrap)
    group = f"kip848-{uuid.uuid4().hex[:8]}"
    first, epoch, owned = _join(bootstrap, group, topic, instance_id="instance-a")
    assert _partitions(owned) == set(range(PARTITIONS))

    taken = heartbeat(bootstrap, group, str(uuid.uuid4()), 0, topics=(topic,), rebalance_timeout_ms=60_000,
                      instance_id="instance-a")
    assert taken.error_code == UNRELEASED_INSTANCE_ID
    unknown_assignor = heartbeat(bootstrap, group, str(uuid.uuid4()), 0, topics=(topic,),
                                 rebalance_timeout_ms=60_000, assignor="no-such-assignor")
    assert unknown_assignor.error_code == UNSUPPORTED_ASSIGNOR
    assert heartbeat(bootstrap, group, first, epoch + 5).error_code == FENCED_MEMBER_EPOCH
    assert heartbeat(bootstrap, group, str(uuid.uuid4()), 3).error_code == UNKNOWN_MEMBER_ID

    left = heartbeat(bootstrap, group, first, -2, instance_id="instance-a")
    assert (left.error_code, left.member_epoch) == (NONE, -2)
    second, _, again = _join(bootstrap, group, topic, instance_id="instance-a")
    assert again == owned
    [member] = describe(bootstrap, group).members
    assert (member.member_id, member.instance_id) == (second, "instance-a")

    gone = heartbeat(bootstrap, group, second, -1, instance_id="instance-a")
    assert (gone.error_code, gone.member_epoch) == (NONE, -1)


@pytest.mark.differential
def test_a_partition_moves_only_once_its_owner_revoked_it(bootstrap: str) -> None:
    topic = _topic(bootstrap)
    group = f"kip848-{uuid.uuid4().hex[:8]}"
    first, first_epoch, first_owned = _join(bootstrap, group, topic)
    second = str(uuid.uuid4())
    joined = heartbeat(bootstrap, group, second, 0, topics=(topic,), rebalance_timeout_ms=60_000)
    assert joined.error_code == NONE
    assert not _partitions(assigned(joined) or {}), "nothing is free while the first member owns everything"

    deadline = time.monotonic() + 30
    while True:  # Kafka 4.4 may compute the new target assignment a moment after the join
        revoking = heartbeat(bootstrap, group, first, first_epoch, owned=first_owned)
        kept = assigned(revoking)
        if kept is not None or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert kept is not None and len(_partitions(kept)) == PARTITIONS // 2
    assert revoking.member_epoch == first_epoch, "the epoch moves only once the revocation is acknowledged"
    still = heartbeat(bootstrap, group, second, int(joined.member_epoch), owned={})
    assert not _partitions(assigned(still) or {})

    members = {first: first_epoch, second: int(joined.member_epoch)}
    owned = {first: kept, second: {}}
    _settle(bootstrap, group, members, owned)
    assert _partitions(owned[first]) | _partitions(owned[second]) == set(range(PARTITIONS))
    assert not _partitions(owned[first]) & _partitions(owned[second])
    described = describe(bootstrap, group)
    assert described.group_state == "Stable"
    assert {m.member_epoch for m in described.members} == {described.assignment_epoch}
    deletion = request(bootstrap, OffsetDeleteRequest(group_id=group, topics=(
        OffsetDeleteRequestTopic(name=topic, partitions=(OffsetDeleteRequestPartition(partition_index=0),)),)))
    assert deletion.error_code == NONE
    assert deletion.topics[0].partitions[0].error_code == GROUP_SUBSCRIBED_TO_TOPIC
    for member_id in members:
        heartbeat(bootstrap, group, member_id, -1)


@pytest.mark.logwright_only(reason="advances a manual clock")
def test_session_and_rebalance_timeouts_on_the_broker_clock(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = _topic(bootstrap)
    group = "kip848-timeouts"
    first, first_epoch, first_owned = _join(bootstrap, group, topic)
    second, second_epoch, _ = _join_empty(bootstrap, group, topic)
    members = {first: first_epoch, second: second_epoch}
    owned: dict[str, Owned] = {first: first_owned, second: {}}
    advance_clock(bootstrap, ASSIGNMENT_INTERVAL_MS)  # the second join is assigned once the interval passed
    _settle(bootstrap, group, members, owned)

    advance_clock(bootstrap, SESSION_MS - 15_000)
    assert heartbeat(bootstrap, group, second, members[second]).error_code == NONE
    advance_clock(bootstrap, 15_001)
    assert heartbeat(bootstrap, group, first, members[first]).error_code == UNKNOWN_MEMBER_ID
    response = heartbeat(bootstrap, group, second, members[second])
    assert _partitions(assigned(response) or {}) == set(range(PARTITIONS))
    members, owned = {second: int(response.member_epoch)}, {second: assigned(response) or {}}

    third, third_epoch, _ = _join_empty(bootstrap, group, topic)
    advance_clock(bootstrap, ASSIGNMENT_INTERVAL_MS)
    stuck = heartbeat(bootstrap, group, second, members[second], owned=owned[second])
    assert len(_partitions(assigned(stuck) or {})) == PARTITIONS // 2, "told to revoke half"
    advance_clock(bootstrap, 30_000)
    heartbeat(bootstrap, group, second, members[second])
    heartbeat(bootstrap, group, third, third_epoch)
    advance_clock(bootstrap, 30_001)
    assert heartbeat(bootstrap, group, second, members[second]).error_code == UNKNOWN_MEMBER_ID
    response = heartbeat(bootstrap, group, third, third_epoch, owned={})
    assert _partitions(assigned(response) or {}) == set(range(PARTITIONS))
    check_consistent(clock_broker)


def _join_empty(bootstrap: str, group: str, topic: str) -> tuple[str, int, Owned]:
    member_id = str(uuid.uuid4())
    response = heartbeat(bootstrap, group, member_id, 0, topics=(topic,), rebalance_timeout_ms=60_000)
    assert response.error_code == NONE, response.error_message
    return member_id, int(response.member_epoch), assigned(response) or {}
