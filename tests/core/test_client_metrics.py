"""Client-metrics subscriptions' checks and stored values, without a broker (the wire: test_client_metrics.py)."""

from __future__ import annotations

import pytest
from logwright.core.config.client_metrics import check_name, checked_changes, checked_value
from logwright.core.errors import InvalidConfig, InvalidRequest


def accept_all(pattern: str) -> bool:
    return True


def test_values_are_stored_as_kafka_reads_them() -> None:
    assert checked_value("metrics", "SET", " a , b,c ", accept_all) == "a,b,c"
    assert checked_value("metrics", None, "", accept_all) == ""
    assert checked_value("interval.ms", "SET", " 0100 ", accept_all) == "100"
    assert checked_value("match", "SET", "client_id = x , client_source_port=9.*", accept_all) == \
        "client_id = x,client_source_port=9.*"
    assert checked_value("anything", "DELETE", None, accept_all) is None
    assert checked_changes([("metrics", "SET", "*"), ("match", "DELETE", None)], accept_all) == \
        [("metrics", "*"), ("match", None)]


@pytest.mark.parametrize(("name", "operation", "value", "error", "message"), [
    ("interval.ms", "SET", "99", InvalidRequest, "Invalid value 99 for interval.ms, interval must be between 100"),
    ("interval.ms", "SET", "2147483648", InvalidConfig, "Not a number of type INT"),
    ("interval.ms", "APPEND", "1", InvalidConfig, "Can't APPEND to key interval.ms because its type is not LIST."),
    ("match", "SET", "client_rack=x", InvalidConfig, "Illegal client matching pattern: client_rack=x"),
    ("metrics", "SET", None, InvalidRequest, "Null value not supported for : metrics"),
    ("bogus", "SET", "1", InvalidRequest, "Unknown client metrics configuration: bogus"),
])
def test_refusals_are_kafkas(name: str, operation: str, value: str | None, error: type[Exception],
                             message: str) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        checked_value(name, operation, value, accept_all)


def test_a_pattern_the_checker_refuses_is_illegal() -> None:
    with pytest.raises(InvalidConfig, match="Illegal client matching pattern: client_id=x"):
        checked_value("match", "SET", "client_id=y,client_id=x", lambda pattern: pattern == "y")


def test_names_must_not_be_empty() -> None:
    check_name("m")
    with pytest.raises(InvalidRequest, match="Subscription name can't be empty"):
        check_name("")
    with pytest.raises(InvalidRequest, match="Client metrics subscription name must not be empty"):
        check_name("", describing=True)
