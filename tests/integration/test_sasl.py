"""SASL authentication (SaslHandshake 17, SaslAuthenticate 36) on a SASL_PLAINTEXT listener, and the SCRAM
credentials it checks (DescribeUserScramCredentials 50, AlterUserScramCredentials 51), over the wire.

Differential: under ``--against kafka`` the same tests run on Apache Kafka 4.4 started with a SASL_PLAINTEXT
listener (PLAIN users from its JAAS line, SCRAM-SHA-256/512 from the credentials stored); the answers written here
are the ones Kafka 4.4 gave. One broker serves the module: the credential test runs first and leaves no user.
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.alter_client_quotas.v1 import request as alter_quotas_v1
from kio.schema.alter_user_scram_credentials.v0 import request as alter_v0
from kio.schema.api_versions.v3 import request as api_versions_v3
from kio.schema.describe_user_scram_credentials.v0 import request as describe_v0
from kio.schema.produce.v9 import request as produce_v9
from logwright.client.connection import Connection, ConnectionClosed
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record
from logwright.testing.clients import one_request
from scramp import ScramClient

from .sasl_listeners import (
    ILLEGAL_SASL_STATE,
    MECHANISMS,
    METADATA,
    NONE,
    SASL_AUTHENTICATION_FAILED,
    SCRAM_FAILED,
    UNSUPPORTED_SASL_MECHANISM,
    Listeners,
    authenticate,
    exchange,
    handshake,
    short,
)

pytestmark = pytest.mark.differential

def upsertion(name: str, mechanism: int, iterations: int, salted: bytes = b"pw") -> Any:
    return make(alter_v0.ScramCredentialUpsertion, name=name, mechanism=mechanism, iterations=iterations,
                salt=b"salt", salted_password=salted)


def alter(bootstrap: str, deletions: list[tuple[str, int]], upsertions: list[Any]) -> list[tuple[str, int, str | None]]:
    answer = one_request(bootstrap, make(alter_v0.AlterUserScramCredentialsRequest, deletions=tuple(
        make(alter_v0.ScramCredentialDeletion, name=name, mechanism=mechanism) for name, mechanism in deletions),
        upsertions=tuple(upsertions)))
    return [(result.user, int(result.error_code), result.error_message) for result in answer.results]


def describe(bootstrap: str, users: list[str] | None) -> Any:
    answer = one_request(bootstrap, make(describe_v0.DescribeUserScramCredentialsRequest, users=None if users is None
                                         else tuple(make(describe_v0.UserName, name=user) for user in users)))
    return int(answer.error_code), answer.error_message, [
        (result.user, int(result.error_code), result.error_message,
         sorted((int(info.mechanism), int(info.iterations)) for info in result.credential_infos))
        for result in answer.results]


def described(bootstrap: str, users: list[str] | None, expected: Any) -> Any:
    """`describe` until it answers ``expected`` (10 s at most): Kafka's broker sees an alteration a moment after
    its controller answered it."""
    deadline = time.monotonic() + 10
    while (answer := describe(bootstrap, users)) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    return answer


TWICE = "A user credential cannot be altered twice in the same request"
MISSING = "Attempt to delete a user credential that does not exist"
UNKNOWN = "Unknown SCRAM mechanism"


def test_scram_credentials_are_altered_and_described_as_on_kafka(listeners: Listeners) -> None:
    bootstrap = listeners.plaintext
    assert alter(bootstrap, [], [upsertion("alice", 1, 4096), upsertion("bob", 2, 8192), upsertion("", 1, 4096),
                                 upsertion("carol", 3, 4096), upsertion("dave", 1, 4095), upsertion("erin", 1, 16385),
                                 upsertion("frank", 0, 5000), upsertion("gina", -1, 5000)]) == [
        ("bob", NONE, None), ("alice", NONE, None), ("", 93, "Username must not be empty"), ("frank", 33, UNKNOWN),
        ("carol", 33, UNKNOWN), ("dave", 93, "Too few iterations"), ("gina", 33, UNKNOWN),
        ("erin", 93, "Too many iterations")]
    every = (NONE, "", [("bob", NONE, "", [(2, 8192)]), ("alice", NONE, "", [(1, 4096)])])
    assert described(bootstrap, None, every) == every
    assert alter(bootstrap, [("alice", 1), ("zed", 1), ("bob", 1), ("", 1), ("x", 7)],
                 [upsertion("alice", 2, 5000), upsertion("hank", 1, 4096), upsertion("hank", 2, 4096),
                  upsertion("ivy", 1, 4096)]) == [
        ("ivy", NONE, None), ("", 93, "Username must not be empty"), ("bob", 91, MISSING), ("hank", 92, TWICE),
        ("zed", 91, MISSING), ("x", 33, UNKNOWN), ("alice", 92, TWICE)]
    assert alter(bootstrap, [("q", 1), ("q", 1), ("q", 1)],
                 [upsertion("q", 1, 4096), upsertion("r", 1, 4096), upsertion("r", 1, 4096)]) == [
        ("q", 91, MISSING), ("r", 92, TWICE)]
    named = (NONE, "", [
        ("r", 91, "Attempt to describe a user credential that does not exist: r", []),
        ("bob", 92, "Cannot describe SCRAM credentials for the same user twice in a single request: bob", []),
        ("alice", NONE, "", [(1, 4096)]),
        ("nobody", 91, "Attempt to describe a user credential that does not exist: nobody", []),
        ("ivy", NONE, "", [(1, 4096)])])
    assert described(bootstrap, ["alice", "bob", "bob", "nobody", "ivy", "r"], named) == named
    # an empty salted password cannot key Kafka's HMAC: UNKNOWN_SERVER_ERROR without words, the rest is made
    assert alter(bootstrap, [("bob", 2), ("ivy", 1), ("r", 1), ("alice", 1)],
                 [upsertion("s", 1, 16384), upsertion("t", 2, 4096, salted=b"")]) == [
        ("bob", NONE, None), ("alice", NONE, None), ("ivy", NONE, None), ("s", NONE, None), ("r", 91, MISSING),
        ("t", -1, None)]
    only_s = (NONE, "", [("s", NONE, "", [(1, 16384)])])
    assert described(bootstrap, [], only_s) == only_s
    assert alter(bootstrap, [("s", 1), ("t", 2)], []) == [("s", NONE, None), ("t", 91, MISSING)]
    assert described(bootstrap, None, (NONE, "", [])) == (NONE, "", [])


def test_plain_and_the_exchange_rules_as_on_kafka(listeners: Listeners) -> None:
    sasl = listeners.sasl
    port = int(sasl.rsplit(":", 1)[1])
    here = ("brokers", (("127.0.0.1", port),))
    versions = make(api_versions_v3.ApiVersionsRequest, client_software_name="probe", client_software_version="1")
    after = (ILLEGAL_SASL_STATE, "SaslAuthenticate request received after successful authentication", b"")
    assert exchange(sasl, [versions, handshake("PLAIN"), authenticate(b"\0alice\0alice-secret"), handshake("PLAIN"),
                           authenticate(b"x")]) == [
        (NONE,), (NONE, MECHANISMS), (NONE, "", b""), (ILLEGAL_SASL_STATE, ()), after, here]
    assert exchange(sasl, [handshake("PLAIN"), authenticate(b"alice\0alice\0alice-secret")]) == [
        (NONE, MECHANISMS), (NONE, "", b""), here]
    assert exchange(sasl, []) == ["closed"]  # Metadata before the handshake: closed unanswered
    assert exchange(sasl, [authenticate(b"\0alice\0alice-secret")]) == ["closed"]
    assert exchange(sasl, [handshake("GSSAPI")]) == [(UNSUPPORTED_SASL_MECHANISM, MECHANISMS), "closed"]
    # in the middle of the exchange: answered with the request's own error, then closed
    assert exchange(sasl, [handshake("PLAIN"), handshake("PLAIN")]) == [
        (NONE, MECHANISMS), (ILLEGAL_SASL_STATE, ()), "closed"]
    assert exchange(sasl, [handshake("PLAIN"), METADATA]) == [(NONE, MECHANISMS), ("brokers", ()), "closed"]
    for token, message in [
        (b"\0alice\0nope", "Authentication failed: Invalid username or password"),
        (b"alice\0x", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
        (b"\0alice\0alice-secret\0x", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
        (b"\0\0x", "Authentication failed: username not specified"),
        (b"\0alice\0", "Authentication failed: password not specified"),
        (b"bob\0alice\0alice-secret",
         "Authentication failed: Client requested an authorization id that is different from username"),
    ]:
        assert exchange(sasl, [handshake("PLAIN"), authenticate(token)]) == [
            (NONE, MECHANISMS), (SASL_AUTHENTICATION_FAILED, message, b""), "closed"], token
    assert exchange(sasl, [handshake("SCRAM-SHA-256"), authenticate(b"garbage")]) == [
        (NONE, MECHANISMS), (SASL_AUTHENTICATION_FAILED, SCRAM_FAILED.format("SCRAM-SHA-256"), b""), "closed"]
    # the PLAINTEXT listener has no exchange to be in
    assert exchange(listeners.plaintext, [handshake("PLAIN"), authenticate(b"\0alice\0alice-secret")])[:2] == [
        (ILLEGAL_SASL_STATE, ()), after]


def scram_exchange(bootstrap: str, mechanism: str, user: str, password: str) -> list[Any]:
    """A SCRAM exchange by scramp's client: each answer's code and words, then whether Metadata is answered."""

    async def run() -> list[Any]:
        connection = await Connection.open(bootstrap, "scram-probe")
        client = ScramClient([mechanism], user, password)
        answers: list[Any] = []
        try:
            answers.append(short(await connection.request(handshake(mechanism))))
            first = await connection.request(authenticate(client.get_client_first().encode()))
            answers.append((int(first.error_code), first.error_message))
            if int(first.error_code) == NONE:
                client.set_server_first(first.auth_bytes.decode())
                final = await connection.request(authenticate(client.get_client_final().encode()))
                answers.append((int(final.error_code), final.error_message))
                if int(final.error_code) == NONE:
                    client.set_server_final(final.auth_bytes.decode())  # raises unless the server proved its key
            answers.append(short(await connection.request(METADATA, timeout_s=10))[0])
        except ConnectionClosed:
            answers.append("closed")
        finally:
            await connection.close()
        return answers

    return asyncio.run(run())


def test_scram_exchanges_as_on_kafka(listeners: Listeners) -> None:
    user = f"scram-{uuid.uuid4().hex[:6]}"
    assert alter(listeners.plaintext, [], [_salted(user, 1, "pw-256", 4096)]) == [(user, NONE, None)]
    expected = (NONE, "", [(user, NONE, "", [(1, 4096)])])
    assert described(listeners.plaintext, [user], expected) == expected
    sasl = listeners.sasl
    assert scram_exchange(sasl, "SCRAM-SHA-256", user, "pw-256") == [(NONE, MECHANISMS), (NONE, ""), (NONE, ""),
                                                                      "brokers"]
    assert scram_exchange(sasl, "SCRAM-SHA-256", user, "wrong") == [
        (NONE, MECHANISMS), (NONE, ""), (SASL_AUTHENTICATION_FAILED, SCRAM_FAILED.format("SCRAM-SHA-256")), "closed"]
    for mechanism, name in (("SCRAM-SHA-512", user), ("SCRAM-SHA-256", "nobody")):  # no such credential
        assert scram_exchange(sasl, mechanism, name, "pw-256") == [
            (NONE, MECHANISMS), (SASL_AUTHENTICATION_FAILED, SCRAM_FAILED.format(mechanism)), "closed"]
    assert alter(listeners.plaintext, [(user, 1)], []) == [(user, NONE, None)]


def _salted(user: str, mechanism: int, password: str, iterations: int) -> Any:
    """An upsertion as Kafka's Admin client makes it: the password salted on the client side (PBKDF2)."""
    import hashlib  # noqa: PLC0415

    salt = uuid.uuid4().bytes
    salted = hashlib.pbkdf2_hmac("sha256" if mechanism == 1 else "sha512", password.encode(), salt, iterations)
    return make(alter_v0.ScramCredentialUpsertion, name=user, mechanism=mechanism, iterations=iterations, salt=salt,
                salted_password=salted)


