"""SaslHandshake v0 (before KIP-152): after it the client sends its SASL tokens bare, each framed by its size only, and
reads the mechanism's answers bare; a token refused closes the connection unanswered (the client has no error to
read). Kafka 4.4 still serves it (Sarama's ``SASLHandshakeV0``, old Java clients).

Differential: under ``--against kafka`` the same exchanges run on Apache Kafka 4.4's SASL_PLAINTEXT listener; the
answers written here are the ones it gave. Raw sockets: no client library speaks v0 any more by default.
"""

from __future__ import annotations

import asyncio
import struct
import time
import uuid
from typing import Any

import pytest
from kio.schema.api_versions.v3 import request as api_versions_v3
from kio.schema.sasl_handshake.v0 import request as handshake_v0
from logwright.compat.registry import make
from logwright.compat.wire.messages import decode_response, encode_request
from scramp import ScramClient

from .sasl_listeners import ILLEGAL_SASL_STATE, MECHANISMS, METADATA, NONE, UNSUPPORTED_SASL_MECHANISM, Listeners
from .test_sasl import _salted, alter
from .test_sasl_oauthbearer import INVALID, claims, first, jws

pytestmark = pytest.mark.differential

SASL_HANDSHAKE, API_VERSIONS, METADATA_KEY = 17, 18, 3


