"""Hostile bytes on the SSL listener, against a real broker process: before, during and after the TLS handshake.

Each example sends, each on a fresh connection to the SSL port: a ClientHello from Python's own TLS client (TLS 1.2
or 1.3), mutated (bits flipped, bytes overwritten or inserted, cut short, its record or handshake length forged) or
replaced by forged TLS records (any content type, lengths up to 64 KiB, past what a record may hold) or plain random
bytes, sometimes left open mid-record; then a handshake that completes (with the client certificate or without)
followed by hostile Kafka requests through TLS; then a completed handshake followed by raw bytes that are no TLS
record of that session (a forged or corrupt record in the encrypted stream). Afterwards the broker must be alive,
answer a well-behaved client within a second on both listeners, have logged no ERROR (hostile input is the client's
fault, not the broker's), and stay within its memory budget.

``LOGWRIGHT_HOSTILE_TLS_EXAMPLES`` sets the number of examples and ``LOGWRIGHT_FUZZ_SEED`` the seed.
"""

from __future__ import annotations

import os
import random
import socket
import ssl
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from logwright.testing.tls_certificates import Certificates, make_certificates

from tests.integration.broker_process import BrokerProcess, free_port

from .broker_checks import BrokerLog, assert_served_within_a_second, assert_within_budget, send_alone
from .frames import SERVED, framed
from .hostile_values import HostileValues

EXAMPLES = int(os.environ.get("LOGWRIGHT_HOSTILE_TLS_EXAMPLES", "40"))
SEED = int(os.environ.get("LOGWRIGHT_FUZZ_SEED", str(random.randrange(2**32))))
API_VERSIONS = framed(struct.pack(">hhih", 18, 0, 424242, 12) + b"well-behaved")
CONTENT_TYPES = (20, 21, 22, 23, 24, 0, 0x80, 0xFF)
"""ChangeCipherSpec, alert, handshake, application data, heartbeat, and types no TLS version defines."""
RECORD_LENGTHS = (0, 1, 5, 16_384, 16_384 + 256, 16_384 + 2_048, 16_384 + 2_049, 0x7FFF, 0xFFFF)
"""Record lengths at and past TLS's limits (2^14 of plaintext; 2^14 + 2,048 of ciphertext in TLS 1.2)."""


@dataclass
class TlsBroker:
    process: BrokerProcess
    tls_port: int
    certificates: Certificates

    def client_context(self, with_certificate: bool = False) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.certificates.ca))
        if with_certificate:
            context.load_cert_chain(self.certificates.client_certificate, self.certificates.client_key)
        return context

    def connect(self, with_certificate: bool = False) -> ssl.SSLSocket:
        """A fresh connection with its handshake done."""
        sock = socket.create_connection(("127.0.0.1", self.tls_port), timeout=2)
        return self.client_context(with_certificate).wrap_socket(sock, server_hostname="localhost")


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsBroker]:
    work = tmp_path_factory.mktemp("hostile-tls")
    certificates = make_certificates(work / "certificates")
    port = free_port()
    process = BrokerProcess(work / "data", config={
        "ssl.keystore.location": str(certificates.broker), "ssl.truststore.location": str(certificates.ca),
        "ssl.client.auth": "requested"}, extra_args=("--ssl-listen", f"127.0.0.1:{port}"))
    process.start()
    try:
        yield TlsBroker(process, port, certificates)
    finally:
        process.kill()


