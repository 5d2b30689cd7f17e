"""Exclusive (F23) and Failover (F24): single-active modes, through the host as a broker gets them."""

from __future__ import annotations

import pytest
from logwright.core.cursors.subscription_mode import (
    DispatchView,
    Handover,
    Membership,
    ModeConsumer,
    handover_delay_ms,
    require_cumulative_ack,
)
from logwright.core.errors import ConsumerBusy, InvalidRequest
from logwright.core.rangeset import RangeSet
from logwright.plugins.host import PluginHost
from logwright.testing import Subscription


def test_exclusive_refuses_a_second_consumer_until_the_first_leaves(host: PluginHost) -> None:
    subscription = Subscription(host.subscription_mode("exclusive"))
    subscription.join("c1")
    with pytest.raises(ConsumerBusy, match="exclusive subscription 'sub' already has consumer 'c1'"):
        subscription.join("c2")
    subscription.join("c1")  # a rejoin of the same consumer is not a second consumer
    assert subscription.fetch("c1", 5) == [0, 1, 2, 3, 4]
    subscription.ack_cumulative("c1", 2)
    subscription.leave("c1")
    subscription.join("c2")
    assert subscription.fetch("c2") == [3, 4, 5, 6, 7, 8, 9]  # from mark-delete + 1


def test_exclusive_gives_nothing_to_a_non_member(host: PluginHost) -> None:
    mode = host.subscription_mode("exclusive")
    membership = mode.join(Membership("sub"), ModeConsumer("c1"))
    view = DispatchView(membership, 0, 1)
    assert mode.eligible(view, "c2", RangeSet.from_ranges([(0, 9)]), 10) == RangeSet()
    assert mode.assigned_partitions(membership, "c1", 3) == {0, 1, 2}
    assert mode.assigned_partitions(membership, "c2", 3) == frozenset()


def failover(host: PluginHost, *names: str, priorities: dict[str, int] | None = None) -> Membership:
    mode = host.subscription_mode("failover")
    membership = Membership("sub")
    for name in names:
        membership = mode.join(membership, ModeConsumer(f"id-{name}", name, (priorities or {}).get(name, 0)))
    return membership


def owners(host: PluginHost, membership: Membership, partitions: int) -> dict[int, str]:
    mode = host.subscription_mode("failover")
    result: dict[int, str] = {}
    for consumer in membership.consumers:
        for partition in mode.assigned_partitions(membership, consumer.consumer_id, partitions):
            assert partition not in result, "two active consumers for one partition"
            result[partition] = consumer.name
    return result


@pytest.mark.parametrize(("consumers", "partitions", "expected"), [
    # F24's table: same priority, partition index mod the sorted consumers.
    (("A", "B", "C"), 9, "ABCABCABC"),
    (("C", "A", "B"), 9, "ABCABCABC"),  # join order does not matter, names do
    (("A", "B", "C", "D"), 2, "AB"),
    (("B", "C", "D"), 2, "BC"),  # A killed: recomputed over B, C, D
    (("C", "D"), 2, "CD"),  # A and B killed
    (("A",), 3, "AAA"),
    (("B", "A"), 1, "A"),  # a non-partitioned topic goes to the first in order
])
def test_failover_active_consumer_table(host: PluginHost, consumers: tuple[str, ...], partitions: int,
                                        expected: str) -> None:
    membership = failover(host, *consumers)
    assert owners(host, membership, partitions) == dict(enumerate(expected))


def test_failover_leave_recomputes_and_switches_both_partitions(host: PluginHost) -> None:
    mode = host.subscription_mode("failover")
    membership = failover(host, "A", "B", "C", "D")
    assert owners(host, mode.leave(membership, "id-A"), 2) == {0: "B", 1: "C"}
    assert owners(host, mode.leave(mode.leave(membership, "id-A"), "id-B"), 2) == {0: "C", 1: "D"}


def test_failover_lower_priority_never_active_while_a_higher_one_exists(host: PluginHost) -> None:
    membership = failover(host, "A", "B", "C", priorities={"A": 1, "B": 0, "C": 1})
    assert owners(host, membership, 4) == {0: "B", 1: "B", 2: "B", 3: "B"}
    mode = host.subscription_mode("failover")
    assert owners(host, mode.leave(membership, "id-B"), 4) == {0: "A", 1: "C", 2: "A", 3: "C"}