class Bare:
    """One connection speaking Kafka frames and bare SASL tokens in turn."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.correlation = reader, writer, 0

    @classmethod
    async def open(cls, bootstrap: str) -> Bare:
        host, port = bootstrap.rsplit(":", 1)
        return cls(*await asyncio.open_connection(host, int(port)))

    async def frame(self, payload: bytes) -> bytes | None:
        """Send ``payload`` size-prefixed; the payload of the frame answered, ``None`` if the connection closed."""
        self.writer.write(struct.pack(">i", len(payload)) + payload)
        await self.writer.drain()
        try:
            size = struct.unpack(">i", await asyncio.wait_for(self.reader.readexactly(4), 10))[0]
            return await asyncio.wait_for(self.reader.readexactly(size), 10)
        except (asyncio.IncompleteReadError, ConnectionResetError):
            return None

    async def request(self, api_key: int, version: int, request: Any) -> Any:
        self.correlation += 1
        payload = await self.frame(encode_request(request, self.correlation, "bare-sasl"))
        if payload is None:
            return "closed"
        correlation, answer = decode_response(api_key, version, payload)
        assert correlation == self.correlation
        return answer

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except ConnectionError:
            pass


def _short(answer: Any) -> Any:
    if answer == "closed":
        return answer
    if hasattr(answer, "brokers"):
        return "brokers"
    if hasattr(answer, "mechanisms"):
        return int(answer.error_code), tuple(answer.mechanisms)
    return int(answer.error_code)


def exchange(bootstrap: str, mechanism: str, tokens: list[bytes]) -> list[Any]:
    """SaslHandshake v0 for ``mechanism``, then each token bare (its bare answer, or "closed"), then a Metadata."""

    async def run() -> list[Any]:
        connection = await Bare.open(bootstrap)
        try:
            answers = [_short(await connection.request(
                SASL_HANDSHAKE, 0, make(handshake_v0.SaslHandshakeRequest, mechanism=mechanism)))]
            for token in tokens:
                answer = await connection.frame(token)
                answers.append("closed" if answer is None else answer)
                if answer is None:
                    return answers
            answers.append(_short(await connection.request(METADATA_KEY, 12, METADATA)))
            return answers
        finally:
            await connection.close()

    return asyncio.run(run())


def test_plain_tokens_go_bare_after_a_version_0_handshake(listeners: Listeners) -> None:
    sasl = listeners.sasl
    assert exchange(sasl, "PLAIN", [b"\0alice\0alice-secret"]) == [(NONE, MECHANISMS), b"", "brokers"]
    assert exchange(sasl, "PLAIN", [b"alice\0alice\0alice-secret"]) == [(NONE, MECHANISMS), b"", "brokers"]
    for refused in (b"\0alice\0nope", b"\0\0x", b"bob\0alice\0alice-secret", b""):
        assert exchange(sasl, "PLAIN", [refused]) == [(NONE, MECHANISMS), "closed"], refused
    metadata_frame = encode_request(METADATA, 7, "bare-sasl")  # a request where a token is due: read as a token
    assert exchange(sasl, "PLAIN", [metadata_frame]) == [(NONE, MECHANISMS), "closed"]
    assert exchange(sasl, "GSSAPI", []) == [(UNSUPPORTED_SASL_MECHANISM, MECHANISMS), "closed"]


def test_scram_tokens_go_bare_after_a_version_0_handshake(listeners: Listeners) -> None:
    user = f"bare-{uuid.uuid4().hex[:6]}"
    assert alter(listeners.plaintext, [], [_salted(user, 1, "pw-256", 4096)]) == [(user, NONE, None)]

    async def run(password: str) -> list[Any]:
        connection = await Bare.open(listeners.sasl)
        client = ScramClient(["SCRAM-SHA-256"], user, password)
        try:
            answers: list[Any] = [_short(await connection.request(
                SASL_HANDSHAKE, 0, make(handshake_v0.SaslHandshakeRequest, mechanism="SCRAM-SHA-256")))]
            first = await connection.frame(client.get_client_first().encode())
            assert first is not None
            client.set_server_first(first.decode())
            final = await connection.frame(client.get_client_final().encode())
            if final is None:
                return [*answers, "closed"]
            client.set_server_final(final.decode())  # raises unless the broker proved it knows the key
            return [*answers, "proved", _short(await connection.request(METADATA_KEY, 12, METADATA))]
        finally:
            await connection.close()

    try:
        assert asyncio.run(run("pw-256")) == [(NONE, MECHANISMS), "proved", "brokers"]
        assert asyncio.run(run("wrong")) == [(NONE, MECHANISMS), "closed"]
    finally:
        assert alter(listeners.plaintext, [(user, 1)], []) == [(user, NONE, None)]


def test_version_0_is_listed_and_has_no_exchange_on_a_plaintext_listener(listeners: Listeners) -> None:
    async def run() -> list[Any]:
        versions = make(api_versions_v3.ApiVersionsRequest, client_software_name="probe", client_software_version="1")
        answers: list[Any] = []
        for bootstrap in (listeners.sasl, listeners.plaintext):
            connection = await Bare.open(bootstrap)
            try:
                listed = await connection.request(API_VERSIONS, 3, versions)
                answers.append([(int(key.min_version), int(key.max_version)) for key in listed.api_keys
                                if int(key.api_key) == SASL_HANDSHAKE])
            finally:
                await connection.close()
        connection = await Bare.open(listeners.plaintext)
        try:
            answers.append(_short(await connection.request(
                SASL_HANDSHAKE, 0, make(handshake_v0.SaslHandshakeRequest, mechanism="PLAIN"))))
            answers.append(_short(await connection.request(METADATA_KEY, 12, METADATA)))
        finally:
            await connection.close()
        return answers

    assert asyncio.run(run()) == [[(0, 1)], [(0, 1)], (ILLEGAL_SASL_STATE, ()), "brokers"]


def bare_scenario(bootstrap: str, steps: list[tuple[str, Any]]) -> list[Any]:
    """On one connection: ("handshake", mechanism) its short answer, ("token", bytes) the bare answer, ("sleep", s),
    ("metadata", None); "closed" once the connection is."""

    async def run() -> list[Any]:
        connection = await Bare.open(bootstrap)
        answers: list[Any] = []
        try:
            for step, argument in steps:
                if step == "sleep":
                    await asyncio.sleep(argument)
                    continue
                if step == "handshake":
                    answer = _short(await connection.request(
                        SASL_HANDSHAKE, 0, make(handshake_v0.SaslHandshakeRequest, mechanism=argument)))
                elif step == "token":
                    answer = await connection.frame(argument)
                    answer = "closed" if answer is None else answer
                else:
                    answer = _short(await connection.request(METADATA_KEY, 12, METADATA))
                answers.append(answer)
                if answer == "closed":
                    break
        finally:
            await connection.close()
        return answers

    return asyncio.run(run())


def test_a_version_0_session_expires_and_re_authenticates_bare(reauth_listeners: Listeners) -> None:
    """Sessions of 3 s (``connections.max.reauth.ms``): Kafka's authenticator times a session begun with bare tokens
    as any other, and a SaslHandshake v0 on the connection re-authenticates it, its tokens bare again."""
    sasl = reauth_listeners.sasl
    login = [("handshake", "PLAIN"), ("token", b"\0alice\0alice-secret")]
    logged_in = [(NONE, MECHANISMS), b""]
    assert bare_scenario(sasl, [*login, ("metadata", None), ("sleep", 1.2), *login, ("metadata", None)]) == [
        *logged_in, "brokers", *logged_in, "brokers"]
    assert bare_scenario(sasl, [*login, ("sleep", 3.5), ("metadata", None)]) == [*logged_in, "closed"]
    assert bare_scenario(sasl, [*login, ("sleep", 3.5), *login, ("metadata", None)]) == [
        *logged_in, *logged_in, "brokers"]
    assert bare_scenario(sasl, [*login, ("sleep", 1.2), ("handshake", "PLAIN"), ("token", b"\0bob\0b")]) == [
        *logged_in, (NONE, MECHANISMS), "closed"]


def test_oauthbearer_messages_go_bare_after_a_version_0_handshake(oauthbearer_listeners: Listeners) -> None:
    """A refused token is answered with the error challenge, bare; the client's 0x01 then closes the connection
    unanswered, where it may instead try another token."""
    sasl, now = oauthbearer_listeners.sasl, time.time()
    handshaken = (NONE, (*MECHANISMS, "OAUTHBEARER"))
    valid, expired = first(jws(claims())), first(jws(claims(exp=int(now) - 5)))
    assert exchange(sasl, "OAUTHBEARER", [valid]) == [handshaken, b"", "brokers"]
    assert exchange(sasl, "OAUTHBEARER", [expired, b"\x01"]) == [handshaken, INVALID.encode(), "closed"]
    assert exchange(sasl, "OAUTHBEARER", [expired, valid]) == [handshaken, INVALID.encode(), b"", "brokers"]
