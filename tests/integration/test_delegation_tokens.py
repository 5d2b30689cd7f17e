"""Delegation tokens (KIP-48: CreateDelegationToken 38, RenewDelegationToken 39, ExpireDelegationToken 40,
DescribeDelegationToken 41) and SCRAM authentication with a token (``tokenauth=true``), over the wire.

Differential: under ``--against kafka`` the same tests run on Apache Kafka 4.4 with the same secret key and a sweep
every second (`sasl_listeners.TOKENS`); the answers written here are Kafka 4.4's. Answers are read by hand
(`_Reader`): a refusal carries timestamps of -1, which kio's reader will not take. The manual-clock test is
logwright's own: a token expires, and is swept, when the broker clock says so.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import hmac
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.create_delegation_token.v3 import request as create_v3
from kio.schema.describe_delegation_token.v3 import request as describe_v3
from kio.schema.expire_delegation_token.v2 import request as expire_v2
from kio.schema.metadata.v12 import request as metadata_v12
from kio.schema.renew_delegation_token.v2 import request as renew_v2
from kio.schema.sasl_authenticate.v2 import request as authenticate_v2
from kio.schema.sasl_handshake.v1 import request as handshake_v1
from logwright.client.connection import Connection, ConnectionClosed
from logwright.compat.registry import make
from logwright.compat.wire.messages import encode_request
from logwright.testing.clients import advance_clock

from .conftest import sasl_logwright
from .sasl_listeners import NONE, SASL_AUTHENTICATION_FAILED, SCRAM_FAILED, Listeners, plain_login

pytestmark = pytest.mark.differential

NOT_FOUND, OWNER_MISMATCH, NOT_ALLOWED, EXPIRED, INVALID_PRINCIPAL_TYPE = 62, 63, 64, 66, 67
DAY_MS, WEEK_MS = 86_400_000, 604_800_000


class _Reader:
    """Kafka's flexible encodings, read by hand."""

    def __init__(self, payload: bytes) -> None:
        self.data, self.at = payload, 4  # after the correlation id
        self.tags()  # the response header's tagged fields

    def fixed(self, form: str) -> int:
        value: int = struct.unpack_from(form, self.data, self.at)[0]
        self.at += struct.calcsize(form)
        return value

    def varint(self) -> int:
        value = shift = 0
        while True:
            byte = self.data[self.at]
            self.at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    def text(self) -> str:
        size = self.varint() - 1
        value = self.data[self.at:self.at + size].decode()
        self.at += size
        return value

    def blob(self) -> bytes:
        size = self.varint() - 1
        value = self.data[self.at:self.at + size]
        self.at += size
        return value

    def tags(self) -> None:
        for _ in range(self.varint()):
            self.varint()
            self.at += self.varint()


def _created(reader: _Reader) -> dict[str, Any]:
    return {"error": reader.fixed(">h"), "owner": (reader.text(), reader.text()),
            "requester": (reader.text(), reader.text()), "issue": reader.fixed(">q"), "expiry": reader.fixed(">q"),
            "max": reader.fixed(">q"), "token_id": reader.text(), "hmac": reader.blob()}


def _renewed(reader: _Reader) -> dict[str, Any]:
    return {"error": reader.fixed(">h"), "expiry": reader.fixed(">q")}


def _described(reader: _Reader) -> dict[str, Any]:
    error, tokens = reader.fixed(">h"), []
    for _ in range(reader.varint() - 1):
        token = _created_token(reader)
        tokens.append(token)
    return {"error": error, "tokens": tokens}


def _created_token(reader: _Reader) -> dict[str, Any]:
    token: dict[str, Any] = {"owner": (reader.text(), reader.text()), "requester": (reader.text(), reader.text()),
                             "issue": reader.fixed(">q"), "expiry": reader.fixed(">q"), "max": reader.fixed(">q"),
                             "token_id": reader.text(), "hmac": reader.blob()}
    renewers = []
    for _ in range(reader.varint() - 1):
        renewers.append((reader.text(), reader.text()))
        reader.tags()
    reader.tags()
    token["renewers"] = renewers
    return token


PARSERS = {38: _created, 39: _renewed, 40: _renewed, 41: _described}


async def ask(connection: Connection, request: Any) -> dict[str, Any]:
    kind = type(request)
    correlation_id = next(connection._correlation)  # noqa: SLF001 - the answer is read by hand
    payload = await connection._exchange(  # noqa: SLF001
        correlation_id, encode_request(request, correlation_id, connection.client_id), kind.__api_key__,
        kind.__version__, 30.0)
    return PARSERS[kind.__api_key__](_Reader(payload))


