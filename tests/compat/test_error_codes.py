"""Error codes match Kafka's numbering, and every domain error has a wire code."""

from __future__ import annotations

import inspect

import pytest
from kio.schema.errors import ErrorCode as KioErrorCode
from logwright.compat.errors import ErrorCode, KafkaError, error_code_for, mapped_domain_errors
from logwright.core import errors as domain


def test_numbers_and_retriability_match_kafka_as_kio_generates_them() -> None:
    assert {code.name: (int(code), code.retriable) for code in ErrorCode} == {
        code.name.upper(): (int(code), code.retriable) for code in KioErrorCode}


@pytest.mark.parametrize(("name", "number"), [
    ("NONE", 0), ("OFFSET_OUT_OF_RANGE", 1), ("CORRUPT_MESSAGE", 2), ("UNKNOWN_TOPIC_OR_PARTITION", 3),
    ("MESSAGE_TOO_LARGE", 10), ("NOT_COORDINATOR", 16), ("UNSUPPORTED_VERSION", 35), ("INVALID_REQUEST", 42),
    ("UNSUPPORTED_FOR_MESSAGE_FORMAT", 43), ("UNKNOWN_TOPIC_ID", 100), ("INVALID_RECORD_STATE", 121),
    ("SHARE_SESSION_NOT_FOUND", 122), ("INVALID_SHARE_SESSION_EPOCH", 123), ("FENCED_STATE_EPOCH", 124),
])
def test_well_known_numbers(name: str, number: int) -> None:
    assert ErrorCode[name] == number


def test_every_domain_error_has_a_code() -> None:
    defined = {cls for _, cls in inspect.getmembers(domain, inspect.isclass)
               if issubclass(cls, domain.DomainError) and cls is not domain.DomainError}
    assert defined - mapped_domain_errors() == set(), "map these in compat/errors.py"


def test_error_code_for() -> None:
    assert error_code_for(domain.UnknownTopic("no topic t")) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert error_code_for(domain.MemberIdRequired("rejoin", "m-1")) is ErrorCode.MEMBER_ID_REQUIRED
    assert error_code_for(domain.DomainError("?")) is ErrorCode.UNKNOWN_SERVER_ERROR
    assert error_code_for(RuntimeError("bug")) is ErrorCode.UNKNOWN_SERVER_ERROR
    assert error_code_for(KafkaError(ErrorCode.POLICY_VIOLATION, "no")) is ErrorCode.POLICY_VIOLATION


def test_subclasses_inherit_their_bases_code() -> None:
    class VeryUnknownTopic(domain.UnknownTopic):
        pass

    assert error_code_for(VeryUnknownTopic("x")) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_kafka_error_carries_code_and_message() -> None:
    error = KafkaError(ErrorCode.INVALID_REQUIRED_ACKS, "acks=2 is not 0, 1 or -1")
    assert error.code is ErrorCode.INVALID_REQUIRED_ACKS
    assert error.message == "acks=2 is not 0, 1 or -1"
    assert str(error) == "INVALID_REQUIRED_ACKS (21): acks=2 is not 0, 1 or -1"
    assert KafkaError(ErrorCode.NOT_COORDINATOR).message == "not coordinator"
