"""Client quotas without I/O: Kafka's validation and answer order, the projection, DescribeClientQuotas' matching,
which quota applies to a client, and Kafka's sampled rate with its throttle time (numbers worked by hand)."""

from __future__ import annotations

import pytest
from logwright.core.errors import InvalidRequest, UnsupportedFeature
from logwright.core.events.quotas import ClientQuotasAltered
from logwright.core.projection import fold
from logwright.core.quotas.client_quotas import CLIENT_QUOTAS, Component, IpConnectionRates, QuotaBook, describe
from logwright.core.quotas.entities import (
    AlterationAsked,
    EntityQuotas,
    QuotaAlteration,
    check_value,
    decide_alterations,
    entity_key,
    java_map_order,
)
from logwright.core.quotas.rate import ByteRates, SampledRate, TokenBucket

ALICE_C1 = (("client-id", "c1"), ("user", "alice"))


def test_an_entity_is_answered_in_kafkas_map_order_with_kafkas_words() -> None:
    assert java_map_order([("user", "u"), ("client-id", "c"), ("ip", "1")]) == (
        ("client-id", "c"), ("user", "u"), ("ip", "1"))
    results, changes = decide_alterations([
        AlterationAsked((("user", "ANONYMOUS"),), (("producer_byte_rate", 100.0),)),
        AlterationAsked((("user", None), ("client-id", None)), (("producer_byte_rate", 100.0),)),
        AlterationAsked((("client-id", None),), (("producer_byte_rate", 100.0),)),
        AlterationAsked((("user", "zz"),), (("bad", 100.0),)),
        AlterationAsked((("user", "zz"),), (("producer_byte_rate", 100.0),)),
        AlterationAsked((("user", "yy"), ("client-id", "q")), (("producer_byte_rate", 100.0),)),
    ], {})
    # the order Kafka 4.4 answered this very request in (its answer map's hash order)
    assert [(result.parts, result.error) for result in results] == [
        ((("user", "zz"),), "Ignoring duplicate entity ClientQuotaEntity(entries={user=zz})"),
        ((("client-id", None),), None),
        ((("client-id", "q"), ("user", "yy")), None),
        ((("user", "ANONYMOUS"),), None),
        ((("client-id", None), ("user", None)), None)]
    assert len(changes) == 4  # the refused zz changes nothing


