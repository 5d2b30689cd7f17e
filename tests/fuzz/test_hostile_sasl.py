"""Hostile values on the SASL_PLAINTEXT listener, against a real broker process with delegation tokens on.

Each example sends, each on a fresh SASL connection: a hostile request of any served (API key, version) before
authentication (it must close the connection or be refused, never reach a handler that assumes a user); a SASL
handshake followed by hostile SaslAuthenticate tokens; and, after a PLAIN login, hostile requests of the security
APIs (SaslHandshake, SaslAuthenticate, the delegation token APIs 38-41, the SCRAM credential APIs 50-51). Then the
broker must be alive, answer a well-behaved client within a second and have logged no ERROR. A second broker enforces
ACLs: hostile requests of every served key from a user without any take the authorizer's refusal paths.

``LOGWRIGHT_HOSTILE_SASL_EXAMPLES`` sets the number of examples and ``LOGWRIGHT_FUZZ_SEED`` the seed.
"""

from __future__ import annotations

import os
import random
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.sasl_authenticate.v2 import request as authenticate_v2
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
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
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


@pytest.fixture(scope="module")
def authorizing_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslBroker]:
    """ACLs enforced; alice has none, so her requests take the authorizer's refusal paths."""
    yield from _sasl_broker(tmp_path_factory.mktemp("hostile-acls"), {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS"})


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


def test_hostile_values_on_the_sasl_listener_hurt_nobody(sasl_broker: SaslBroker) -> None:
    log = BrokerLog(sasl_broker.process)
    answered = 0
    for example in range(EXAMPLES):
        rng = random.Random(SEED * 1_000_003 + example)
        values = HostileValues(rng)
        before = rng.choice(SERVED)
        with _connect(sasl_broker) as sock:  # before authentication: refused or closed, never handled as a user's
            _exchange(sock, values.frame(*before))
        mechanism = rng.choice(("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"))
        with _connect(sasl_broker) as sock:  # a hostile token in the exchange
            _exchange(sock, framed(encode(make(handshake_v1.SaslHandshakeRequest, mechanism=mechanism), 1)))
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
