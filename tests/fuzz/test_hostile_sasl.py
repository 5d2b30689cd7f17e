"""Hostile values on the SASL_PLAINTEXT listener, against a real broker process with delegation tokens on.

Each example sends, each on a fresh SASL connection: a hostile request of any served (API key, version) before
authentication (it must close the connection or be refused, never reach a handler that assumes a user); a SASL
handshake followed by hostile SaslAuthenticate tokens, or after a SaslHandshake v0 hostile bare tokens (for
OAUTHBEARER, also well-framed first messages carrying
hostile unsecured tokens: JSON values of every kind and size, truncated or re-encoded JSON, stray sections and
padding); and, after a PLAIN login, hostile requests of the security
APIs (SaslHandshake, SaslAuthenticate, the delegation token APIs 38-41, the SCRAM credential APIs 50-51). Then the
broker must be alive, answer a well-behaved client within a second and have logged no ERROR. A second broker enforces
ACLs: hostile requests of every served key from a user without any take the authorizer's refusal paths; its
OAUTHBEARER tokens must be signed, and it is sent hostile ones, half of them signed by its key.

``LOGWRIGHT_HOSTILE_SASL_EXAMPLES`` sets the number of examples and ``LOGWRIGHT_FUZZ_SEED`` the seed.
"""

from __future__ import annotations

import base64
import json
import os
import random
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from kio.schema.sasl_authenticate.v2 import request as authenticate_v2
from kio.schema.sasl_handshake.v0 import request as handshake_v0
from kio.schema.sasl_handshake.v1 import request as handshake_v1
from logwright.compat.registry import make

from tests.integration.broker_process import BrokerProcess, free_port

from .broker_checks import BrokerLog, assert_served_within_a_second
from .frames import SERVED, framed
from .hostile_values import HostileValues, encode

EXAMPLES = int(os.environ.get("LOGWRIGHT_HOSTILE_SASL_EXAMPLES", "60"))
SEED = int(os.environ.get("LOGWRIGHT_FUZZ_SEED", str(random.randrange(2**32))))
SECURITY_KEYS = (17, 36, 38, 39, 40, 41, 50, 51)


class SaslBroker:
    def __init__(self, process: BrokerProcess, sasl_port: int) -> None:
        self.process, self.sasl_port = process, sasl_port


def _sasl_broker(work: Path, config: dict[str, str]) -> Iterator[SaslBroker]:
    port = free_port()
    process = BrokerProcess(work / "data", config={
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            'unsecuredValidatorRequiredScope="kafka" unsecuredValidatorAllowableClockSkewMs="1000";',
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";',
        "delegation.token.secret.key": "hostile-key",
        "connection.failed.authentication.delay.ms": "0", **config,
    }, extra_args=("--sasl-listen", f"127.0.0.1:{port}"))
    process.start()
    try:
        yield SaslBroker(process, port)
    finally:
        process.kill()


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslBroker]:
    yield from _sasl_broker(tmp_path_factory.mktemp("hostile-sasl"), {})


SIGNING_KEY = rsa.generate_private_key(65537, 2048)


@pytest.fixture(scope="module")
def authorizing_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslBroker]:
    """ACLs enforced; alice has none, so her requests take the authorizer's refusal paths. Its OAUTHBEARER tokens
    must be signed by `SIGNING_KEY` (kid "k")."""
    work = tmp_path_factory.mktemp("hostile-acls")
    jwks = work / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{**RSAAlgorithm.to_jwk(SIGNING_KEY.public_key(), as_dict=True),
                                          "kid": "k"}]}))
    yield from _sasl_broker(work, {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS",
        "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        "sasl.oauthbearer.jwks.endpoint.url": jwks.as_uri(), "sasl.oauthbearer.expected.audience": "kafka",
        "sasl.oauthbearer.expected.issuer": "issuer"})


def _exchange(sock: socket.socket, frame: bytes) -> bytes | None:
    """Send one frame and read its answer (None: closed or nothing within the timeout)."""
    try:
        sock.sendall(frame)
        size = _read(sock, 4)
        return None if size is None else _read(sock, struct.unpack(">i", size)[0])
    except (TimeoutError, ConnectionError):
        return None


def _read(sock: socket.socket, count: int) -> bytes | None:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _connect(broker: SaslBroker) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", broker.sasl_port), timeout=2)
    sock.settimeout(1.0)
    return sock