def create(owner: tuple[str, str] | None = None, renewers: tuple[tuple[str, str], ...] = (),
           life_ms: int = -1) -> Any:
    return make(create_v3.CreateDelegationTokenRequest, owner_principal_type=owner[0] if owner else None,
                owner_principal_name=owner[1] if owner else None, renewers=tuple(
                    make(create_v3.CreatableRenewers, principal_type=kind, principal_name=name)
                    for kind, name in renewers), max_lifetime=datetime.timedelta(milliseconds=life_ms))


def renew(token_hmac: bytes, period_ms: int = -1) -> Any:
    return make(renew_v2.RenewDelegationTokenRequest, hmac=token_hmac,
                renew_period=datetime.timedelta(milliseconds=period_ms))


def expire(token_hmac: bytes, period_ms: int = -1) -> Any:
    return make(expire_v2.ExpireDelegationTokenRequest, hmac=token_hmac,
                expiry_time_period=datetime.timedelta(milliseconds=period_ms))


def describe(owners: list[tuple[str, str]] | None) -> Any:
    return make(describe_v3.DescribeDelegationTokenRequest, owners=None if owners is None else tuple(
        make(describe_v3.DescribeDelegationTokenOwner, principal_type=kind, principal_name=name)
        for kind, name in owners))


async def token_login(bootstrap: str, token_id: str, password: str, mechanism: str = "SCRAM-SHA-256") -> Any:
    """A SCRAM exchange with ``tokenauth=true`` (as Kafka's clients log in with a token): ``"ok"``, what the
    connection then gets creating a token and the session lifetime it was told; or where it failed."""
    digest = "sha256" if mechanism.endswith("256") else "sha512"
    connection = await Connection.open(bootstrap, "token-login")
    try:
        await connection.request(make(handshake_v1.SaslHandshakeRequest, mechanism=mechanism))
        bare = f"n={token_id},r=rOprNGfwEbeRWgbNEkqO,tokenauth=true"
        first = await connection.request(make(authenticate_v2.SaslAuthenticateRequest,
                                              auth_bytes=f"n,,{bare}".encode()))
        if int(first.error_code):
            return "first", int(first.error_code), first.error_message
        server_first = first.auth_bytes.decode()
        fields = dict(part.split("=", 1) for part in server_first.split(","))
        salted = hashlib.pbkdf2_hmac(digest, password.encode(), base64.b64decode(fields["s"]), int(fields["i"]))
        client_key = hmac.new(salted, b"Client Key", digest).digest()
        stored_key = hashlib.new(digest, client_key).digest()
        without_proof = f"c=biws,r={fields['r']}"
        signature = hmac.new(stored_key, f"{bare},{server_first},{without_proof}".encode(), digest).digest()
        proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
        final = await connection.request(make(authenticate_v2.SaslAuthenticateRequest,
                                              auth_bytes=f"{without_proof},p={proof}".encode()))
        if int(final.error_code):
            return "final", int(final.error_code), final.error_message
        await connection.request(make(metadata_v12.MetadataRequest, topics=(), allow_auto_topic_creation=False,
                                      include_topic_authorized_operations=False))
        lifetime = int(final.session_lifetime.total_seconds() * 1000)
        return "ok", (await ask(connection, create()))["error"], lifetime
    except ConnectionClosed:
        return "closed"
    finally:
        await connection.close()


async def described_once(connection: Connection, count: int) -> dict[str, Any]:
    """Every token, asked again until there are ``count`` (10 s at most): Kafka's broker sees a token its
    controller created a moment later (logwright's answer is durable)."""
    deadline = time.monotonic() + 10
    while len((answer := await ask(connection, describe(None)))["tokens"]) != count and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return answer


async def logged_in(bootstrap: str, token_id: str, password: str, mechanism: str) -> Any:
    """`token_login` until it succeeds (10 s at most), for the same reason."""
    deadline = time.monotonic() + 10
    while (answer := await token_login(bootstrap, token_id, password, mechanism))[0] != "ok" and (
            time.monotonic() < deadline):
        await asyncio.sleep(0.2)
    return answer


def _life(token: dict[str, Any]) -> tuple[int, int]:
    return token["expiry"] - token["issue"], token["max"] - token["issue"]


