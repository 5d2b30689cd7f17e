"""SCRAM credentials (KIP-554) and SASL/PLAIN, decided without I/O.

The expected answers, words and orders are the ones Apache Kafka 4.4 gave to the same requests (the differential
test, tests/integration/test_sasl.py, asks both brokers over the wire); the keys are RFC 5802's, checked against
the RFC's own test vector.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from logwright.core.errors import InvalidConfig
from logwright.core.events.security import ScramCredential, UserScramCredentialsAltered
from logwright.core.security.sasl_plain import SaslFailed, plain_principal, plain_users
from logwright.core.security.scram_credentials import (
    DUPLICATE_RESOURCE,
    RESOURCE_NOT_FOUND,
    SCRAM_CREDENTIALS,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    UNACCEPTABLE_CREDENTIAL,
    UNKNOWN_SERVER_ERROR,
    UNSUPPORTED_SASL_MECHANISM,
    Upsertion,
    UserCredentials,
    decide_alterations,
    derived_keys,
    describe,
)

TWICE = "A user credential cannot be altered twice in the same request"
MISSING = "Attempt to delete a user credential that does not exist"


def up(user: str, mechanism: int = SCRAM_SHA_256, iterations: int = 4096, salted: bytes = b"pw") -> Upsertion:
    return Upsertion(user, mechanism, iterations, b"salt", salted)


def held(*credentials: tuple[str, int]) -> dict[str, UserCredentials]:
    users: dict[str, list[ScramCredential]] = {}
    for user, mechanism in credentials:
        users.setdefault(user, []).append(ScramCredential(user, mechanism, b"s", b"k", b"k", 4096))
    return {user: UserCredentials(user, tuple(found)) for user, found in users.items()}


def answers(deletions: list[tuple[str, int]], upsertions: list[Upsertion],
            stored: dict[str, UserCredentials] | None = None) -> list[tuple[str, int, str | None]]:
    results, _ = decide_alterations(deletions, upsertions, stored or {})
    return [(result.user, result.error_code, result.message) for result in results]


def test_the_keys_verify_rfc_7677s_exchange() -> None:
    """RFC 7677's SCRAM-SHA-256 example (user "user", password "pencil"): the keys derived from the salted password
    verify its client proof and give its server signature."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    stored_key, server_key = derived_keys(SCRAM_SHA_256, hashlib.pbkdf2_hmac("sha256", b"pencil", salt, 4096))
    nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    auth_message = (f"n=user,r=rOprNGfwEbeRWgbNEkqO,r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r={nonce}"
                    .encode())
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client_signature = hmac.new(stored_key, auth_message, "sha256").digest()
    client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
    assert hashlib.sha256(client_key).digest() == stored_key
    assert base64.b64encode(hmac.new(server_key, auth_message, "sha256").digest()) == \
        b"6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert [len(key) for key in derived_keys(SCRAM_SHA_512, b"salted")] == [64, 64]