def test_failover_switch_over_redelivers_unacked_from_mark_delete(host: PluginHost) -> None:
    subscription = Subscription(host.subscription_mode("failover"))
    subscription.join("a", name="A")
    subscription.join("b", name="B")
    assert subscription.fetch("b") == []  # standby
    assert subscription.fetch("a", 10) == list(range(10))
    subscription.ack_cumulative("a", 4)  # m0..m4 acked, m5..m9 unacked
    subscription.leave("a")
    assert subscription.fetch("b") == [5, 6, 7, 8, 9]
    assert subscription.state().mark_delete_position == 4


def test_a_new_active_consumer_waits_for_the_previous_ones_records(host: PluginHost) -> None:
    subscription = Subscription(host.subscription_mode("failover"))
    subscription.join("b", name="B", priority=1)
    assert subscription.fetch("b", 5) == [0, 1, 2, 3, 4]
    subscription.join("a", name="A", priority=0)  # takes over while b still holds 0..4
    assert subscription.fetch("b") == []
    assert subscription.fetch("a") == []  # no overtaking of b's records
    subscription.ack("b", 0, 1, 2)
    assert subscription.fetch("a") == []
    subscription.ack("b", 3, 4)  # b's acks count: nothing is lost or redelivered
    assert subscription.fetch("a") == [5, 6, 7, 8, 9]


def test_single_active_modes_allow_cumulative_acks_and_shared_ones_refuse(host: PluginHost) -> None:
    for name in ("exclusive", "failover"):
        require_cumulative_ack(host.subscription_mode(name), "sub")
    for name in ("shared", "key_shared"):
        with pytest.raises(InvalidRequest, match=f"is {name}: cumulative acknowledgement is only allowed on "
                                                 "exclusive and failover"):
            require_cumulative_ack(host.subscription_mode(name), "sub")


def test_failover_holds_a_partition_whose_active_consumer_changed_for_the_switch_delay(host: PluginHost) -> None:
    """Pulsar's activeConsumerFailoverDelayTimeMillis: the new active consumer starts once the delay is over."""
    mode = host.subscription_mode("failover")
    before = failover(host, "a", "b")
    after = mode.leave(before, "id-a")
    settings = {"logwright.failover.switch.delay.ms": "1000"}
    assert handover_delay_ms(mode, settings) == 1000 and handover_delay_ms(mode, {}) == 1000
    assert handover_delay_ms(host.subscription_mode("shared"), settings) == 0
    candidates = RangeSet.from_ranges([(0, 9)])

    def eligible(membership: Membership, consumer: str, now: int, partition: int = 0) -> RangeSet:
        view = DispatchView(membership, partition, 2, settings=settings, now_ms=now,
                            handover=Handover(before, until_ms=1000))
        return mode.eligible(view, consumer, candidates, 3)

    assert eligible(after, "id-b", now=999) == RangeSet(), "b became active on partition 0: it waits"
    assert eligible(after, "id-b", now=1000) == RangeSet.from_ranges([(0, 2)])
    assert eligible(after, "id-b", now=0, partition=1) == RangeSet.from_ranges([(0, 2)]), "b kept partition 1"
    back = mode.join(after, ModeConsumer("id-a2", "a"))  # a reconnects within the delay, as a new member
    assert eligible(back, "id-b", now=10) == RangeSet() and eligible(back, "id-b", now=1000) == RangeSet()
    assert eligible(back, "id-a2", now=999) == RangeSet(), "the delay is not extended, nor cut short"
    assert eligible(back, "id-a2", now=1000) == RangeSet.from_ranges([(0, 2)])
    first = mode.join(Membership("sub"), ModeConsumer("id-a", "a"))
    view = DispatchView(first, 0, 1, now_ms=0, handover=Handover(Membership("sub"), 1000))
    assert mode.eligible(view, "id-a", candidates, 3) == RangeSet.from_ranges([(0, 2)]), "nobody was active before"
