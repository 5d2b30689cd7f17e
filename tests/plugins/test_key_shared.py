"""Key_Shared (F26): key hashes owned by one consumer, sticky ranges, per-key order across joins and leaves."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from logwright.core.cursors.key_hash import key_hash
from logwright.core.cursors.key_hash_ranges import HashRange
from logwright.core.cursors.subscription_mode import DispatchView, Membership, ModeConsumer
from logwright.core.errors import ConsumerBusy, InvalidRequest
from logwright.core.rangeset import RangeSet
from logwright.plugins.host import PluginHost
from logwright.testing import Subscription

OUT_OF_ORDER = "logwright.key_shared.allow.out.of.order.delivery"


def key_where(condition: Callable[[int], bool], avoid: tuple[bytes, ...] = ()) -> bytes:
    """The first key ``k0, k1, ...`` whose hash satisfies ``condition``."""
    return next(key for key in (f"k{n}".encode() for n in range(10_000))
                if condition(key_hash(key)) and key not in avoid)


LOW = key_where(lambda h: h <= 32767)  # C2's half once it joins after C1
HIGH = key_where(lambda h: h > 32767)  # stays with C1


def test_a_key_moved_to_a_new_consumer_waits_for_the_old_owners_acks(host: PluginHost) -> None:
    subscription = Subscription(host.subscription_mode("key_shared"), keys=[LOW, LOW, LOW])
    subscription.join("c1")
    assert subscription.fetch("c1") == [0, 1, 2]  # m1..m3 of K, unacked
    subscription.join("c2")  # takes K's hash
    subscription.publish(LOW, HIGH)  # m4 of K, and a record of a key c1 keeps
    assert subscription.fetch("c2") == []  # K is draining: m4 must wait
    assert subscription.fetch("c1") == [4]  # c1 no longer owns K, but still owns HIGH
    subscription.ack("c1", 0, 1)
    assert subscription.fetch("c2") == []  # m3 still in flight to c1
    subscription.ack("c1", 2)
    assert subscription.fetch("c2") == [3]


def test_the_old_owner_leaving_redelivers_its_records_first(host: PluginHost) -> None:
    subscription = Subscription(host.subscription_mode("key_shared"), keys=[LOW, LOW, LOW])
    subscription.join("c1")
    assert subscription.fetch("c1") == [0, 1, 2]
    subscription.join("c2")
    subscription.publish(LOW)
    subscription.leave("c1")
    assert subscription.fetch("c2", 2) == [0, 1]
    assert subscription.fetch("c2") == [2, 3]


def test_allow_out_of_order_delivery_lets_the_new_owner_start_at_once(host: PluginHost) -> None:
    subscription = Subscription(host.subscription_mode("key_shared"), keys=[LOW, LOW, LOW],
                                settings={OUT_OF_ORDER: "true"})
    subscription.join("c1")
    assert subscription.fetch("c1") == [0, 1, 2]
    subscription.join("c2")
    subscription.publish(LOW)
    assert subscription.fetch("c2") == [3]


def test_sticky_ranges_route_every_hash_to_its_declarer(host: PluginHost) -> None:
    keys: list[bytes | None] = [f"key-{n}".encode() for n in range(200)]
    subscription = Subscription(host.subscription_mode("key_shared"), keys=keys)
    subscription.join("c1", hash_ranges=(HashRange(0, 32767),))
    subscription.join("c2", hash_ranges=(HashRange(32768, 65535),))
    got_c1, got_c2 = subscription.fetch("c1", 500), subscription.fetch("c2", 500)
    assert got_c1 and got_c2
    assert all(key_hash(keys[o]) <= 32767 for o in got_c1)
    assert all(key_hash(keys[o]) > 32767 for o in got_c2)
    assert sorted(got_c1 + got_c2) == list(range(200))
    with pytest.raises(ConsumerBusy, match="overlaps"):
        subscription.join("c3", hash_ranges=(HashRange(100, 200),))


def test_sticky_hashes_nobody_declared_are_not_delivered(host: PluginHost) -> None:
    subscription = Subscription(host.subscription_mode("key_shared"), keys=[LOW, HIGH, LOW])
    subscription.join("c1", hash_ranges=(HashRange(32768, 65535),))
    assert subscription.fetch("c1") == [1]


def test_one_subscription_uses_one_policy(host: PluginHost) -> None:
    mode = host.subscription_mode("key_shared")
    auto = mode.join(Membership("sub"), ModeConsumer("c1"))
    with pytest.raises(InvalidRequest, match="uses AUTO_SPLIT"):
        mode.join(auto, ModeConsumer("c2", hash_ranges=(HashRange(0, 10),)))
    sticky = mode.join(Membership("sub"), ModeConsumer("c1", hash_ranges=(HashRange(0, 10),)))
    with pytest.raises(InvalidRequest, match="uses STICKY"):
        mode.join(sticky, ModeConsumer("c2"))


def test_ownership_follows_joins_and_leaves_and_is_a_plain_value(host: PluginHost) -> None:
    mode = host.subscription_mode("key_shared")
    membership = Membership("sub")
    for consumer in ("c1", "c2", "c3"):
        membership = mode.join(membership, ModeConsumer(consumer))
    # Upstream measures the first range as one smaller than it is, so of two equal halves the upper splits.
    assert [(r.start, r.end, r.consumer_id) for r in membership.ownership.ranges] == [
        (0, 32767, "c2"), (32768, 49151, "c3"), (49152, 65535, "c1")]
    membership = mode.leave(membership, "c3")
    assert [(r.start, r.end, r.consumer_id) for r in membership.ownership.ranges] == [
        (0, 32767, "c2"), (32768, 65535, "c1")]
    assert [c.consumer_id for c in membership.consumers] == ["c1", "c2"]
    types = host.type_registry()
    assert types.decode(types.encode(membership), "test") == membership


def test_budget_and_missing_key_hashes(host: PluginHost) -> None:
    mode = host.subscription_mode("key_shared")
    membership = mode.join(Membership("sub"), ModeConsumer("c1", max_in_flight=2))
    view = DispatchView(membership, 0, 1, {"c1": RangeSet.of([0])}, lambda offset: 7)
    assert mode.eligible(view, "c1", RangeSet.from_ranges([(1, 9)]), 10) == RangeSet.of([1])
    with pytest.raises(ValueError, match="key_hash_of"):
        mode.eligible(DispatchView(membership, 0, 1), "c1", RangeSet.of([1]), 10)


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.sampled_from([b"a", b"b", b"c", b"d", b"e", None]), min_size=6, max_size=40),
       steps=st.lists(st.tuples(st.sampled_from(["join", "leave", "fetch", "fetch", "ack"]), st.integers(0, 2),
                                st.integers(1, 4)), min_size=4, max_size=40))
@example(keys=[b"a", b"b", b"c", b"d", b"e", None] * 3,
         steps=[("join", 0, 1), ("fetch", 0, 4), ("join", 1, 1), ("fetch", 1, 4)])
def test_per_key_order_holds_across_joins_and_leaves(keys: list[bytes | None],
                                                     steps: list[tuple[str, int, int]]) -> None:
    host = PluginHost.load(installed=False)
    subscription = Subscription(host.subscription_mode("key_shared"), keys=list(keys))
    delivered: dict[int, list[int]] = {}  # key hash -> offsets in the order they were acquired
    for action, number, amount in steps:
        consumer = f"c{number}"
        member = subscription.membership.consumer(consumer) is not None
        if action == "join":
            subscription.join(consumer)
        elif action == "leave" and member:
            subscription.leave(consumer)
        elif action == "fetch" and member:
            view = subscription.view()
            got = subscription.fetch(consumer, amount)
            for offset in got:
                key = key_hash(keys[offset])
                assert subscription.membership.ownership.owner_of(key) == consumer
                others = [o for c, held in view.in_flight.items() if c != consumer for o in held]
                assert key not in {key_hash(keys[o]) for o in others}, "key delivered while draining"
                earlier_unsettled = [o for o in range(offset) if key_hash(keys[o]) == key
                                     and o not in subscription.state().settled
                                     and o > subscription.state().mark_delete_position]
                held_now = {d.first for d in subscription.state().in_flight if d.consumer == consumer} | set(
                    o for d in subscription.state().in_flight if d.consumer == consumer
                    for o in range(d.first, d.last + 1))
                assert set(earlier_unsettled) <= held_now, "a later record of a key overtook an earlier one"
                delivered.setdefault(key, []).append(offset)
        elif action == "ack" and member:
            held = [o for d in subscription.state().in_flight if d.consumer == consumer
                    for o in range(d.first, d.last + 1)]
            if held:
                subscription.ack(consumer, *held[:amount])
    for offsets in delivered.values():
        firsts = [o for i, o in enumerate(offsets) if o not in offsets[:i]]
        assert firsts == sorted(firsts), "first deliveries of a key went out of order"