def test_clients_produce_and_consume_through_plain_and_scram(listeners: Listeners) -> None:
    """librdkafka through the SASL listener with each mechanism: Metadata sends it back to that listener."""
    admin = AdminClient({"bootstrap.servers": listeners.plaintext})
    user = f"client-{uuid.uuid4().hex[:6]}"
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion  # noqa: PLC0415

    for mechanism, iterations in ((ScramMechanism.SCRAM_SHA_256, 4096), (ScramMechanism.SCRAM_SHA_512, 8192)):
        # one request each: a user named twice in one is refused whole (DUPLICATE_RESOURCE), on Kafka as here
        for future in admin.alter_user_scram_credentials([
                UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, iterations), b"pw")]).values():
            assert future.result(30) is None
    topic = f"sasl-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    logins = [("PLAIN", "alice", "alice-secret"), ("SCRAM-SHA-256", user, "pw"), ("SCRAM-SHA-512", user, "pw")]
    deadline = time.monotonic() + 10
    for mechanism, name, password in logins:
        conf = {"bootstrap.servers": listeners.sasl, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": mechanism, "sasl.username": name, "sasl.password": password}
        while (errors := _produce_one(conf, topic, mechanism.encode())) != [None] and time.monotonic() < deadline:
            pass  # Kafka's broker sees a new credential a moment after its controller stored it
        assert errors == [None], (mechanism, errors)
    consumer = Consumer({"bootstrap.servers": listeners.sasl, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user, "sasl.password": "pw",
                         "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < 3 and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    assert values == [b"PLAIN", b"SCRAM-SHA-256", b"SCRAM-SHA-512"]
    failures = _produce_one({"bootstrap.servers": listeners.sasl, "security.protocol": "SASL_PLAINTEXT",
                             "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": user, "sasl.password": "nope"},
                            topic, b"never")
    assert len(failures) == 1 and failures[0] is not None


def _produce_one(conf: dict[str, Any], topic: str, value: bytes) -> list[Any]:
    """The delivery error of one record (None: delivered), within 5 s."""
    producer = Producer({**conf, "message.timeout.ms": 5000})
    errors: list[Any] = []
    producer.produce(topic, value, on_delivery=lambda error, _: errors.append(error))
    producer.flush(10)
    return errors


def test_a_user_quota_throttles_the_user_who_authenticated(listeners: Listeners) -> None:
    """producer_byte_rate 50,000 B/s on user alice: alice over SASL is throttled on the eleventh ~49 KB request
    (as in test_client_quotas), an anonymous client of the PLAINTEXT listener with the same client id is not."""
    client_id = f"sasl-quota-{uuid.uuid4().hex[:6]}"
    topic = f"sasl-quota-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": listeners.plaintext})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    _user_quota("alice", 50_000.0, listeners.plaintext)
    try:
        time.sleep(1.0)  # Kafka's broker applies a quota a moment after its controller stored it
        assert _throttles(listeners.plaintext, client_id, topic, None) == [0] * 11
        throttled = _throttles(listeners.sasl, client_id, topic, ("alice", "alice-secret"))
    finally:
        _user_quota("alice", None, listeners.plaintext)
    assert throttled[:10] == [0] * 10 and 500 <= throttled[10] <= 1_500, throttled


def _user_quota(user: str, value: float | None, bootstrap: str) -> None:
    answer = one_request(bootstrap, make(alter_quotas_v1.AlterClientQuotasRequest, validate_only=False, entries=(
        make(alter_quotas_v1.EntryData, entity=(make(alter_quotas_v1.EntityData, entity_type="user",
                                                     entity_name=user),),
             ops=(make(alter_quotas_v1.OpData, key="producer_byte_rate", value=value or 0.0,
                       remove=value is None),)),)))
    assert [int(entry.error_code) for entry in answer.entries] == [NONE]


def _throttles(bootstrap: str, client_id: str, topic: str, login: tuple[str, str] | None) -> list[int]:
    batch = build_batch([Record(0, int(time.time() * 1000), None, b"x" * 49_000)])
    produce = make(produce_v9.ProduceRequest, transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=30),
                   topic_data=(make(produce_v9.TopicProduceData, name=topic, partition_data=(
                       make(produce_v9.PartitionProduceData, index=0, records=batch),)),))

    async def run() -> list[int]:
        connection = await Connection.open(bootstrap, client_id)
        try:
            if login is not None:
                assert int((await connection.request(handshake("PLAIN"))).error_code) == NONE
                token = f"\0{login[0]}\0{login[1]}".encode()
                assert int((await connection.request(authenticate(token))).error_code) == NONE
            throttles = []
            for _ in range(11):
                answer = await connection.request(produce)
                assert int(answer.responses[0].partition_responses[0].error_code) == NONE
                throttles.append(int(answer.throttle_time.total_seconds() * 1000))
            return throttles
        finally:
            await connection.close()

    return asyncio.run(run())