def test_a_duplicate_entity_is_refused_yet_its_first_alteration_is_made_as_on_kafka() -> None:
    results, changes = decide_alterations([
        AlterationAsked((("user", "carl"),), (("producer_byte_rate", 1000.0),)),
        AlterationAsked((("user", "carl"),), (("consumer_byte_rate", 7.0),))], {})
    assert [result.error for result in results] == [
        "Ignoring duplicate entity ClientQuotaEntity(entries={user=carl})"]
    assert changes == (QuotaAlteration((("user", "carl"),), (("producer_byte_rate", 1000.0),), ()),)
    results, changes = decide_alterations([AlterationAsked(
        (("user", "bob"), ("client-id", "x")), (("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0)))], {})
    assert results[0].error == "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=x, user=bob})"
    assert changes == ()


@pytest.mark.parametrize(("parts", "error"), [
    ((), "Invalid empty client quota entity"),
    ((("group", "g"),), "Unhandled client quota entity type: group"),
    ((("user", ""),), "Empty user not supported"),
    ((("ip", "10.0.0.1"), ("user", "u")),
     "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
    ((("ip", "not an ip!"),), "not an ip! is not a valid IP or resolvable host."),
])
def test_entities_kafka_refuses(parts: tuple[tuple[str, str | None], ...], error: str) -> None:
    results, changes = decide_alterations([AlterationAsked(parts, (("producer_byte_rate", 10.0),))], {})
    assert results[0].error == error and changes == ()


@pytest.mark.parametrize(("entity", "key", "value", "error"), [
    ((("user", "d"),), "foo", 1.0, "Invalid configuration key foo"),
    ((("user", "d"),), "connection_creation_rate", 1.0, "Invalid configuration key connection_creation_rate"),
    ((("ip", "1.2.3.4"),), "producer_byte_rate", 1.0, "Invalid configuration key producer_byte_rate"),
    ((("user", "d"),), "producer_byte_rate", 0.0, "Quota producer_byte_rate must be greater than 0"),
    ((("user", "d"),), "producer_byte_rate", float("nan"), "Quota producer_byte_rate must be a finite number"),
    ((("user", "d"),), "request_percentage", float("-inf"), "Quota request_percentage must be a finite number"),
    ((("user", "d"),), "producer_byte_rate", 1.5, "producer_byte_rate cannot be a fractional value."),
    ((("user", "d"),), "producer_byte_rate", 1e19, "Proposed value for producer_byte_rate is too large for a LONG."),
    ((("ip", "1.2.3.4"),), "connection_creation_rate", 3e9,
     "Proposed value for connection_creation_rate is too large for an INT."),
    ((("user", "d"),), "producer_byte_rate", 1.0000001, None),
    ((("user", "d"),), "request_percentage", 12.5, None),
])
def test_values_as_kafka_checks_them(entity: tuple[tuple[str, str | None], ...], key: str, value: float,
                                     error: str | None) -> None:
    assert check_value(entity, key, value) == error


def test_the_projection_sets_and_removes_keys_and_an_emptied_entity_goes() -> None:
    user = (("user", "u"),)
    states = fold(CLIENT_QUOTAS, [
        ClientQuotasAltered((QuotaAlteration(user, (("producer_byte_rate", 5.0), ("consumer_byte_rate", 6.0)), ()),
                             QuotaAlteration(ALICE_C1, (("request_percentage", 1.5),), ()))),
        ClientQuotasAltered((QuotaAlteration(user, (("producer_byte_rate", 7.0),), ("consumer_byte_rate",)),)),
        ClientQuotasAltered((QuotaAlteration(ALICE_C1, (), ("request_percentage",)),)),
    ])
    assert states == {entity_key(user): EntityQuotas(user, (("producer_byte_rate", 7.0),))}
    assert entity_key((("user", "a;b"),)) != entity_key((("user", "a"), ("user2", "b")))


def test_setting_the_same_value_or_removing_a_missing_key_is_no_change() -> None:
    results, changes = decide_alterations(
        [AlterationAsked((("user", "u"),), (("producer_byte_rate", 5.0), ("consumer_byte_rate", None)))],
        {(("user", "u"),): {"producer_byte_rate": 5.0}})
    assert results[0].error is None and changes == ()


STORED = [EntityQuotas((("user", None),), (("consumer_byte_rate", 1.0),)),
          EntityQuotas((("user", "ANONYMOUS"),), (("producer_byte_rate", 2.0),)),
          EntityQuotas((("client-id", None), ("user", None)), (("producer_byte_rate", 3.0),)),
          EntityQuotas((("client-id", None),), (("producer_byte_rate", 4.0),)),
          EntityQuotas((("ip", "10.0.0.1"),), (("connection_creation_rate", 5.0),))]


def _described(components: list[Component], strict: bool = False) -> list[tuple[tuple[str, str | None], ...]]:
    return [quotas.entity for quotas in describe(STORED, components, strict)]


def test_describe_matches_as_kafkas_image_does() -> None:
    assert len(_described([])) == 5 and _described([], strict=True) == []
    # "any specified name" takes the default entity too, as Kafka 4.4's does
    assert _described([Component("user", 2, None)]) == [e.entity for e in STORED[:3]]
    assert _described([Component("user", 2, None)], strict=True) == [e.entity for e in STORED[:2]]
    assert _described([Component("user", 1, None)]) == [STORED[0].entity, STORED[2].entity]
    assert _described([Component("user", 0, "ANONYMOUS")]) == [STORED[1].entity]
    assert _described([Component("client-id", 1, None)], strict=True) == [STORED[3].entity]


@pytest.mark.parametrize(("components", "error", "message"), [
    ([Component("user", 0, None)], InvalidRequest, "Request specified MATCH_TYPE_EXACT, but set match string to null."),
    ([Component("user", 1, "x")], InvalidRequest,
     "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
    ([Component("user", 5, None)], InvalidRequest, "Unknown match type 5"),
    ([Component("group", 2, None)], UnsupportedFeature, "Unsupported entity type group"),
    ([Component("", 2, None)], InvalidRequest, "Invalid empty entity type."),
    ([Component("user", 2, None), Component("user", 0, "a")], InvalidRequest,
     "Entity type user cannot appear more than once in the filter."),
    ([Component("ip", 2, None), Component("user", 2, None)], InvalidRequest,
     "Invalid entity filter component combination. IP filter component should not be used with user or clientId "
     "filter component."),
])
def test_bad_filters(components: list[Component], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match="^" + message.replace(".", r"\.") + "$"):
        describe(STORED, components, False)


def test_the_most_specific_quota_applies_and_says_whose_rate_it_is() -> None:
    book = QuotaBook("producer_byte_rate", STORED)
    assert book.any
    applied = book.applied("any-client")  # /config/users/<user> comes before the default user's entities
    assert applied is not None and applied.bound == 2.0 and applied.metric == ("ANONYMOUS", "")
    defaults = QuotaBook("producer_byte_rate", [STORED[2], STORED[3]])
    applied = defaults.applied("any-client")
    assert applied is not None and applied.bound == 3.0 and applied.metric == ("ANONYMOUS", "any-client")
    only_clients = QuotaBook("producer_byte_rate", [STORED[3]])
    applied = only_clients.applied("c")
    assert applied is not None and applied.bound == 4.0 and applied.metric == ("", "c")
    assert only_clients.applied("") is None  # Kafka finds no quota for empty metric tags
    assert not QuotaBook("producer_byte_rate", [STORED[0], STORED[4]]).any


def test_kafkas_rate_counts_ten_whole_windows_from_the_start() -> None:
    rate = SampledRate(11, 1000, 0)
    rate.record(20_000, 0)
    # 20,000 bytes over at least 10 whole windows: 2,000 B/s; to bring it to 1,000 it waits 10 s more
    assert rate.measure(0) == 2000.0
    assert rate.throttle_ms(1000.0, 0) == 10_000
    assert rate.throttle_ms(2000.0, 0) == 0
    rate.record(5_000, 15_000)  # the sample of time 0 is reset 11 s after its last event
    assert rate.measure(15_000) == 500.0


def test_samples_advance_and_the_window_grows_past_ten_seconds() -> None:
    rate = SampledRate(11, 1000, 0)
    for second in range(12):
        rate.record(1000, second * 1000)
    # 12 samples were made and 12 kept (11 + the overlapping one), but the one of time 0 had its last event 11 s
    # ago: reset. The rest span 1 s to 11 s: 11,000 bytes over 10 s
    assert rate.window_ms(11_000) == 10_000
    assert rate.measure(11_000) == 1100.0
    rate.record(1000, 11_500)
    assert rate.window_ms(11_500) == 10_500 and rate.measure(11_500) == pytest.approx(12_000 / 10.5)


def test_byte_rates_answer_the_throttle_and_forget_idle_clients() -> None:
    rates = ByteRates(11, 1000)
    assert rates.record(("", "a"), 20_000, 1000.0, 0) == 10_000
    assert rates.record(("", "b"), 5_000, 1000.0, 0) == 0
    assert rates.max_value_in_window(1000.0) == 10_000
    rates.record(("", "c"), 1, 1000.0, 3_600_000)  # an hour later both earlier rates are idle
    assert len(rates) == 1


def test_kafkas_token_bucket_starts_full_refills_and_goes_below_zero() -> None:
    bucket = TokenBucket(11, 1000, 0)
    assert bucket.tokens(1.0, 0) == 11.0  # full: eleven one-second windows at 1 a second
    bucket.record(16, 1.0, 0)
    assert bucket.tokens(1.0, 0) == -5.0
    assert TokenBucket.throttle_ms(-5.0, 1.0) == 5_000
    assert bucket.tokens(1.0, 2_500) == -2.5
    assert bucket.tokens(1.0, 60_000) == 11.0  # never above the burst
    assert TokenBucket.throttle_ms(3.0, 1.0) == 0


def test_an_address_has_its_own_connection_creation_rate_or_the_default() -> None:
    rates = IpConnectionRates([EntityQuotas((("ip", "10.0.0.1"),), (("connection_creation_rate", 3.0),)),
                               EntityQuotas((("ip", None),), (("connection_creation_rate", 10.0),)),
                               EntityQuotas((("client-id", "c"),), (("producer_byte_rate", 5.0),))])
    assert rates.any and rates.bound("10.0.0.1") == 3.0 and rates.bound("10.0.0.2") == 10.0
    rates.update((("ip", None),), None)
    assert rates.bound("10.0.0.2") is None and rates.bound("10.0.0.1") == 3.0
    rates.update((("ip", "10.0.0.1"),), EntityQuotas((("ip", "10.0.0.1"),), ()))
    assert not rates.any
