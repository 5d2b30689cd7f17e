"""Regular expressions from clients cannot hold the broker: they are compiled by RE2 (linear-time matching).

A pattern that makes a backtracking engine take exponential time, ``(a+)+b`` against a run of ``a``s, is answered
at once and the broker serves everyone else meanwhile; a pattern RE2 (and Kafka's RE2J) refuses is
INVALID_REGULAR_EXPRESSION. Scenarios marked differential pass on Apache Kafka 4.4 unchanged.
"""

from __future__ import annotations

import threading
import uuid

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.api_versions.v0.request import ApiVersionsRequest
from kio.schema.list_transactions.v1.request import ListTransactionsRequest as ListTransactionsV1
from logwright.compat.registry import make

from .consumer_protocol_wire import assigned, heartbeat, request
from .group_configs import set_group_configs

NONE, INVALID_REGULAR_EXPRESSION = 0, 128
RUN = 40
"""``a``s in the topic name: a backtracking engine needs ~2**40 steps to refuse ``(a+)+b`` on them."""


def _create(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.create_topics([NewTopic(name, 1)])[name].result(30)
    except KafkaException as error:
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


@pytest.mark.differential
def test_a_catastrophic_subscription_regex_is_answered_and_others_are_served_meanwhile(bootstrap: str) -> None:
    suffix = uuid.uuid4().hex[:6]
    _create(bootstrap, "a" * RUN)  # the name is the same on every run: its topic may exist already
    _create(bootstrap, f"pattern-{suffix}")
    others: list[int] = []

    def other_client() -> None:
        for _ in range(5):
            others.append(int(request(bootstrap, ApiVersionsRequest()).error_code))

    beside = threading.Thread(target=other_client)
    beside.start()
    response = heartbeat(bootstrap, f"redos-{suffix}", str(uuid.uuid4()), 0, regex="(a+)+b",
                         rebalance_timeout_ms=60_000)
    beside.join(60)
    assert response.error_code == NONE, response
    assert others == [NONE] * 5
    # a pattern that does match subscribes as before
    member = str(uuid.uuid4())
    joined = heartbeat(bootstrap, f"match-{suffix}", member, 0, regex=f"pattern-{suffix}|b+",
                       rebalance_timeout_ms=60_000)
    assert joined.error_code == NONE, joined
    heartbeat(bootstrap, f"match-{suffix}", member, -1)


@pytest.mark.differential
@pytest.mark.parametrize("pattern", ["(?=a)a", "(a)\\1", "a{2,1}", "("])
def test_a_subscription_regex_re2_refuses_is_invalid_regular_expression(bootstrap: str, pattern: str) -> None:
    response = heartbeat(bootstrap, f"bad-regex-{uuid.uuid4().hex[:6]}", str(uuid.uuid4()), 0, regex=pattern,
                         rebalance_timeout_ms=60_000)
    assert response.error_code == INVALID_REGULAR_EXPRESSION, response


@pytest.mark.differential
def test_a_catastrophic_transactional_id_pattern_is_answered(bootstrap: str) -> None:
    """ListTransactions' pattern is RE2 syntax as in Kafka 4.4 (which refuses the look-behind too)."""
    answer = request(bootstrap, make(ListTransactionsV1, state_filters=(), producer_id_filters=(),
                                     duration_filter=-1))
    assert answer.error_code == NONE
    from kio.schema.list_transactions.v2.request import ListTransactionsRequest as ListTransactionsV2

    slow = request(bootstrap, make(ListTransactionsV2, state_filters=(), producer_id_filters=(), duration_filter=-1,
                                   transactional_id_pattern="(a|a?)+" * 20 + "b"))
    assert slow.error_code == NONE
    refused = request(bootstrap, make(ListTransactionsV2, state_filters=(), producer_id_filters=(),
                                      duration_filter=-1, transactional_id_pattern="(?<=a)b"))
    assert refused.error_code == INVALID_REGULAR_EXPRESSION


def test_a_regex_member_is_given_a_topic_created_after_it_joined(bootstrap: str) -> None:
    """The matches of a regex are kept while the topics stay as they are (each heartbeat matched every regex
    member against every topic); a topic created later is matched at the next heartbeat. (Kafka 4.4 refreshes
    regex subscriptions on a timer of its own, so this is checked on logwright only.)"""
    suffix = uuid.uuid4().hex[:6]
    _create(bootstrap, f"later-{suffix}-a")
    group, member = f"later-{suffix}", str(uuid.uuid4())
    set_group_configs(bootstrap, group, {"consumer.assignment.interval.ms": "0"})  # assigned at the heartbeat
    joined = heartbeat(bootstrap, group, member, 0, regex=f"later-{suffix}-.*", rebalance_timeout_ms=60_000)
    assert joined.error_code == NONE and len(assigned(joined) or {}) == 1, joined
    owned = assigned(joined) or {}
    steady = heartbeat(bootstrap, group, member, joined.member_epoch, owned=owned)
    assert steady.error_code == NONE and steady.assignment is None, "nothing changed: no new assignment"
    _create(bootstrap, f"later-{suffix}-b")
    grown = heartbeat(bootstrap, group, member, steady.member_epoch, owned=owned)
    assert grown.error_code == NONE and len(assigned(grown) or {}) == 2, grown
    heartbeat(bootstrap, group, member, -1)