def test_token_requests_are_refused_on_the_plaintext_listener(listeners: Listeners) -> None:
    async def run() -> list[dict[str, Any]]:
        connection = await Connection.open(listeners.plaintext, "token-test")
        try:
            return [await ask(connection, request) for request in (create(), renew(b"x"), expire(b"x"),
                                                                  describe(None))]
        finally:
            await connection.close()

    created, renewed, expired, described = asyncio.run(run())
    assert created == {"error": NOT_ALLOWED, "owner": ("User", "ANONYMOUS"), "requester": ("User", "ANONYMOUS"),
                       "issue": -1, "expiry": -1, "max": -1, "token_id": "", "hmac": b""}
    assert renewed == expired == {"error": NOT_ALLOWED, "expiry": -1}
    assert described == {"error": NOT_ALLOWED, "tokens": []}


def test_tokens_are_created_described_renewed_and_expired_as_on_kafka(listeners: Listeners) -> None:
    async def run() -> None:
        alice, bob = await plain_login(listeners.sasl, "alice"), await plain_login(listeners.sasl, "bob")
        try:
            mine = await ask(alice, create())
            assert (mine["error"], mine["owner"], mine["requester"], _life(mine)) == (
                NONE, ("User", "alice"), ("User", "alice"), (DAY_MS, WEEK_MS))
            assert len(mine["token_id"]) == 22 and len(mine["hmac"]) == 64
            carols = await ask(alice, create(owner=("User", "carol"), renewers=(("User", "bob"),), life_ms=3_600_000))
            assert (carols["error"], carols["owner"], carols["requester"], _life(carols)) == (
                NONE, ("User", "carol"), ("User", "alice"), (3_600_000, 3_600_000))
            refused = await ask(alice, create(renewers=(("Group", "x"),)))
            assert (refused["error"], refused["issue"], refused["expiry"], refused["max"]) == (
                INVALID_PRINCIPAL_TYPE, -1, -1, -1)
            odd = await ask(alice, create(owner=("", "dan")))  # Kafka takes an owner of any type, even none
            assert (odd["error"], odd["owner"]) == (NONE, ("", "dan"))

            def listed(answer: dict[str, Any]) -> list[tuple[Any, ...]]:
                return sorted((token["token_id"], token["owner"], token["requester"], token["hmac"],
                               tuple(token["renewers"])) for token in answer["tokens"])

            every = listed(await described_once(alice, 3))
            assert every == sorted([
                (mine["token_id"], ("User", "alice"), ("User", "alice"), mine["hmac"], ()),
                (carols["token_id"], ("User", "carol"), ("User", "alice"), carols["hmac"], (("User", "bob"),)),
                (odd["token_id"], ("", "dan"), ("User", "alice"), odd["hmac"], ())])
            assert (await ask(bob, describe([]))) == {"error": NONE, "tokens": []}
            for owner in (("User", "bob"), ("User", "carol")):  # an owner or a renewer
                assert [token[0] for token in listed(await ask(alice, describe([owner])))] == [carols["token_id"]]

            renewed = await ask(alice, renew(mine["hmac"], 1_000))
            assert renewed["error"] == NONE and 0 < renewed["expiry"] - time.time() * 1000 <= 1_000
            renewed = await ask(alice, renew(mine["hmac"]))
            assert renewed["error"] == NONE and DAY_MS - 5_000 < renewed["expiry"] - time.time() * 1000 <= DAY_MS
            assert await ask(alice, renew(b"no such hmac")) == {"error": NOT_FOUND, "expiry": 0}
            assert await ask(alice, renew(carols["hmac"])) == {"error": OWNER_MISMATCH, "expiry": 0}
            assert (await ask(bob, renew(carols["hmac"], 5_000)))["error"] == NONE  # a renewer may
            assert await ask(bob, renew(mine["hmac"])) == {"error": OWNER_MISMATCH, "expiry": 0}
            assert await ask(bob, expire(mine["hmac"])) == {"error": OWNER_MISMATCH, "expiry": 0}

            assert await ask(alice, expire(odd["hmac"], -1)) == {"error": OWNER_MISMATCH, "expiry": 0}  # dan's
            short = await ask(alice, create())
            await described_once(alice, 4)
            asked_at = time.time() * 1000
            ended = await ask(alice, expire(short["hmac"], -1))  # removed now, answered with the time now
            assert ended["error"] == NONE and -100 <= ended["expiry"] - asked_at <= 5_000, (ended, asked_at)
            # Kafka's controller looks tokens up in the DelegationTokenCache its metadata publisher updates after the
            # commit: a renew right after the expiry found the token there once (CI, three workers) and was answered
            # NONE. Asked once the broker no longer lists it.
            await described_once(alice, 3)
            assert await ask(alice, renew(short["hmac"])) == {"error": NOT_FOUND, "expiry": 0}
            moved = await ask(alice, expire(mine["hmac"], 60_000))
            assert moved["error"] == NONE and 50_000 < moved["expiry"] - time.time() * 1000 <= 60_000
            for token in (mine, carols):
                await ask(alice, expire(token["hmac"], -1))
        finally:
            await alice.close()
            await bob.close()

    asyncio.run(run())


