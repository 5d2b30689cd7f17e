"""The SSL and SASL_SSL listeners, as Apache Kafka 4.4 serves them (``--against kafka``): librdkafka clients over
TLS, a client certificate's subject (SSL) or the SASL user (SASL_SSL) as the principal the authorizer decides on,
and clients TLS refuses.

Both brokers: PEM stores (`tls_certificates`), ``ssl.client.auth=requested``, Kafka's StandardAuthorizer with the
PLAINTEXT listener's and the certificate-less TLS clients' ``User:ANONYMOUS`` as the super user.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from logwright.client import BrokerError, Client
from logwright.compat.registry import make
from logwright.compat.wire.framing import encode_frame
from logwright.compat.wire.messages import decode_response, encode_request
from logwright.testing.tls_certificates import CLIENT_PRINCIPAL, Certificates, make_certificates

from .authorization_clients import (
    GROUP_AUTHORIZATION_FAILED,
    TOPIC_AUTHORIZATION_FAILED,
    AclOperation,
    ResourceType,
    binding,
    create_topic,
    grant,
    unique,
)
from .broker_process import BrokerProcess, free_port
from .conftest import BENCH, against
from .group_configs import set_group_configs
from .sasl_listeners import AUTHORIZING, PLAIN_USERS

pytestmark = pytest.mark.differential


OAUTHBEARER_JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                    'unsecuredLoginStringClaim_sub="broker";')
"""OAUTHBEARER with Kafka's unsecured validator (Kafka's broker needs a principal for its own unused token)."""


class TlsBroker:
    def __init__(self, plaintext: str, tls: str, sasl_tls: str, certificates: Certificates) -> None:
        self.plaintext, self.tls, self.sasl_tls, self.certificates = plaintext, tls, sasl_tls, certificates

    def sasl_client(self, user: str, password: str, **config: object) -> dict[str, object]:
        """A librdkafka configuration for the SASL_SSL listener, PLAIN."""
        return {"bootstrap.servers": self.sasl_tls, "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                "sasl.username": user, "sasl.password": password, "ssl.ca.location": str(self.certificates.ca),
                **config}

    def client(self, certificate: tuple[Path, Path] | None = None, **config: object) -> dict[str, object]:
        """A librdkafka configuration for the SSL listener, with a client certificate (and key) or none."""
        settings: dict[str, object] = {"bootstrap.servers": self.tls, "security.protocol": "SSL",
                                       "ssl.ca.location": str(self.certificates.ca), **config}
        if certificate is not None:
            settings.update({"ssl.certificate.location": str(certificate[0]), "ssl.key.location": str(certificate[1])})
        return settings

    @property
    def alice(self) -> tuple[Path, Path]:
        return self.certificates.client_certificate, self.certificates.client_key


@pytest.fixture(scope="module")
def tls_broker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsBroker]:
    work = tmp_path_factory.mktemp("tls")
    certificates = make_certificates(work / "certificates")
    config = {**AUTHORIZING, "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certificates.broker),
              "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certificates.ca),
              "ssl.client.auth": "requested",
              "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
              **{f"listener.name.{listener}.oauthbearer.sasl.jaas.config": OAUTHBEARER_JAAS
                 for listener in ("sasl_plaintext", "sasl_ssl")}}
    if against(request.config) == "kafka":
        sys.path.append(str(BENCH))
        from kafka_peer import KafkaPeer

        with KafkaPeer(work / "kafka", config=config, ssl=True, sasl_users=PLAIN_USERS) as kafka:
            yield TlsBroker(kafka.bootstrap, kafka.ssl_bootstrap, kafka.sasl_ssl_bootstrap, certificates)
        return
    port, sasl_port = free_port(), free_port()
    users = " ".join(f'user_{name}="{password}"' for name, password in PLAIN_USERS.items())
    config.update({"listener.name.sasl_ssl.plain.sasl.jaas.config":
                       f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"})
    process = BrokerProcess(work / "data", config=config, extra_args=(
        "--ssl-listen", f"127.0.0.1:{port}", "--sasl-ssl-listen", f"127.0.0.1:{sasl_port}")).start()
    try:
        yield TlsBroker(process.bootstrap, f"127.0.0.1:{port}", f"127.0.0.1:{sasl_port}", certificates)
    finally:
        assert process.alive(), process.log_tail()
        process.kill()


def test_a_producer_and_a_consumer_over_tls(tls_broker: TlsBroker) -> None:
    """5 MB of records, so the consumer's answers come from batch files (sent through TLS, not by sendfile); every
    broker address the clients are given is the SSL listener's."""
    topic = unique("tls")
    create_topic(tls_broker.plaintext, topic, 2)
    producer = Producer(tls_broker.client(**{"linger.ms": 5}))
    values = [index.to_bytes(4, "big") * 256 for index in range(5_000)]
    for index, value in enumerate(values):
        producer.produce(topic, value, partition=index % 2)
    assert producer.flush(60) == 0
    brokers = AdminClient(tls_broker.client()).list_topics(timeout=15).brokers
    assert [f"{b.host}:{b.port}" for b in brokers.values()] == [tls_broker.tls]
    consumer = Consumer(tls_broker.client(**{"group.id": unique("tls-group"), "enable.auto.commit": False}))
    try:
        consumer.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
        read: list[bytes] = []
        while len(read) < len(values):
            message = consumer.poll(15)
            assert message is not None, len(read)
            assert message.error() is None, message.error()
            read.append(message.value())
    finally:
        consumer.close()
    assert sorted(read) == sorted(values)


