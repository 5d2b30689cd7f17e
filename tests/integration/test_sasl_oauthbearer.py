"""SASL/OAUTHBEARER with Kafka's default, unsecured validator, over the wire.

Differential: under ``--against kafka`` the same tests run on Apache Kafka 4.4 started with the same JAAS line
(`sasl_listeners.OAUTHBEARER`: the scope items ``kafka`` and ``produce`` required, two seconds of clock skew); the
answers written here are the ones Kafka 4.4 gave, its quirks included (an ``auth`` scheme other than Bearer, or a
header without ``alg``, closes the connection unanswered).
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from logwright.client.connection import Connection, ConnectionClosed

from .sasl_listeners import (
    METADATA,
    NONE,
    SASL_AUTHENTICATION_FAILED,
    SCRAM_FAILED,
    Listeners,
    authenticate,
    exchange,
    handshake,
    short,
)
from .test_delegation_tokens import ask, create, describe, described_once, renew

pytestmark = pytest.mark.differential

MECHANISMS = ("PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256", "OAUTHBEARER")
"""As both brokers list the four enabled (the order of Kafka's HashSet)."""
INVALID = '{"status":"invalid_token"}'
INSUFFICIENT = '{"status":"insufficient_scope", "scope":"[kafka, produce]"}'
UNREADABLE = SCRAM_FAILED.format("OAUTHBEARER")
SCOPE = ["kafka", "produce"]


def encoded(part: Any) -> str:
    text = part if isinstance(part, str) else json.dumps(part)
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


def jws(claims: Any, header: Any = None, signature: str = "") -> str:
    """An unsecured JWS of ``claims`` (a dict, or JSON text as given)."""
    return f"{encoded({'alg': 'none'} if header is None else header)}.{encoded(claims)}.{signature}"


def claims(**more: Any) -> dict[str, Any]:
    """A valid token's claims for alice, an hour long, with ``more`` changed (None: left out)."""
    now = int(time.time())
    every = {"sub": "alice", "iat": now, "exp": now + 3600, "scope": SCOPE, **more}
    return {name: value for name, value in every.items() if value is not None}


def first(token: str, authzid: str = "", extensions: str = "", scheme: str = "Bearer") -> bytes:
    """A client's first message (RFC 7628) carrying ``token``."""
    return f"n,{'a=' + authzid if authzid else ''},\x01auth={scheme} {token}\x01{extensions}\x01".encode()


def oauthbearer(bootstrap: str, *messages: bytes) -> list[Any]:
    return exchange(bootstrap, [handshake("OAUTHBEARER"), *(authenticate(message) for message in messages)])


ACCEPTED = (NONE, "", b"")
HERE = "brokers"


def test_a_valid_unsecured_token_authenticates(oauthbearer_listeners: Listeners) -> None:
    sasl = oauthbearer_listeners.sasl
    for token_claims, message_options in [
        (claims(), {}),
        (claims(scope=["produce", " kafka ", "", "more"]), {}),
        (claims(iat=None), {"authzid": "alice"}),
        (claims(exp=time.time() + 60.5), {"extensions": "traceId=a b=c\x01other=x\x01"}),
        (claims(email="alice@example.com", admin=True, nested={"a": [1]}), {}),  # other claims: whatever they are
        (claims(iat=int(time.time()) + 1), {}),  # within the allowed skew
    ]:
        answers = oauthbearer(sasl, first(jws(token_claims), **message_options))
        assert answers[:2] == [(NONE, MECHANISMS), ACCEPTED], (token_claims, message_options)
        assert answers[2][0] == HERE, token_claims
    # Jackson's reading: a null claim is the text "null", text after the JSON value is ignored
    for text in [with_claims('{"sub": null, %s}'), with_claims('{"sub": "alice", %s} trailing')]:
        answers = oauthbearer(sasl, first(jws(text)))
        assert answers[1:2] == [ACCEPTED], text


def refusal(challenge: str) -> list[Any]:
    return [(NONE, MECHANISMS), (NONE, "", challenge.encode()), (SASL_AUTHENTICATION_FAILED, challenge, b""),
            "closed"]


def test_a_refused_token_is_answered_with_the_error_challenge_then_refused(
        oauthbearer_listeners: Listeners) -> None:
    sasl = oauthbearer_listeners.sasl
    now = time.time()
    refused = {
        "expired": jws(claims(exp=int(now) - 5)),
        "no exp": jws(claims(exp=None)),
        "exp as text": jws(claims(exp="soon")),
        "no sub": jws(claims(sub=None)),
        "blank sub": jws(claims(sub="  ")),
        "sub a list": jws(claims(sub=["alice"])),
        "issued later": jws(claims(iat=int(now) + 60)),
        "exp before iat": jws(claims(iat=int(now) + 1, exp=int(now))),
        "a signed algorithm": jws(claims(), header={"alg": "HS256"}),
        "a signature": jws(claims(), signature="c2ln"),
        "two dots": jws(claims()).replace(".", "..", 1),
        "two sections": jws(claims()).rsplit(".", 2)[0],
        "basic Base64": jws(claims()).replace(".", ".+", 1),
        "not JSON": f"{encoded({'alg': 'none'})}.{encoded('not json')}.",
        "scope a number": jws(claims(scope=5)),
    }
    for name, token in refused.items():
        assert oauthbearer(sasl, first(token), b"\x01") == refusal(INVALID), name
    for scope in ["kafka produce", ["kafka"], None, ["KAFKA", "PRODUCE"]]:
        assert oauthbearer(sasl, first(jws(claims(scope=scope))), b"\x01") == refusal(INSUFFICIENT), scope
    # after a challenge the client may try again with another token instead of giving up
    answers = oauthbearer(sasl, first(jws(claims(exp=int(now) - 5))), first(jws(claims())))
    assert answers == [(NONE, MECHANISMS), (NONE, "", INVALID.encode()), ACCEPTED, answers[3]]
    assert answers[3][0] == HERE


def test_unreadable_messages_fail_and_kafkas_own_stumbles_close(oauthbearer_listeners: Listeners) -> None:
    sasl = oauthbearer_listeners.sasl
    good = jws(claims())
    for message in [b"garbage", b"\x01", first(good).replace(b"auth=", b"auht="), first(""),
                    first(good)[:-1], first(good, authzid="ali,ce"), first(good, extensions="bad-key=x\x01"),
                    "n,,\x01auth=Bearer é\x01\x01".encode()]:
        assert oauthbearer(sasl, message) == [
            (NONE, MECHANISMS), (SASL_AUTHENTICATION_FAILED, UNREADABLE, b""), "closed"], message
    mismatch = ("Authentication failed: Client requested an authorization id (bob) that is different from the "
                "token's principal name (alice)")
    assert oauthbearer(sasl, first(good, authzid="bob")) == [
        (NONE, MECHANISMS), (SASL_AUTHENTICATION_FAILED, mismatch, b""), "closed"]
    # Kafka's server throws where it reads these (a scheme other than Bearer, a header without alg): it closes
    for message in [first(good, scheme="Basic"), first(jws(claims(), header={"typ": "JWT"}))]:
        assert oauthbearer(sasl, message) == [(NONE, MECHANISMS), "closed"], message


def session(bootstrap: str, tokens: list[str]) -> list[Any]:
    """Authenticate with the first token, then re-authenticate on the same connection with each next one: each
    answer's code, words and session lifetime (ms), then whether Metadata is answered."""

    async def run() -> list[Any]:
        connection = await Connection.open(bootstrap, "oauthbearer-session")
        answers: list[Any] = []
        try:
            for token in tokens:
                shake = await connection.request(handshake("OAUTHBEARER"))
                answer = await connection.request(authenticate(first(token)))
                answers.append((int(shake.error_code), int(answer.error_code), answer.error_message,
                                int(answer.session_lifetime.total_seconds() * 1000)))
            answers.append(short(await connection.request(METADATA, timeout_s=10))[0])
        except ConnectionClosed:
            answers.append("closed")
        finally:
            await connection.close()
        return answers

    return asyncio.run(run())


def test_the_session_ends_with_the_token_and_re_authenticates_as_the_same_principal(
        oauthbearer_listeners: Listeners) -> None:
    sasl = oauthbearer_listeners.sasl
    exp = time.time() + 30
    answers = session(sasl, [jws(claims(exp=exp)), jws(claims(exp=exp + 100))])
    assert [answer[:3] for answer in answers[:2]] == [(NONE, NONE, ""), (NONE, NONE, "")]
    assert 25_000 < answers[0][3] <= 30_000 and 125_000 < answers[1][3] <= 130_000, answers
    assert answers[2] == HERE
    changed = "Cannot change principals during re-authentication from User.alice: User.bob"
    assert session(sasl, [jws(claims()), jws(claims(sub="bob"))])[1:] == [
        (NONE, SASL_AUTHENTICATION_FAILED, changed, 0), "closed"]


def test_librdkafka_produces_and_consumes_with_an_unsecured_token(oauthbearer_listeners: Listeners) -> None:
    topic = f"oauthbearer-{uuid.uuid4().hex[:8]}"
    settings = {"bootstrap.servers": oauthbearer_listeners.sasl, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanisms": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
                "sasl.oauthbearer.config": "principal=alice scope=kafka,produce lifeSeconds=600"}
    producer = Producer({**settings, "acks": "all"})
    producer.produce(topic, b"by token")
    assert producer.flush(30) == 0
    consumer = Consumer({**settings, "group.id": topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                assert message.value() == b"by token"
                break
        else:
            pytest.fail("nothing consumed")
    finally:
        consumer.close()
    # a token without the scope required: librdkafka reports the broker's refusal
    errors: list[KafkaError] = []
    refused = Producer({**settings, "sasl.oauthbearer.config": "principal=alice scope=kafka",
                        "error_cb": errors.append})
    refused.poll(5)
    deadline = time.monotonic() + 20
    while not any(error.code() == KafkaError._AUTHENTICATION for error in errors) and time.monotonic() < deadline:
        refused.poll(0.5)
    assert any(INSUFFICIENT in error.str() for error in errors), errors


def raw_jws(claims_json: bytes | str, header_json: bytes | str = b'{"alg":"none"}') -> str:
    """An unsecured JWS of JSON given as text or bytes (for what `jws` cannot write)."""
    def section(part: bytes | str) -> str:
        return base64.urlsafe_b64encode(part if isinstance(part, bytes) else part.encode()).rstrip(b"=").decode()

    return f"{section(header_json)}.{section(claims_json)}."


def with_claims(text: str) -> str:
    """A valid token's claims as JSON text with ``text`` in place of ``%s`` (an hour long, the scope required)."""
    return text.replace("%s", f'"exp": {int(time.time()) + 3600}, "scope": ["kafka", "produce"]')


READ_AS_KAFKA_READS = {
    # claims: Jackson's values as Kafka converts them
    "exp as a fraction": (lambda: jws(claims(exp=time.time() + 600.4)), "accepted"),
    "sub true is the text true": (lambda: jws(claims(sub=True)), "accepted"),
    "sub with a control character": (lambda: jws(claims(sub="\u0001alice")), "accepted"),
    "sub a number": (lambda: jws(claims(sub=5)), "invalid"),
    "sub an object": (lambda: jws(claims(sub={"a": 1})), "invalid"),
    "sub empty": (lambda: jws(claims(sub="")), "invalid"),
    "exp true": (lambda: jws(claims(exp=True)), "invalid"),
    "exp null": (lambda: jws(claims(exp=None) | {"exp": None}), "invalid"),
    "exp a number as text": (lambda: jws(claims(exp=str(int(time.time()) + 600))), "invalid"),
    "exp negative": (lambda: jws(claims(exp=-1)), "invalid"),
    "iat as text": (lambda: jws(claims(iat="x")), "invalid"),
    "iat null": (lambda: jws(claims() | {"iat": None}), "invalid"),
    "exp past what Kafka can time": (lambda: jws(claims(exp=10**30)), "closed"),
    "exp 1e400": (lambda: raw_jws(with_claims('{"sub": "a", "exp": 1e400, "scope": ["kafka", "produce"]}')),
                  "closed"),
    "scope items as text": (lambda: jws(claims(scope=[1, None, ["x"], "\u0001kafka\u0002", "produce"])),
                            "accepted"),
    "scope one text with a space": (lambda: jws(claims(scope="kafka produce")), "insufficient"),
    "scope an object": (lambda: jws(claims(scope={"kafka": 1})), "insufficient"),
    "scope true": (lambda: jws(claims(scope=True)), "insufficient"),
    # the header
    "alg None": (lambda: jws(claims(), header={"alg": "None"}), "invalid"),
    "alg null": (lambda: jws(claims(), header={"alg": None}), "invalid"),
    "alg a list": (lambda: jws(claims(), header={"alg": ["none"]}), "invalid"),
    "alg given twice, none last": (lambda: raw_jws(json.dumps(claims()), '{"alg":"HS256","alg":"none"}'),
                                   "accepted"),
    "header an array": (lambda: raw_jws(json.dumps(claims()), '["alg"]'), "closed"),
    "header empty": (lambda: raw_jws(json.dumps(claims()), ""), "closed"),
    # JSON as Jackson reads it
    "a byte order mark": (lambda: raw_jws(b"\xef\xbb\xbf" + json.dumps(claims()).encode()), "accepted"),
    "UTF-16": (lambda: raw_jws(json.dumps(claims()).encode("utf-16-le")), "accepted"),
    "a member given twice": (lambda: raw_jws(with_claims('{"sub": "bob", "sub": "alice", %s}')), "accepted"),
    "text after the object": (lambda: raw_jws(with_claims('{"sub": "alice", %s} }}} [')), "accepted"),
    "a lone surrogate": (lambda: raw_jws(with_claims('{"sub": "\\ud800", %s}')), "accepted"),
    "claims empty": (lambda: raw_jws(""), "invalid"),
    "claims an array": (lambda: raw_jws(f"[{json.dumps(claims())}]"), "invalid"),
    "NaN": (lambda: raw_jws('{"sub": "alice", "exp": NaN}'), "invalid"),
    "a comment": (lambda: raw_jws(with_claims('/* c */ {"sub": "alice", %s}')), "invalid"),
    "single quotes": (lambda: raw_jws("{'sub': 'alice'}"), "invalid"),
    "a trailing comma": (lambda: raw_jws(with_claims('{"sub": "alice", %s,}')), "invalid"),
    "a leading zero": (lambda: raw_jws(with_claims('{"sub": "alice", "n": 01, %s}')), "invalid"),
    "a number of 2,000 digits": (lambda: raw_jws(with_claims('{"sub": "alice", "n": ' + "9" * 2000 + ", %s}")),
                                 "invalid"),
    "nested 3,000 deep": (lambda: raw_jws(with_claims('{"sub": "alice", "d": ' + "[" * 3000 + "]" * 3000
                                                      + ", %s}")), "invalid"),
    "a raw control character": (lambda: raw_jws(with_claims('{"sub": "al\u0001ice", %s}')), "invalid"),
    "not UTF-8": (lambda: raw_jws(with_claims('{"sub": "al\u00e9ice", %s}').encode("latin-1")), "invalid"),
    # the compact serialization
    "Base64 with padding": (lambda: jws(claims()) + "=", "invalid"),
    "padding inside": (lambda: encoded({"alg": "none"}) + "." + base64.urlsafe_b64encode(
        json.dumps(claims()).encode()).decode() + ".", "unreadable"),
    "basic Base64's slash": (lambda: encoded({"alg": "none"}) + "/." + encoded(claims()) + ".", "invalid"),
    "a leading dot": (lambda: "." + jws(claims()), "invalid"),
    "four sections": (lambda: jws(claims()) + "x.y", "invalid"),
    "no last dot": (lambda: jws(claims())[:-1], "invalid"),
    "expiring as iat": (lambda: jws(claims(iat=int(time.time()) + 600, exp=int(time.time()) + 600)), "invalid"),
}
"""Tokens at the edges of Kafka's reading, and how Kafka 4.4 answered each."""


def test_tokens_are_read_as_kafka_reads_them(oauthbearer_listeners: Listeners) -> None:
    sasl = oauthbearer_listeners.sasl
    expected = {
        "accepted": [(NONE, MECHANISMS), ACCEPTED, (34, "SaslAuthenticate request received after successful "
                                                        "authentication", b""), HERE],
        "invalid": refusal(INVALID), "insufficient": refusal(INSUFFICIENT), "closed": [(NONE, MECHANISMS), "closed"],
        "unreadable": [(NONE, MECHANISMS), (SASL_AUTHENTICATION_FAILED, UNREADABLE, b""), "closed"],
    }
    answers = {name: oauthbearer(sasl, first(token()), b"\x01") for name, (token, _) in READ_AS_KAFKA_READS.items()}
    for answer in answers.values():
        if answer[-1] != "closed":
            answer[-1] = answer[-1][0]
    assert {name: answer for name, answer in answers.items()} == {
        name: expected[outcome] for name, (_, outcome) in READ_AS_KAFKA_READS.items()}



LONE = "al\udc7ace"
"""A principal naming half a UTF-16 surrogate pair (JSON's ``\\udc7a`` escape): Jackson keeps it in the string."""
WRITTEN = "al?ce"
"""That principal as Java's UTF-8 encoder writes it, wherever it goes on the wire or into Kafka's metadata log."""


def test_a_principal_with_half_a_surrogate_pair_is_written_as_java_writes_it(
        oauthbearer_listeners: Listeners) -> None:
    """Found by the hostile-SASL fuzz (seed 283): such a principal's refusal failed to encode on logwright. Kafka
    keeps the principal as it is for the session and writes it with ``?`` in messages; its controller, to which the
    broker forwards token requests with the principal serialized, creates and renews the token as the written
    name."""
    sasl = oauthbearer_listeners.sasl
    mismatch = ("Authentication failed: Client requested an authorization id (bob) that is different from the "
                f"token's principal name ({WRITTEN})")
    assert oauthbearer(sasl, first(jws(claims(sub=LONE)), authzid="bob")) == [
        (NONE, MECHANISMS), (SASL_AUTHENTICATION_FAILED, mismatch, b""), "closed"]
    for before, after in [("alice", LONE), (LONE, "alice")]:
        changed = ("Cannot change principals during re-authentication from "
                   f"User.{before.replace(LONE, WRITTEN)}: User.{after.replace(LONE, WRITTEN)}")
        assert session(sasl, [jws(claims(sub=before)), jws(claims(sub=after))])[1:] == [
            (NONE, SASL_AUTHENTICATION_FAILED, changed, 0), "closed"]

    async def tokens() -> list[Any]:
        connection = await Connection.open(sasl, "lone-surrogate")
        try:
            await connection.request(handshake("OAUTHBEARER"))
            answer = await connection.request(authenticate(first(jws(claims(sub=LONE)))))
            assert int(answer.error_code) == NONE, answer
            created = await ask(connection, create())
            described = await described_once(connection, 1)
            return [created, described, await ask(connection, describe([("User", WRITTEN)])),
                    await ask(connection, renew(created["hmac"])),
                    short(await connection.request(METADATA, timeout_s=10))[0]]
        finally:
            await connection.close()

    created, described, by_owner, renewed, metadata = asyncio.run(tokens())
    assert (created["error"], created["owner"], created["requester"]) == (NONE, ("User", WRITTEN), ("User", WRITTEN))
    assert [(token["token_id"], token["owner"], token["requester"]) for token in described["tokens"]] == [
        (created["token_id"], ("User", WRITTEN), ("User", WRITTEN))]
    assert by_owner == described
    assert renewed["error"] == NONE
    assert metadata == HERE