def test_a_client_authenticates_with_a_token_as_its_owner(listeners: Listeners) -> None:
    async def run() -> None:
        alice = await plain_login(listeners.sasl, "alice")
        try:
            token = await ask(alice, create())
            password = base64.b64encode(token["hmac"]).decode()
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                # authenticated, and a token-authenticated connection may not manage tokens
                login = await logged_in(listeners.sasl, token["token_id"], password, mechanism)
                # the session lasts as long as the token: about a day
                assert login[:2] == ("ok", NOT_ALLOWED) and DAY_MS - 60_000 < login[2] <= DAY_MS, login
            assert await token_login(listeners.sasl, token["token_id"], "AAAA") == (
                "final", SASL_AUTHENTICATION_FAILED, SCRAM_FAILED.format("SCRAM-SHA-256"))
            assert await token_login(listeners.sasl, "no-such-token", password) == (
                "first", SASL_AUTHENTICATION_FAILED, SCRAM_FAILED.format("SCRAM-SHA-256"))
            # an expired token no longer authenticates, and is swept (every second here)
            assert (await ask(alice, expire(token["hmac"], 500)))["error"] == NONE
            await asyncio.sleep(3.0)
            assert await token_login(listeners.sasl, token["token_id"], password) == (
                "first", SASL_AUTHENTICATION_FAILED, SCRAM_FAILED.format("SCRAM-SHA-256"))
            described = await ask(alice, describe(None))
            assert token["token_id"] not in [found["token_id"] for found in described["tokens"]]
            assert await ask(alice, renew(token["hmac"])) == {"error": NOT_FOUND, "expiry": 0}
        finally:
            await alice.close()

    asyncio.run(run())


@pytest.fixture
def clock_listeners(tmp_path: Path) -> Iterator[Listeners]:
    # the failed-authentication delay runs on the broker clock, which waits here: none
    yield from sasl_logwright(tmp_path, {"delegation.token.expiry.check.interval.ms": "60000",
                                         "connection.failed.authentication.delay.ms": "0"}, "--manual-clock")


@pytest.mark.logwright_only(reason="a manual clock")
def test_a_token_expires_and_is_swept_on_the_broker_clock(clock_listeners: Listeners) -> None:
    """Renewed for 10 s of broker time: it authenticates until the clock passes its expiry (at it, a session
    already over), is refused after
    (DELEGATION_TOKEN_EXPIRED while not yet swept), and the sweep, due a minute after the start, removes it."""

    async def run(step: str, token: dict[str, Any] | None = None) -> Any:
        alice = await plain_login(clock_listeners.sasl, "alice")
        try:
            if step == "create":
                created = await ask(alice, create())
                assert (await ask(alice, renew(created["hmac"], 10_000)))["error"] == NONE
                return created
            assert token is not None
            password = base64.b64encode(token["hmac"]).decode()
            login = await token_login(clock_listeners.sasl, token["token_id"], password)
            login = login[:2] if login[0] == "ok" else login  # its session lifetime aside
            renewed = await ask(alice, renew(token["hmac"])) if step == "renew" else None
            return login, renewed, len((await ask(alice, describe(None)))["tokens"])
        finally:
            await alice.close()

    refused = ("first", SASL_AUTHENTICATION_FAILED, SCRAM_FAILED.format("SCRAM-SHA-256"))
    token = asyncio.run(run("create"))
    advance_clock(clock_listeners.plaintext, 10_000)  # at its expiry, not past it: it authenticates a session of
    # 0 ms, over at once (Kafka's nanosecond expiry), so the next request on it closes the connection
    assert asyncio.run(run("login", token)) == ("closed", None, 1)
    advance_clock(clock_listeners.plaintext, 1)
    assert asyncio.run(run("renew", token)) == (refused, {"error": EXPIRED, "expiry": 0}, 1)
    advance_clock(clock_listeners.plaintext, 50_000)  # past the sweep, a minute after the start
    assert asyncio.run(run("renew", token)) == (refused, {"error": NOT_FOUND, "expiry": 0}, 0)