def _produce(config: dict[str, object], topic: str) -> KafkaError | None:
    """One record produced (and waited for): its error, if any."""
    errors: list[KafkaError | None] = []
    producer = Producer({**config, "message.timeout.ms": 10_000})
    producer.produce(topic, b"value", on_delivery=lambda error, _: errors.append(error))
    producer.flush(20)
    assert len(errors) == 1
    return errors[0]


def test_an_oauthbearer_tokens_principal_is_authorized_over_sasl_ssl(tls_broker: TlsBroker) -> None:
    topic = unique("tls-oauthbearer")
    create_topic(tls_broker.plaintext, topic)
    carol = {"bootstrap.servers": tls_broker.sasl_tls, "security.protocol": "SASL_SSL",
             "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
             "sasl.oauthbearer.config": "principal=carol", "ssl.ca.location": str(tls_broker.certificates.ca)}
    refused = _produce(carol, topic)
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grant(tls_broker.plaintext, binding(ResourceType.TOPIC, topic, "User:carol", AclOperation.WRITE))
    assert _produce(carol, topic) is None


def test_a_client_certificate_is_the_principal(tls_broker: TlsBroker) -> None:
    topic = unique("tls-principal")
    create_topic(tls_broker.plaintext, topic)
    refused = _produce(tls_broker.client(tls_broker.alice), topic)
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _produce(tls_broker.client(), topic) is None, "without a certificate: User:ANONYMOUS, the super user"
    grant(tls_broker.plaintext, binding(ResourceType.TOPIC, topic, f"User:{CLIENT_PRINCIPAL}", AclOperation.WRITE))
    assert _produce(tls_broker.client(tls_broker.alice), topic) is None


@pytest.mark.logwright_only(reason="Kafka's handshake names the CAs it trusts, so librdkafka leaves out a certificate "
                                   "none of them signed and connects without one; Python's ssl cannot name them")
def test_a_certificate_no_trusted_ca_signed_fails_the_handshake(tls_broker: TlsBroker) -> None:
    stranger = (tls_broker.certificates.stranger_certificate, tls_broker.certificates.stranger_key)
    with pytest.raises(KafkaException):
        AdminClient(tls_broker.client(stranger)).list_topics(timeout=5)
    assert AdminClient(tls_broker.client(tls_broker.alice)).list_topics(timeout=15).brokers


def _first_request_with_the_handshakes_end(address: str, context: ssl.SSLContext, frame: bytes) -> bytes:
    """Send ``frame`` in the very write that carries the client's last handshake message (TLS 1.3 lets a client
    send data right after its Finished; a busy client's two writes coalesce the same way) and return the answer's
    payload, read over TLS."""
    host, port = address.rsplit(":", 1)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with socket.create_connection((host, int(port)), timeout=15) as raw:
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                raw.sendall(outgoing.read())
                received = raw.recv(65536)
                if not received:
                    raise ConnectionError("the broker closed the connection during the handshake") from None
                incoming.write(received)
        tls.write(frame)
        raw.sendall(outgoing.read())
        answer = b""
        while len(answer) < 4 or len(answer) < 4 + int.from_bytes(answer[:4], "big"):
            try:
                answer += tls.read(65536)
            except ssl.SSLWantReadError:
                received = raw.recv(65536)
                if not received:
                    raise ConnectionError("the broker closed the connection before its answer") from None
                incoming.write(received)
        return answer[4:]


