"""Shared (F25): any consumer takes any available record, one consumer per record, within its permits."""

from __future__ import annotations

from logwright.core.cursors import cursor_commands as commands
from logwright.core.cursors.subscription_mode import DispatchView, Membership, ModeConsumer
from logwright.core.rangeset import RangeSet
from logwright.plugins.host import PluginHost
from logwright.testing import Subscription


def test_three_consumers_with_ten_permits_share_thirty_records(host: PluginHost) -> None:
    subscription = Subscription(host.subscription_mode("shared"), records=30)
    for consumer in ("c1", "c2", "c3"):
        subscription.join(consumer)
    got = {consumer: subscription.fetch(consumer, 10) for consumer in ("c1", "c2", "c3")}
    assert [len(offsets) for offsets in got.values()] == [10, 10, 10]
    assert sorted(o for offsets in got.values() for o in offsets) == list(range(30))


def test_a_leaving_consumers_records_go_to_the_others_without_a_counted_attempt(host: PluginHost) -> None:
    subscription = Subscription(host.subscription_mode("shared"), records=30)
    for consumer in ("c1", "c2", "c3"):
        subscription.join(consumer)
    held = {consumer: subscription.fetch(consumer, 10) for consumer in ("c1", "c2", "c3")}
    subscription.leave("c1")
    again = subscription.fetch("c2", 5) + subscription.fetch("c3", 5)
    assert sorted(again) == held["c1"]
    assert subscription.fetch("c2") == [] and subscription.fetch("c1") == []
    assert commands.delivery_count(subscription.state(), held["c1"][0]) == 1  # a clean leave is not a failure


def test_max_unacked_per_consumer_stops_and_resumes(host: PluginHost) -> None:
    subscription = Subscription(host.subscription_mode("shared"), records=20,
                                settings={"logwright.max.unacked.per.consumer": "4"})
    subscription.join("c1")
    assert subscription.fetch("c1", 10) == [0, 1, 2, 3]
    assert subscription.fetch("c1", 10) == []
    subscription.ack("c1", 0, 1)
    assert subscription.fetch("c1", 10) == [4, 5]


def test_the_lower_of_the_consumers_own_cap_and_the_groups_applies(host: PluginHost) -> None:
    mode = host.subscription_mode("shared")
    membership = mode.join(Membership("sub"), ModeConsumer("c1", max_in_flight=3))
    candidates = RangeSet.from_ranges([(5, 100)])
    held = {"c1": RangeSet.of([1])}
    assert mode.eligible(DispatchView(membership, 0, 1, held), "c1", candidates, 50) == RangeSet.from_ranges([(5, 6)])
    group_cap = {"logwright.max.unacked.per.consumer": "2"}
    assert mode.eligible(DispatchView(membership, 0, 1, held, settings=group_cap), "c1", candidates, 50) == \
        RangeSet.of([5])
    assert mode.eligible(DispatchView(membership, 0, 1), "stranger", candidates, 50) == RangeSet()
    assert mode.assigned_partitions(membership, "c1", 2) == {0, 1}


def test_no_record_is_held_by_two_consumers(host: PluginHost) -> None:
    subscription = Subscription(host.subscription_mode("shared"), records=50)
    for consumer in ("a", "b", "c"):
        subscription.join(consumer)
    seen: dict[int, str] = {}
    for turn in range(12):
        consumer = "abc"[turn % 3]
        for offset in subscription.fetch(consumer, 3):
            assert offset not in seen
            seen[offset] = consumer
    assert sorted(seen) == list(range(36))