def test_hostile_tokens_and_frames_before_authentication_hurt_nobody(listeners: Listeners) -> None:
    """Random tokens for every mechanism are refused (answered SASL_AUTHENTICATION_FAILED, or the connection
    closed), a frame over ``sasl.server.max.receive.size`` (512 KiB) before authentication closes its connection
    unanswered, and the broker serves the next client as before."""
    import random  # noqa: PLC0415

    chance = random.Random(68)
    for _ in range(40):
        mechanism = chance.choice(MECHANISMS)
        token = chance.randbytes(chance.choice((0, 1, 7, 64, 300, 5000)))
        answers = exchange(listeners.sasl, [handshake(mechanism), authenticate(token)])
        assert answers[0] == (NONE, MECHANISMS)
        assert answers[1] == "closed" or (answers[1][0] == SASL_AUTHENTICATION_FAILED and answers[2] == "closed"), (
            mechanism, token, answers)

    async def oversized() -> bytes:
        host, port = listeners.sasl.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            size = 600_000
            writer.write(size.to_bytes(4, "big") + (36).to_bytes(2, "big") + bytes(size - 2))
            try:
                await writer.drain()
            except ConnectionError:
                return b""
            try:
                return await asyncio.wait_for(reader.read(), 10)
            except ConnectionError:  # closed with the frame's rest unread: a reset
                return b""
        finally:
            writer.close()

    assert asyncio.run(oversized()) == b""
    assert exchange(listeners.sasl, [handshake("PLAIN"), authenticate(b"\0alice\0alice-secret")])[1:] == [
        (NONE, "", b""), ("brokers", (("127.0.0.1", int(listeners.sasl.rsplit(":", 1)[1])),))]