def test_a_request_sent_with_the_handshakes_end_is_decided_as_the_certificates_principal(tls_broker: TlsBroker) -> None:
    """asyncio hands a server what came with the handshake's last message at once, before the code awaiting the
    handshake runs: logwright started such a request as User:ANONYMOUS (the super user here) before it had read the
    certificate's principal, and once it answered at once, answered it in plain bytes on the TLS connection."""
    topic = unique("tls-early")
    create_topic(tls_broker.plaintext, topic)
    alice = ssl.create_default_context(cafile=str(tls_broker.certificates.ca))
    alice.load_cert_chain(str(tls_broker.certificates.client_certificate), str(tls_broker.certificates.client_key))
    metadata = make(MetadataRequest, topics=(make(MetadataRequestTopic, topic_id=uuid.UUID(int=0), name=topic),),
                    allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    for attempt in range(5):
        payload = _first_request_with_the_handshakes_end(tls_broker.tls, alice,
                                                         encode_frame(encode_request(metadata, attempt, "early")))
        correlation_id, answer = decode_response(3, 12, payload)
        assert correlation_id == attempt
        assert [topic_answer.error_code for topic_answer in answer.topics] == [TOPIC_AUTHORIZATION_FAILED]


def test_a_plaintext_request_to_the_tls_listener_is_not_answered(tls_broker: TlsBroker) -> None:
    host, port = tls_broker.tls.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as plain:  # a Kafka request, not a TLS handshake
        plain.sendall(bytes.fromhex("0000000a00120003000000010000"))
        plain.settimeout(5)
        try:
            answer = plain.recv(1024)
        except (ConnectionResetError, TimeoutError):
            answer = b""
        assert not answer.startswith(b"\0\0"), "no Kafka answer over a TLS listener"
    assert AdminClient(tls_broker.client(tls_broker.alice)).list_topics(timeout=15).brokers


def test_a_client_initiated_renegotiation_is_refused(tls_broker: TlsBroker) -> None:
    """A TLS 1.2 client asks for a new handshake mid-session (openssl s_client's ``R``): refused, not served (each
    renegotiation costs the broker a handshake's CPU), and the broker serves on."""
    session = subprocess.Popen(["openssl", "s_client", "-tls1_2", "-connect", tls_broker.tls, "-servername",
                                "localhost", "-CAfile", str(tls_broker.certificates.ca)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert session.stdin is not None and session.stdout is not None
    stalled = threading.Timer(30, session.kill)  # a handshake that never ends fails the test, not the run
    stalled.start()
    seen = b""
    try:
        while b"Verify return code" not in seen:  # the handshake ended: an "R" line before it is read as data
            chunk = session.stdout.read1(4096)
            assert chunk, seen.decode(errors="replace")
            seen += chunk
        session.stdin.write(b"R\n")
        session.stdin.flush()
        try:  # a refused renegotiation ends the session, and s_client exits
            rest = session.communicate(timeout=15)[0]
        except subprocess.TimeoutExpired:
            session.kill()
            rest = session.communicate()[0]
    finally:
        stalled.cancel()
    output = (seen + rest).decode(errors="replace")
    assert "RENEGOTIATING" in output, output
    assert output.count("verify return:1") == 2, f"a second handshake was served: {output}"
    assert AdminClient(tls_broker.client(tls_broker.alice)).list_topics(timeout=15).brokers


def test_cipher_suites_narrow_what_a_handshake_may_choose(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """``ssl.cipher.suites`` naming one TLS 1.2 suite (Kafka's IANA name): a client offering only another fails its
    handshake, one that insists on TLS 1.3 too (no TLS 1.3 suite is named), a default client gets that suite over
    TLS 1.2, and librdkafka works."""
    certificates = make_certificates(tmp_path / "certificates")
    config = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certificates.broker),
              "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}
    with _tls_only_broker(request, tmp_path, config) as (_, address):
        host, port = address.split(":")

        def handshake(context: ssl.SSLContext) -> tuple[str | None, str | None]:
            context.load_verify_locations(certificates.ca)
            with socket.create_connection((host, int(port)), timeout=5) as plain, \
                    context.wrap_socket(plain, server_hostname="localhost") as tls:
                cipher = tls.cipher()
                return tls.version(), cipher[0] if cipher else None

        assert handshake(ssl.create_default_context()) == ("TLSv1.2", "ECDHE-ECDSA-AES256-GCM-SHA384")
        other = ssl.create_default_context()
        other.maximum_version = ssl.TLSVersion.TLSv1_2
        other.set_ciphers("ECDHE-ECDSA-AES128-GCM-SHA256")
        with pytest.raises(ssl.SSLError):
            handshake(other)
        only_tls13 = ssl.create_default_context()
        only_tls13.minimum_version = ssl.TLSVersion.TLSv1_3
        with pytest.raises(ssl.SSLError):
            handshake(only_tls13)
        client = {"bootstrap.servers": address, "security.protocol": "SSL", "ssl.ca.location": str(certificates.ca)}
        assert AdminClient(client).list_topics(timeout=15).brokers


def test_principal_mapping_rules_name_the_certificate_user(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """``ssl.principal.mapping.rules`` maps the certificate's subject to ``User:alice`` (lower-cased from its CN), the
    name ACLs grant; without a rule that applies to a subject its connection fails, while a client without a
    certificate is ANONYMOUS (the super user here) either way."""
    certificates = make_certificates(tmp_path / "certificates")
    alice = {"ssl.certificate.location": str(certificates.client_certificate),
             "ssl.key.location": str(certificates.client_key)}
    base = {**AUTHORIZING, "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certificates.broker),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certificates.ca),
            "ssl.client.auth": "requested"}
    rules = {"ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=tests,.*$/$1/L,DEFAULT"}
    with _tls_only_broker(request, tmp_path / "mapped", {**base, **rules}) as (plaintext, address):
        client = {"bootstrap.servers": address, "security.protocol": "SSL", "ssl.ca.location": str(certificates.ca)}
        topic = unique("tls-mapped")
        create_topic(plaintext, topic)
        refused = _produce({**client, **alice}, topic)
        assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        grant(plaintext, binding(ResourceType.TOPIC, topic, "User:alice", AclOperation.WRITE))
        assert _produce({**client, **alice}, topic) is None, "User:alice, as the rule names the certificate"
    unmatched = {"ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=other,.*$/$1/"}
    with _tls_only_broker(request, tmp_path / "unmatched", {**base, **unmatched}) as (_, address):
        client = {"bootstrap.servers": address, "security.protocol": "SSL", "ssl.ca.location": str(certificates.ca)}
        with pytest.raises(KafkaException):
            AdminClient({**client, **alice}).list_topics(timeout=5)
        assert AdminClient(client).list_topics(timeout=15).brokers


def test_the_keystore_given_as_pem_text(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """``ssl.keystore.key`` and ``ssl.keystore.certificate.chain`` instead of a keystore file (KIP-651), and the
    CAs as ``ssl.truststore.certificates``: a client trusting the CA connects, and its certificate is accepted."""
    certificates = make_certificates(tmp_path / "certificates")
    config = {"ssl.keystore.type": "PEM", "ssl.keystore.key": (tmp_path / "certificates" / "broker.key").read_text(),
              "ssl.keystore.certificate.chain": (tmp_path / "certificates" / "broker.pem").read_text(),
              "ssl.truststore.type": "PEM", "ssl.truststore.certificates": certificates.ca.read_text(),
              "ssl.client.auth": "required"}
    with _tls_only_broker(request, tmp_path / "inline", config) as (_, address):
        client = {"bootstrap.servers": address, "security.protocol": "SSL", "ssl.ca.location": str(certificates.ca),
                  "ssl.certificate.location": str(certificates.client_certificate),
                  "ssl.key.location": str(certificates.client_key)}
        assert [f"{b.host}:{b.port}" for b in AdminClient(client).list_topics(timeout=15).brokers.values()] == [
            address]


@contextlib.contextmanager
def _tls_only_broker(request: pytest.FixtureRequest, work: Path, config: dict[str, str]
                     ) -> Iterator[tuple[str, str]]:
    """A broker of its own with an SSL listener (Kafka 4.4 under ``--against kafka``): the PLAINTEXT listener's
    address and the SSL one's."""
    if against(request.config) == "kafka":
        sys.path.append(str(BENCH))
        from kafka_peer import KafkaPeer

        with KafkaPeer(work / "kafka", config=config, ssl=True) as kafka:
            yield kafka.bootstrap, kafka.ssl_bootstrap
        return
    port = free_port()
    work.mkdir(parents=True, exist_ok=True)
    process = BrokerProcess(work / "data", config=config, extra_args=("--ssl-listen", f"127.0.0.1:{port}")).start()
    try:
        yield process.bootstrap, f"127.0.0.1:{port}"
    finally:
        assert process.alive(), process.log_tail()
        process.kill()


def test_sasl_over_tls_authenticates_the_user(tls_broker: TlsBroker) -> None:
    topic = unique("sasl-tls")
    create_topic(tls_broker.plaintext, topic)
    alice = tls_broker.sasl_client("alice", PLAIN_USERS["alice"])
    brokers = AdminClient(alice).list_topics(timeout=15).brokers
    assert [f"{b.host}:{b.port}" for b in brokers.values()] == [tls_broker.sasl_tls]
    refused = _produce(alice, topic)
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, "User:alice, no ACL"
    grant(tls_broker.plaintext, binding(ResourceType.TOPIC, topic, "User:alice", AclOperation.WRITE))
    assert _produce(alice, topic) is None
    with pytest.raises(KafkaException):
        AdminClient(tls_broker.sasl_client("alice", "wrong")).list_topics(timeout=5)


@pytest.mark.logwright_only(reason="a broker of its own with a per-address limit of two connections")
def test_a_tls_connection_counts_against_the_limits_before_its_handshake(tmp_path: Path) -> None:
    """Connections that open a TLS handshake and stop hold a slot each, as on Kafka (its acceptor counts them), so
    ``max.connections.per.ip`` bounds what they hold; the client after them is closed at accept until one goes."""
    certificates = make_certificates(tmp_path / "certificates")
    port = free_port()
    process = BrokerProcess(tmp_path / "data", config={
        "ssl.keystore.location": str(certificates.broker), "max.connections.per.ip": "2"},
        extra_args=("--ssl-listen", f"127.0.0.1:{port}")).start()
    broker = TlsBroker(process.bootstrap, f"127.0.0.1:{port}", "", certificates)
    stalled = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(2)]
    try:
        for connection in stalled:
            connection.sendall(b"\x16\x03\x01\x00\x05")  # a TLS record header, and nothing after it
        with pytest.raises(KafkaException):
            AdminClient(broker.client(**{"reconnect.backoff.max.ms": 100})).list_topics(timeout=3)
        stalled.pop().close()
        assert AdminClient(broker.client()).list_topics(timeout=15).brokers
    finally:
        for connection in stalled:
            connection.close()
        assert process.alive(), process.log_tail()
        process.kill()


@pytest.mark.logwright_only(reason="logwright's own client and its Pop extension key")
def test_the_bundled_client_pops_over_tls(tls_broker: TlsBroker) -> None:
    """`logwright.client` over the SSL listener: Pop needs READ on the group and the topic, so a client certificate
    without ACLs is refused where a client without one (ANONYMOUS, the super user here) pops and acknowledges."""
    topic = unique("tls-pop")
    create_topic(tls_broker.plaintext, topic)
    set_group_configs(tls_broker.plaintext, "tls-pop-group", {"logwright.pop.init.mode": "earliest"})
    producer = Producer({"bootstrap.servers": tls_broker.plaintext})
    for index in range(3):
        producer.produce(topic, f"pop-{index}".encode(), partition=0)
    assert producer.flush(30) == 0
    anonymous = ssl.create_default_context(cafile=str(tls_broker.certificates.ca))
    alice = ssl.create_default_context(cafile=str(tls_broker.certificates.ca))
    alice.load_cert_chain(str(tls_broker.certificates.client_certificate), str(tls_broker.certificates.client_key))

    async def scenario() -> list[bytes | None]:
        refused = await Client.connect(tls_broker.tls, tls=alice)
        try:
            with pytest.raises(BrokerError) as error:
                await refused.pop(topic, "tls-pop-group", 3)
            assert error.value.code == GROUP_AUTHORIZATION_FAILED
        finally:
            await refused.close()
        client = await Client.connect(tls_broker.tls, tls=anonymous)
        try:
            popped = await client.pop(topic, "tls-pop-group", 3)
            assert await client.ack_all(popped) == [None] * len(popped)
            return [message.value for message in popped]
        finally:
            await client.close()

    assert asyncio.run(asyncio.wait_for(scenario(), 60)) == [b"pop-0", b"pop-1", b"pop-2"]
