"""Group configs bounded by the broker's: Kafka 4.4's refusals, word for word (probed); no I/O."""

from __future__ import annotations

from logwright.core.config.configs import default_registry
from logwright.core.config.group_bounds import GROUP_BOUNDS, broker_problem, group_problem

BROKER = {"group.share.min.record.lock.duration.ms": "20000", "group.share.max.record.lock.duration.ms": "60000",
          "group.share.min.partition.max.record.locks": "100", "group.share.max.partition.max.record.locks": "4000"}


def test_a_group_value_outside_the_brokers_bounds_is_refused_in_kafkas_words() -> None:
    assert group_problem("share.record.lock.duration.ms", "20000", BROKER.__getitem__) is None
    assert group_problem("share.record.lock.duration.ms", "60000", BROKER.__getitem__) is None
    assert group_problem("share.record.lock.duration.ms", "16000", BROKER.__getitem__) == (
        "share.record.lock.duration.ms must be in the range 20000 to 60000 inclusive.")
    assert group_problem("share.partition.max.record.locks", "4001", BROKER.__getitem__) == (
        "share.partition.max.record.locks must be in the range 100 to 4000 inclusive.")
    assert group_problem("share.auto.offset.reset", "earliest", BROKER.__getitem__) is None, "not bounded"


def test_the_brokers_default_must_lie_within_its_bounds() -> None:
    bound = GROUP_BOUNDS["share.delivery.count.limit"]
    assert broker_problem(bound, {bound.broker_key: "5", bound.minimum_key: "2", bound.maximum_key: "10"}) is None
    assert broker_problem(bound, {bound.broker_key: "5", bound.minimum_key: "6", bound.maximum_key: "10"}) == (
        "group.share.delivery.count.limit must be greater than or equal to group.share.min.delivery.count.limit")
    assert broker_problem(bound, {bound.broker_key: "5", bound.minimum_key: "2", bound.maximum_key: "4"}) == (
        "group.share.max.delivery.count.limit must be greater than or equal to group.share.delivery.count.limit")


def test_every_bound_names_registered_keys_with_the_groups_default() -> None:
    registry = default_registry()
    for bound in GROUP_BOUNDS.values():
        group_key = registry.get("group", bound.group_key)
        keys = [registry.get("broker", name) for name in (bound.broker_key, bound.minimum_key, bound.maximum_key)]
        assert group_key is not None and all(key is not None for key in keys), bound
        assert group_key.default == keys[0].default, bound  # type: ignore[union-attr]
        assert int(keys[1].default) <= int(keys[0].default) <= int(keys[2].default), bound  # type: ignore[union-attr,arg-type]