def test_refusals_and_successes_in_kafkas_order() -> None:
    """Kafka 4.4's answer to these eight upsertions: the two made first, then the refusals in its map's order."""
    assert answers([], [up("alice"), up("bob", SCRAM_SHA_512, 8192), up(""), up("carol", 3), up("dave", 1, 4095),
                        up("erin", 1, 16385), up("frank", 0, 5000), up("gina", -1, 5000)]) == [
        ("bob", 0, None), ("alice", 0, None), ("", UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        ("frank", UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        ("carol", UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        ("dave", UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        ("gina", UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        ("erin", UNACCEPTABLE_CREDENTIAL, "Too many iterations")]


def test_a_user_changed_twice_is_refused_and_a_refused_user_is_passed_over() -> None:
    stored = held(("alice", SCRAM_SHA_256), ("bob", SCRAM_SHA_512))
    assert answers([("alice", 1), ("zed", 1), ("bob", 1), ("", 1), ("x", 7)],
                   [up("alice", SCRAM_SHA_512, 5000), up("hank"), up("hank", SCRAM_SHA_512), up("ivy")], stored) == [
        ("ivy", 0, None), ("", UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        ("bob", RESOURCE_NOT_FOUND, MISSING), ("hank", DUPLICATE_RESOURCE, TWICE), ("zed", RESOURCE_NOT_FOUND, MISSING),
        ("x", UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"), ("alice", DUPLICATE_RESOURCE, TWICE)]
    # a deletion refused at once keeps its refusal: the user's later changes are not read
    assert answers([("q", 1), ("q", 1), ("q", 1)], [up("q"), up("r"), up("r"), up("r")]) == [
        ("q", RESOURCE_NOT_FOUND, MISSING), ("r", DUPLICATE_RESOURCE, TWICE)]


def test_an_empty_salted_password_is_kafkas_unknown_server_error_and_the_rest_is_made() -> None:
    results, event = decide_alterations([("bob", SCRAM_SHA_512)], [up("s", iterations=16384), up("t", salted=b"")],
                                        held(("bob", SCRAM_SHA_512)))
    assert [(result.user, result.error_code, result.message) for result in results] == [
        ("bob", 0, None), ("s", 0, None), ("t", UNKNOWN_SERVER_ERROR, None)]
    assert event is not None and event.deleted == (("bob", SCRAM_SHA_512),)
    assert [credential.user for credential in event.upserted] == ["s"]


def test_nothing_made_is_no_event() -> None:
    assert decide_alterations([("nobody", 1)], [up("", 1)], {})[1] is None


def test_the_projection_keeps_a_credential_per_mechanism_and_forgets_a_user_without_any() -> None:
    first = ScramCredential("alice", SCRAM_SHA_512, b"s", b"k", b"v", 4096)
    second = ScramCredential("alice", SCRAM_SHA_256, b"s2", b"k2", b"v2", 8192)
    state = SCRAM_CREDENTIALS.evolve(None, UserScramCredentialsAltered((first, second), ()), "alice")
    assert state == UserCredentials("alice", (second, first))
    assert state.of(SCRAM_SHA_512) == first
    state = SCRAM_CREDENTIALS.evolve(state, UserScramCredentialsAltered((), (("alice", SCRAM_SHA_256),)), "alice")
    assert state == UserCredentials("alice", (first,))
    assert SCRAM_CREDENTIALS.evolve(state, UserScramCredentialsAltered((), (("alice", SCRAM_SHA_512),)),
                                    "alice") is None


def test_describe_as_kafka_answers() -> None:
    stored = held(("alice", SCRAM_SHA_256), ("bob", SCRAM_SHA_512), ("ivy", SCRAM_SHA_256)).values()
    every = [(user.user, user.error_code, user.message, user.mechanisms) for user in describe(None, stored)]
    assert every == [("bob", 0, "", ((2, 4096),)), ("alice", 0, "", ((1, 4096),)), ("ivy", 0, "", ((1, 4096),))]
    assert describe([], stored) == describe(None, stored)
    named = describe(["alice", "bob", "bob", "nobody", "ivy", "r"], stored)
    assert [(user.user, user.error_code, user.message) for user in named] == [
        ("r", RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: r"),
        ("bob", DUPLICATE_RESOURCE, "Cannot describe SCRAM credentials for the same user twice in a single request: "
                                    "bob"),
        ("alice", 0, ""), ("nobody", RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: "
                                                         "nobody"),
        ("ivy", 0, "")]


JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="a" ' \
       'user_alice="alice-secret" user_bob="b\\"q" user_carol=plain;'


def test_plain_users_are_read_from_kafkas_jaas_line() -> None:
    assert plain_users(JAAS) == {"alice": "alice-secret", "bob": 'b"q', "carol": "plain"}
    assert plain_users("  ") == {}


@pytest.mark.parametrize("line", [
    'org.apache.kafka.common.security.scram.ScramLoginModule required user_a="b";',
    'org.apache.kafka.common.security.plain.PlainLoginModule user_a="b";',
    'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b"',
    'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b"; extra',
])
def test_a_jaas_line_that_is_not_one_plain_login_module_is_refused(line: str) -> None:
    with pytest.raises(InvalidConfig):
        plain_users(line)


USERS = {"alice": "alice-secret"}


@pytest.mark.parametrize(("token", "message"), [
    (b"\0alice\0nope", "Authentication failed: Invalid username or password"),
    (b"\0nobody\0alice-secret", "Authentication failed: Invalid username or password"),
    (b"alice\0x", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    (b"\0alice\0alice-secret\0x", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    (b"\0\0x", "Authentication failed: username not specified"),
    (b"\0alice\0", "Authentication failed: password not specified"),
    (b"bob\0alice\0alice-secret",
     "Authentication failed: Client requested an authorization id that is different from username"),
])
def test_plain_refusals_in_kafkas_words(token: bytes, message: str) -> None:
    with pytest.raises(SaslFailed) as refused:
        plain_principal(token, USERS)
    assert refused.value.message == message


def test_plain_accepts_the_user_with_or_without_its_own_authorization_id() -> None:
    assert plain_principal(b"\0alice\0alice-secret", USERS) == "alice"
    assert plain_principal(b"alice\0alice\0alice-secret", USERS) == "alice"
