"""The built-in plugin ``pop``: its dead-letter decision for share groups in pop mode, its config validation."""

from __future__ import annotations

from logwright.plugins import pop
from logwright.plugins.api import ArchivedRecords, DeadLetter, Redeliver, Reject, ReleasedDelivery, ReleaseReason


def archived(**settings: str) -> ArchivedRecords:
    return ArchivedRecords("billing group", "orders", 0, ((3, 3, 17),), "delivery limit", "m1", 0, settings)


def test_only_pop_mode_groups_dead_letter_to_their_pop_topic() -> None:
    decision = pop.logwright_decide_archive(archived(**{"logwright.subscription.mode": "pop"}))
    assert isinstance(decision, DeadLetter)
    assert (decision.topic, decision.copy_record, decision.auto_create) == ("DLQ.billing_group", True, True)
    assert dict(decision.headers_once)["RETRY_TOPIC"] == "%RETRY%{group}_{topic}"
    assert pop.logwright_decide_archive(archived(**{"logwright.subscription.mode": "shared"})) is None


def test_kip_1191_and_a_named_topic_take_precedence() -> None:
    kip = archived(**{"logwright.subscription.mode": "pop", "errors.deadletterqueue.topic.name": "dlq.x"})
    assert pop.logwright_decide_archive(kip) is None
    named = pop.logwright_decide_archive(archived(**{"logwright.subscription.mode": "pop",
                                                     "logwright.pop.dead.letter.topic": "pop-dlq"}))
    assert named is not None and (named.topic, named.auto_create) == ("pop-dlq", False)


def test_dead_letter_topic_names_must_be_legal() -> None:
    assert pop.dead_letter_topic("") is None and pop.dead_letter_topic("pop-dlq") is None
    for bad in ("%DLQ%g", "__x", "a b", "."):
        assert "legal topic name" in (pop.dead_letter_topic(bad) or "")


def released(count: int, requested: int | None = None, **settings: str) -> ReleasedDelivery:
    return ReleasedDelivery("g", "orders", 0, ((3, 3),), count, ReleaseReason.RELEASED, "m1", 0, requested, settings)


def test_pop_mode_releases_follow_the_retry_table_up_to_max_reconsume_times() -> None:
    pop_mode = {"logwright.subscription.mode": "pop"}
    assert [pop.logwright_decide_release(released(n, **pop_mode)) for n in (1, 2, 3)] == [
        Redeliver(1_000), Redeliver(5_000), Redeliver(10_000)]
    assert pop.logwright_decide_release(released(17, **pop_mode)) == Reject("max reconsume times reached")
    assert pop.logwright_decide_release(released(16, **pop_mode)) == Redeliver(1_800_000)  # 16th level: 30m
    assert pop.logwright_decide_release(released(1, 250, **pop_mode)) == Redeliver(250)
    fixed = {**pop_mode, "logwright.redelivery.backoff.policy": "fixed", "logwright.redelivery.backoff.delay.ms": "700"}
    assert pop.logwright_decide_release(released(2, **fixed)) == Redeliver(700)
    assert pop.logwright_decide_release(released(2, **{"logwright.subscription.mode": "shared"})) is None
    assert pop.PopMode().decides_release
