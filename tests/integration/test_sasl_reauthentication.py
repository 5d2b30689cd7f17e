"""SASL re-authentication (KIP-368) over the wire: sessions that expire after ``connections.max.reauth.ms`` (3 s on
the differential broker) or with the delegation token a client authenticated with, re-authentication on the same
connection, and the close of a connection whose session has passed.

Differential: the answers written here are the ones Apache Kafka 4.4 gave (``--against kafka``). The manual-clock
test is logwright's own: a session ends when the broker clock passes it, not a millisecond before.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.metadata.v12 import request as metadata_v12
from kio.schema.sasl_authenticate.v0 import request as authenticate_v0
from kio.schema.sasl_authenticate.v2 import request as authenticate_v2
from kio.schema.sasl_handshake.v1 import request as handshake_v1
from logwright.client.connection import Connection, ConnectionClosed
from logwright.compat.registry import make
from logwright.testing.clients import advance_clock

from .conftest import sasl_logwright
from .sasl_listeners import MECHANISMS, NONE, PLAIN_USERS, SASL_AUTHENTICATION_FAILED, Listeners, plain_login
from .test_delegation_tokens import NOT_ALLOWED, ask, create, expire, logged_in, token_login

pytestmark = pytest.mark.differential

METADATA = make(metadata_v12.MetadataRequest, topics=(), allow_auto_topic_creation=False,
                include_topic_authorized_operations=False)


async def plain(connection: Connection, user: str, password: str, version: int = 2) -> tuple[Any, ...]:
    """A PLAIN (re-)authentication: the handshake's code, then the answer's code, words and session lifetime."""
    handshake = await connection.request(make(handshake_v1.SaslHandshakeRequest, mechanism="PLAIN"))
    module = authenticate_v2 if version == 2 else authenticate_v0
    answer = await connection.request(make(module.SaslAuthenticateRequest,
                                           auth_bytes=f"\0{user}\0{password}".encode()))
    lifetime = getattr(answer, "session_lifetime", None)
    return (int(handshake.error_code), int(answer.error_code), answer.error_message,
            None if lifetime is None else int(lifetime.total_seconds() * 1000))


async def metadata(connection: Connection) -> str:
    try:
        await connection.request(METADATA, timeout_s=10)
        return "answered"
    except ConnectionClosed:
        return "closed"


def scenario(bootstrap: str, steps: list[tuple[str, Any]]) -> list[Any]:
    """Run ``steps`` on one connection: ("plain", (user, password[, version])), ("sleep", seconds),
    ("metadata", None); the answers of the steps that have one."""

    async def run() -> list[Any]:
        connection = await Connection.open(bootstrap, "reauth")
        answers: list[Any] = []
        try:
            for step, argument in steps:
                if step == "plain":
                    answers.append(await plain(connection, *argument))
                elif step == "sleep":
                    await asyncio.sleep(argument)
                else:
                    answers.append(await metadata(connection))
        except ConnectionClosed:
            answers.append("closed")
        finally:
            await connection.close()
        return answers

    return asyncio.run(run())


ALICE, BOB = ("alice", PLAIN_USERS["alice"]), ("bob", PLAIN_USERS["bob"])
OK = (NONE, NONE, "", 3000)


def test_a_session_is_told_its_lifetime_and_re_authenticates_on_its_connection(reauth_listeners: Listeners) -> None:
    sasl = reauth_listeners.sasl
    assert scenario(sasl, [("plain", ALICE), ("metadata", None), ("plain", ALICE), ("sleep", 1.2), ("plain", ALICE),
                           ("metadata", None)]) == [OK, "answered", OK, OK, "answered"]
    # past its session without re-authenticating: the next request closes the connection
    assert scenario(sasl, [("plain", ALICE), ("sleep", 3.5), ("metadata", None)]) == [OK, "closed"]
    # ... which a SaslHandshake does not: it re-authenticates
    assert scenario(sasl, [("plain", ALICE), ("sleep", 3.5), ("plain", ALICE), ("metadata", None)]) == [
        OK, OK, "answered"]
    # a client of SaslAuthenticate v0 is not told, and is closed on time all the same
    assert scenario(sasl, [("plain", (*ALICE, 0)), ("sleep", 3.5), ("metadata", None)]) == [
        (NONE, NONE, "", None), "closed"]


def test_a_re_authentication_keeps_its_principal_and_its_credentials(reauth_listeners: Listeners) -> None:
    sasl = reauth_listeners.sasl
    assert scenario(sasl, [("plain", ALICE), ("sleep", 1.2), ("plain", BOB), ("metadata", None)]) == [
        OK, (NONE, SASL_AUTHENTICATION_FAILED,
             "Cannot change principals during re-authentication from User.alice: User.bob", 0), "closed"]
    assert scenario(sasl, [("plain", ALICE), ("sleep", 1.2), ("plain", ("alice", "nope")), ("metadata", None)]) == [
        OK, (NONE, SASL_AUTHENTICATION_FAILED, "Authentication failed: Invalid username or password", 0), "closed"]

    async def other_mechanism() -> list[Any]:
        connection = await Connection.open(sasl, "reauth")
        try:
            first = await plain(connection, *ALICE)
            await asyncio.sleep(1.2)
            handshake = await connection.request(make(handshake_v1.SaslHandshakeRequest, mechanism="SCRAM-SHA-256"))
            try:
                await connection.request(make(authenticate_v2.SaslAuthenticateRequest, auth_bytes=b"n,,n=alice,r=x"))
                closed = False
            except ConnectionClosed:
                closed = True
            return [first, (int(handshake.error_code), handshake.mechanisms), closed]
        finally:
            await connection.close()

    # another mechanism: the handshake is answered, its first token closes the connection unanswered
    assert asyncio.run(other_mechanism()) == [OK, (NONE, MECHANISMS), True]


def test_a_token_session_lasts_no_longer_than_its_token(reauth_listeners: Listeners) -> None:
    """A token expiring in 10 s, a broker limit of 3 s: the session is told 3 s; one expiring in 2 s: what is
    left of the 2 s."""

    async def run() -> list[Any]:
        alice = await plain_login(reauth_listeners.sasl, "alice")
        lifetimes = []
        try:
            for expires_in in (10_000, 2_000):
                token = await ask(alice, create())
                password = base64.b64encode(token["hmac"]).decode()
                assert (await logged_in(reauth_listeners.sasl, token["token_id"], password, "SCRAM-SHA-256"))[0] == "ok"
                assert (await ask(alice, expire(token["hmac"], expires_in)))["error"] == NONE
                login: Any = None
                for _ in range(50):  # Kafka's broker sees the new expiry a moment after its controller
                    login = await token_login(reauth_listeners.sasl, token["token_id"], password)
                    if login[0] == "ok" and login[2] < 3_000 or expires_in > 3_000:
                        break
                    await asyncio.sleep(0.1)
                lifetimes.append(login[2])
        finally:
            await alice.close()
        return lifetimes

    three_seconds, what_is_left = asyncio.run(run())
    assert three_seconds == 3_000
    assert 0 < what_is_left < 2_000


@pytest.fixture
def clock_listeners(tmp_path: Path) -> Iterator[Listeners]:
    yield from sasl_logwright(tmp_path, {"connections.max.reauth.ms": "10000"}, "--manual-clock")


@pytest.mark.logwright_only(reason="a manual clock")
def test_a_session_ends_on_the_broker_clock(clock_listeners: Listeners) -> None:
    """10 s of broker time: served at 10 s exactly, closed at 10 s and 1 ms; a token's session is the token's
    remaining life when that is shorter."""

    async def run() -> list[Any]:
        connection = await Connection.open(clock_listeners.sasl, "reauth")
        answers: list[Any] = []
        try:
            answers.append(await plain(connection, *ALICE))
            await asyncio.to_thread(advance_clock, clock_listeners.plaintext, 10_000)
            answers.append(await metadata(connection))
            await asyncio.to_thread(advance_clock, clock_listeners.plaintext, 1)
            answers.append(await metadata(connection))
        finally:
            await connection.close()
        alice = await plain_login(clock_listeners.sasl, "alice")
        try:
            token = await ask(alice, create())
            assert (await ask(alice, expire(token["hmac"], 4_000)))["error"] == NONE
            password = base64.b64encode(token["hmac"]).decode()
            answers.append(await token_login(clock_listeners.sasl, token["token_id"], password))
        finally:
            await alice.close()
        return answers

    assert asyncio.run(run()) == [(NONE, NONE, "", 10_000), "answered", "closed", ("ok", NOT_ALLOWED, 4_000)]