def _security_key(rng: random.Random) -> tuple[int, int]:
    return rng.choice([(key, version) for key, version in SERVED if key in SECURITY_KEYS])


HANDSHAKE = framed(encode(make(handshake_v1.SaslHandshakeRequest, mechanism="PLAIN"), 1))
LOGIN = framed(encode(make(authenticate_v2.SaslAuthenticateRequest, auth_bytes=b"\0alice\0alice-secret"), 2))


def _log_in(sock: socket.socket) -> None:
    """A PLAIN login as alice on a fresh connection."""
    assert _exchange(sock, HANDSHAKE) is not None
    logged_in = _exchange(sock, LOGIN)
    # SaslAuthenticate v2's answer: correlation id, the header's tagged fields, then the error code
    assert logged_in is not None and logged_in[5:7] == b"\0\0", f"the PLAIN login failed: {logged_in!r}"


def _authenticate(token: bytes) -> bytes:
    return framed(encode(make(authenticate_v2.SaslAuthenticateRequest, auth_bytes=token), 2))


def _hostile_json(rng: random.Random, depth: int = 0) -> object:
    kinds = ["null", "bool", "int", "huge", "float", "text", "unicode", "list", "object"]
    kind = rng.choice(kinds if depth < 4 else kinds[:7])
    if kind == "list":
        return [_hostile_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == "object":
        return {rng.choice(["sub", "exp", "iat", "scope", "alg", "x"]): _hostile_json(rng, depth + 1)
                for _ in range(rng.randrange(4))}
    return {"null": None, "bool": rng.random() < 0.5, "int": rng.randint(-2**70, 2**70),
            "huge": 10 ** rng.randrange(1, 1200) * rng.choice((1, -1)),
            "float": rng.choice((rng.uniform(-1e308, 1e308), rng.uniform(0, 4e9), -0.0, 5e-324)),
            "text": "".join(rng.choice(" kafka\x01\t.=,") for _ in range(rng.randrange(12))),
            "unicode": "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randrange(6)))}[kind]


def _hostile_section(rng: random.Random, members: dict[str, object]) -> str:
    """A token section: JSON of ``members`` with some replaced by hostile values, perhaps truncated, re-encoded or
    padded."""
    for name in rng.sample(sorted(members) + ["alg", "x"], rng.randrange(1, 4)):
        members[name] = _hostile_json(rng)
    raw = json.dumps(members).encode() if rng.random() < 0.8 else json.dumps(_hostile_json(rng)).encode()
    change = rng.randrange(6)
    if change == 0:
        raw = raw[:rng.randrange(len(raw) + 1)]
    elif change == 1:
        raw = json.dumps(members).encode(rng.choice(("utf-16-le", "utf-16-be", "utf-32", "utf-8-sig")))
    elif change == 2:
        at = rng.randrange(len(raw) + 1)
        raw = raw[:at] + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8))) + raw[at:]
    text = base64.urlsafe_b64encode(raw).decode()
    return text if rng.random() < 0.2 else text.rstrip("=")


def _hostile_oauthbearer_messages(rng: random.Random, signed: bool = False) -> list[bytes]:
    """A well-framed first message carrying a hostile token (unsecured, or ``signed`` by `SIGNING_KEY` half of the
    time, so hostile claims get past the signature); then perhaps the 0x01 acknowledging a refusal, another first
    message, or stray bytes."""
    if signed:
        header = _hostile_section(rng, {"alg": rng.choice(("RS256", "PS256", "HS256", "none")), "kid": "k"})
        claims = _hostile_section(rng, {"sub": "alice", "exp": 4_000_000_000, "iat": 1, "aud": "kafka",
                                        "iss": "issuer", "scope": ["kafka"]})
        signing_input = f"{header}.{claims}"
        signature = base64.urlsafe_b64encode(RSAAlgorithm(RSAAlgorithm.SHA256).sign(
            signing_input.encode(), SIGNING_KEY)).rstrip(b"=").decode()
        token = f"{signing_input}.{signature if rng.random() < 0.5 else rng.choice(('', 'x', signature[:-2]))}"
    else:
        header = _hostile_section(rng, {"alg": "none"}) if rng.random() < 0.5 else "eyJhbGciOiJub25lIn0"
        claims = _hostile_section(rng, {"sub": "alice", "exp": 4_000_000_000, "iat": 1, "scope": ["kafka"]})
        token = ".".join([header, claims, rng.choice(("", "", "", "x", "=", "..", "a.b"))])
    if rng.random() < 0.2:
        token = "".join(rng.choice("-_~+/.=aZ9") if rng.random() < 0.05 else char for char in token)
    authzid = rng.choice(("", "", "a=alice,", "a=bob,", "a==2C,"))
    first = f"n,{authzid or ','}\x01auth=Bearer {token}\x01".encode()
    extensions = rng.choice((b"", b"", b"k=v\x01", b"k=\x01", b"auth=Bearer x\x01"))
    then = rng.choice(([], [b"\x01"], [b"\x01", b"\x01"], [b"n,,\x01auth=Bearer a.b.\x01\x01"], [b"\xff" * 9]))
    return [first + extensions + b"\x01", *then]