def client_hello(rng: random.Random) -> bytes:
    """The first flight of Python's TLS client (one or more records), as a socket would carry it."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if rng.random() < 0.5:
        context.maximum_version = ssl.TLSVersion.TLSv1_2
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    long_name = ".".join(["x" * 63] * 3)  # a server name of the longest labels
    tls = context.wrap_bio(incoming, outgoing, server_hostname=rng.choice((None, "localhost", long_name)))
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def mutated_hello(rng: random.Random) -> bytes:
    hello = bytearray(client_hello(rng))
    for _ in range(rng.randint(1, 4)):
        if not hello:  # cut to nothing by an earlier mutation
            break
        at = rng.randrange(len(hello))
        kind = rng.choice(("flip", "overwrite", "insert", "truncate", "record length", "handshake length"))
        if kind == "flip":
            hello[at] ^= 1 << rng.randrange(8)
        elif kind == "overwrite":
            hello[at:at + 4] = rng.choice((b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", rng.randbytes(4)))
        elif kind == "insert":
            hello[at:at] = rng.randbytes(rng.randint(1, 64))
        elif kind == "truncate":
            del hello[at:]
        elif kind == "record length" and len(hello) >= 5:
            hello[3:5] = struct.pack(">H", rng.choice(RECORD_LENGTHS))
        elif len(hello) >= 9:  # the ClientHello's own 24-bit length
            hello[6:9] = rng.choice((b"\xff\xff\xff", b"\x00\x00\x00", b"\x00\x40\x00", rng.randbytes(3)))
    return bytes(hello)


def forged_records(rng: random.Random) -> bytes:
    """One to four TLS records of any type, version and claimed length, carrying fewer or more bytes than claimed."""
    out = bytearray()
    for _ in range(rng.randint(1, 4)):
        length = rng.choice(RECORD_LENGTHS)
        carried = rng.choice((length, rng.randint(0, 64), min(length, 4096)))
        version = rng.choice((b"\x03\x01", b"\x03\x03", b"\x03\x04", b"\x02\x00", b"\xfe\xff", rng.randbytes(2)))
        out += bytes((rng.choice(CONTENT_TYPES),)) + version + struct.pack(">H", length) + rng.randbytes(carried)
    return bytes(out)


def first_flight(rng: random.Random) -> tuple[str, bytes]:
    kind = rng.choice(("mutated hello", "mutated hello", "forged records", "random bytes", "sslv2 hello"))
    if kind == "mutated hello":
        return kind, mutated_hello(rng)
    if kind == "forged records":
        return kind, forged_records(rng)
    if kind == "sslv2 hello":  # the two-byte-length header of SSL 2.0's ClientHello, which nothing serves any more
        body = b"\x01\x00\x02" + rng.randbytes(rng.randint(0, 40))
        return kind, struct.pack(">H", 0x8000 | len(body)) + body
    return kind, rng.randbytes(rng.randint(1, 4096))


def _exchange(sock: socket.socket, frame: bytes) -> bytes | None:
    """Send one frame and read its answer (None: closed, refused, or nothing within the timeout)."""
    try:
        sock.sendall(frame)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack_from(">i", data)[0]:
            chunk = sock.recv(65536)
            if not chunk:
                return None
            data += chunk
        return data[4:]
    except (TimeoutError, ConnectionError, ssl.SSLError):
        return None


def _assert_tls_served_within_a_second(broker: TlsBroker, context: str) -> None:
    started = time.monotonic()
    try:
        with broker.connect() as tls:
            tls.settimeout(1.0)
            answer = _exchange(tls, API_VERSIONS)
    except (TimeoutError, ssl.SSLError, ConnectionError) as error:
        raise AssertionError(f"a well-behaved TLS client failed after {context}: {error!r}") from None
    assert answer is not None and struct.unpack_from(">ih", answer) == (424242, 0), \
        f"a well-behaved TLS client got {answer!r} after {context}"
    elapsed = time.monotonic() - started
    assert elapsed < 1.0, f"a well-behaved TLS client waited {elapsed:.2f} s after {context}"


def test_hostile_bytes_on_the_ssl_listener_hurt_nobody(tls_broker: TlsBroker) -> None:
    log = BrokerLog(tls_broker.process)
    _assert_tls_served_within_a_second(tls_broker, "the start")
    baseline = tls_broker.process.resident_bytes()
    answered = 0
    for example in range(EXAMPLES):
        rng = random.Random(SEED * 1_000_037 + example)
        values = HostileValues(rng)
        kind, flight = first_flight(rng)
        stalled: socket.socket | None = None
        if rng.random() < 0.25:  # left open mid-record, holding its connection for the rest of the example
            stalled = socket.create_connection(("127.0.0.1", tls_broker.tls_port), timeout=2)
            stalled.sendall(flight[:rng.randint(1, max(len(flight) - 1, 1))])
        else:
            send_alone(tls_broker.process, flight, port=tls_broker.tls_port)
        keys = [rng.choice(SERVED) for _ in range(rng.randint(1, 3))]
        with tls_broker.connect(with_certificate=rng.random() < 0.5) as tls:  # hostile requests through TLS
            tls.settimeout(1.0)
            for api_key, version in keys:
                if _exchange(tls, values.frame(api_key, version, correlation_id=3)) is None:
                    break
                answered += 1
        forged = forged_records(rng) if rng.random() < 0.5 else rng.randbytes(rng.randint(1, 2048))
        with tls_broker.connect() as tls:  # bytes that are no record of this session, inside the encrypted stream
            with socket.socket(fileno=os.dup(tls.fileno())) as raw:
                try:
                    raw.sendall(forged)
                except ConnectionError:
                    pass
            tls.settimeout(0.2)
            _exchange(tls, API_VERSIONS)  # refused or closed: whatever comes is fine
        context = (f"example {example} (LOGWRIGHT_FUZZ_SEED={SEED}): a {kind} of {len(flight)} bytes"
                   f"{' left open' if stalled else ''}, then {keys} through TLS, then {len(forged)} forged bytes")
        try:
            _assert_tls_served_within_a_second(tls_broker, context)
            assert_served_within_a_second(tls_broker.process, context)
            log.assert_no_errors(context)
        finally:
            if stalled is not None:
                stalled.close()
    assert_within_budget(tls_broker.process, baseline, f"{EXAMPLES} examples (LOGWRIGHT_FUZZ_SEED={SEED})")
    assert answered >= EXAMPLES // 2, f"only {answered} hostile requests through TLS were answered"


def test_a_bad_record_right_after_the_handshake_closes_quietly(tls_broker: TlsBroker) -> None:
    """Bytes that are no record, sent the moment the client's handshake ends, often reach the broker with its last
    handshake message: the session ends before the connection reads its certificate, which once failed the
    handshake's task with an ERROR traceback. Now the connection closes quietly."""
    log = BrokerLog(tls_broker.process)
    for _ in range(60):
        with tls_broker.connect() as tls, socket.socket(fileno=os.dup(tls.fileno())) as raw:
            try:
                raw.sendall(b"\x17\x03\x03\x00\x10" + bytes(16))  # application data no key of the session wrote
            except ConnectionError:
                pass
    _assert_tls_served_within_a_second(tls_broker, "60 bad records right after handshakes")
    log.assert_no_errors("60 bad records right after handshakes")