def test_hostile_values_on_the_sasl_listener_hurt_nobody(sasl_broker: SaslBroker) -> None:
    log = BrokerLog(sasl_broker.process)
    answered = 0
    for example in range(EXAMPLES):
        rng = random.Random(SEED * 1_000_003 + example)
        values = HostileValues(rng)
        before = rng.choice(SERVED)
        with _connect(sasl_broker) as sock:  # before authentication: refused or closed, never handled as a user's
            _exchange(sock, values.frame(*before))
        mechanism = rng.choice(("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "OAUTHBEARER"))
        bare = rng.random() < 0.3  # SaslHandshake v0: the tokens that follow come bare, framed by their size only
        with _connect(sasl_broker) as sock:  # a hostile token in the exchange
            handshake = handshake_v0 if bare else handshake_v1
            _exchange(sock, framed(encode(make(handshake.SaslHandshakeRequest, mechanism=mechanism), 1)))
            if bare:
                tokens = (_hostile_oauthbearer_messages(rng) if mechanism == "OAUTHBEARER" and rng.random() < 0.7
                          else [values.frame(*rng.choice(SERVED))[4:], rng.randbytes(rng.randrange(64)), b""])
                for token in tokens:
                    if _exchange(sock, framed(token)) is None:
                        break
            elif mechanism == "OAUTHBEARER" and rng.random() < 0.7:
                for message in _hostile_oauthbearer_messages(rng):
                    if _exchange(sock, _authenticate(message)) is None:
                        break
            else:
                _exchange(sock, values.frame(36, rng.choice((0, 1, 2))))
        keys = [_security_key(rng) for _ in range(3)]
        with _connect(sasl_broker) as sock:  # authenticated: the security APIs with hostile values
            _log_in(sock)
            for api_key, version in keys:
                if _exchange(sock, values.frame(api_key, version, correlation_id=3)) is None:
                    break
                answered += 1
        context = (f"example {example} (LOGWRIGHT_FUZZ_SEED={SEED}): {before} before authentication, a "
                   f"{mechanism} token, then {keys} authenticated")
        assert_served_within_a_second(sasl_broker.process, context)
        log.assert_no_errors(context)
    assert answered >= EXAMPLES, f"only {answered} hostile requests reached the security APIs and were answered"


def test_hostile_requests_refused_by_the_authorizer_hurt_nobody(authorizing_broker: SaslBroker) -> None:
    """Every served (API key, version) with hostile values, from a user without ACLs: each is refused (its own
    error answer, a filtered answer, or a closed connection) or served, never failed on."""
    log = BrokerLog(authorizing_broker.process)
    answered = 0
    for example in range(EXAMPLES):
        rng = random.Random(SEED * 1_000_033 + example)
        values = HostileValues(rng)
        keys = [rng.choice(SERVED) for _ in range(4)]
        with _connect(authorizing_broker) as sock:  # a hostile signed token
            _exchange(sock, framed(encode(make(handshake_v1.SaslHandshakeRequest, mechanism="OAUTHBEARER"), 1)))
            for message in _hostile_oauthbearer_messages(rng, signed=True):
                if _exchange(sock, _authenticate(message)) is None:
                    break
        with _connect(authorizing_broker) as sock:
            _log_in(sock)
            for api_key, version in keys:
                if _exchange(sock, values.frame(api_key, version, correlation_id=3)) is None:
                    break
                answered += 1
        context = f"example {example} (LOGWRIGHT_FUZZ_SEED={SEED}): {keys} as a user without ACLs"
        assert_served_within_a_second(authorizing_broker.process, context)
        log.assert_no_errors(context)
    assert answered >= EXAMPLES, f"only {answered} hostile requests were answered"
