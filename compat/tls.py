"""TLS for the SSL listener: Kafka's ``ssl.*`` broker keys read into an `ssl.SSLContext`, and the principal a client
certificate names.

Stores are PEM files, as Kafka reads them with ``ssl.keystore.type=PEM`` and ``ssl.truststore.type=PEM`` (KIP-651):
the keystore holds the private key (PKCS#8, encrypted with ``ssl.key.password`` or not) and the certificate chain;
the truststore the CAs a client certificate must chain to (``ssl.truststore.certificates`` may give them inline, as
``ssl.keystore.key`` and ``ssl.keystore.certificate.chain`` may give the keystore).
JKS and PKCS12 stores are refused at start (``keytool -importkeystore`` and ``openssl pkcs12`` convert them): a
broker that quietly served without the store its operator named would be worse. ``ssl.client.auth`` is Kafka's:
``none`` (the default), ``requested`` or ``required``; ``ssl.cipher.suites`` narrows the suites (`tls_ciphers`).

Kafka names an SSL client ``User:`` followed by its certificate's subject as Java's ``X500Principal.getName()``
writes it (RFC 2253), mapped by ``ssl.principal.mapping.rules`` (`core.security.ssl_principal_rules`), or
``User:ANONYMOUS`` when it sent none. Python's ``ssl`` gives the subject as decoded (name, value) pairs, not as
Java's string, so `subject_principal` writes that string itself (no library here does: the standard library has no
X.500 writer and ``cryptography`` is not a dependency).
"""

from __future__ import annotations

import os
import ssl
import tempfile
from asyncio import sslproto
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from logwright.compat.tls_ciphers import restrict
from logwright.core.errors import InvalidConfig
from logwright.core.security.ssl_principal_rules import PrincipalRules

CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
"""The versions ``ssl.enabled.protocols`` may name (Kafka 4.4's default is both; older ones are not offered)."""

RFC2253_KEYWORDS = {"commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
                    "organizationName": "O", "organizationalUnitName": "OU", "streetAddress": "STREET",
                    "domainComponent": "DC", "userId": "UID"}
"""The attributes RFC 2253 (and Java) write by keyword; any other by its OID and its value's DER in hex."""
OTHER_ATTRIBUTES = {"emailAddress": ("1.2.840.113549.1.9.1", 0x16), "serialNumber": ("2.5.4.5", 0x13),
                    "title": ("2.5.4.12", 0x0C), "surname": ("2.5.4.4", 0x0C), "givenName": ("2.5.4.42", 0x0C),
                    "initials": ("2.5.4.43", 0x0C), "pseudonym": ("2.5.4.65", 0x0C),
                    "generationQualifier": ("2.5.4.44", 0x0C), "dnQualifier": ("2.5.4.46", 0x13),
                    "postalCode": ("2.5.4.17", 0x0C), "businessCategory": ("2.5.4.15", 0x0C)}
"""OID and DER string tag of the attributes written as ``OID=#hex``. Python does not say which string type a
certificate used: emailAddress is an IA5String and serialNumber and dnQualifier PrintableStrings by definition,
the others are taken as UTF8String (RFC 5280's choice for new certificates)."""
_ESCAPED = frozenset(',=+<>#;"\\')
TLS_READ_BYTES = 32 * 1024
"""What asyncio's TLS protocol reads from the socket at once, and the buffer each connection holds for it from its
first byte (asyncio's own default, 256 KiB, made 5,000 connections that opened a handshake and stopped hold 1.5 GB;
Kafka's SSLEngine buffers are about 33 KB). A TLS record is at most 16 KiB and some bytes, so two fit; a 1 MiB
Produce is read in 32 reads instead of 4."""


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """The SSL listener's context, built once at start (the keys are static, as on Kafka)."""

    context: ssl.SSLContext
    client_auth: str
    principal_rules: PrincipalRules

    @classmethod
    def read(cls, broker_config: Callable[[str], str]) -> TlsSettings:
        """Raises `InvalidConfig` for stores that cannot be read (the keys' own checks refused other types, rules
        and protocols already: `core.config.configs`)."""
        keystore = broker_config("ssl.keystore.location")
        inline_key, inline_chain = broker_config("ssl.keystore.key"), broker_config("ssl.keystore.certificate.chain")
        if keystore and (inline_key or inline_chain):
            raise InvalidConfig("ssl.keystore.location and ssl.keystore.key/ssl.keystore.certificate.chain are "
                                "two ways to give the keystore: set one")
        if not keystore and not (inline_key and inline_chain):
            raise InvalidConfig("an SSL listener needs ssl.keystore.location (a PEM file: private key and "
                                "certificate chain), or ssl.keystore.key and ssl.keystore.certificate.chain (PEM text)")
        client_auth = broker_config("ssl.client.auth")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        versions = sorted(PROTOCOLS[name.strip()] for name in broker_config("ssl.enabled.protocols").split(",")
                          if name.strip())
        context.minimum_version, context.maximum_version = versions[0], versions[-1]
        # a client may not renegotiate a TLS 1.2 session (each costs a handshake's CPU: a cheap way to load a broker,
        # CVE-2011-1473), as Kafka's SslTransportLayer refuses it; OpenSSL 3 refuses by default, 1.1 did not
        context.options |= ssl.OP_NO_RENEGOTIATION
        restrict(context, broker_config("ssl.cipher.suites"))
        password = broker_config("ssl.key.password") or None
        try:
            if keystore:
                context.load_cert_chain(keystore, password=password)
            else:
                _load_inline_chain(context, inline_key, inline_chain, password)
            context.verify_mode = CLIENT_AUTH[client_auth]
            if client_auth != "none":
                truststore, inline = broker_config("ssl.truststore.location"), broker_config(
                    "ssl.truststore.certificates")
                if truststore or inline:
                    context.load_verify_locations(cafile=truststore or None, cadata=inline or None)
                else:  # as Kafka falls back on the JVM's CAs
                    context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        except (OSError, ssl.SSLError, ValueError) as error:
            raise InvalidConfig(f"the SSL listener's stores cannot be read: {error}") from error
        sslproto.SSLProtocol.max_size = TLS_READ_BYTES
        return cls(context, client_auth, PrincipalRules.parse(broker_config("ssl.principal.mapping.rules")))


def _load_inline_chain(context: ssl.SSLContext, key: str, chain: str, password: str | None) -> None:
    """The keystore given as PEM text: Python's ``ssl`` loads a key and chain only from a file, so they are written
    to one only this process may read, in a directory of its own, and removed once loaded."""
    with tempfile.TemporaryDirectory(prefix="logwright-keystore-") as directory:  # created 0700
        path = os.path.join(directory, "keystore.pem")
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as keystore:
            keystore.write(key.strip() + "\n" + chain.strip() + "\n")
        context.load_cert_chain(path, password=password)


def client_principal(ssl_object: Any, rules: PrincipalRules) -> str | None:
    """The name in Kafka's ``User:`` principal of a TLS connection: its certificate's subject as ``rules`` map it
    (``None``: no rule applies, and the connection has no principal), or ANONYMOUS without a certificate."""
    certificate = ssl_object.getpeercert() if ssl_object is not None else None
    if not certificate:
        return "ANONYMOUS"
    return rules.name(subject_principal(certificate.get("subject", ())))


def subject_principal(subject: tuple[tuple[tuple[str, str], ...], ...]) -> str:
    """A subject as Python's ``getpeercert()`` gives it (RDNs in the certificate's order, each a tuple of attribute
    name and value) written as Java's ``X500Principal.getName()``: the last RDN first, RDNs joined by ``,`` and a
    multi-valued RDN's attributes by ``+``, each ``KEYWORD=value`` with ``,=+<>#;"\\`` escaped, or ``OID=#hex``."""
    return ",".join("+".join(_attribute(name, value) for name, value in rdn) for rdn in reversed(subject))


def _attribute(name: str, value: str) -> str:
    keyword = RFC2253_KEYWORDS.get(name)
    if keyword is not None:
        return f"{keyword}={_escaped(value)}"
    oid, tag = OTHER_ATTRIBUTES.get(name, (name, 0x0C))
    encoded = value.encode("ascii" if tag in (0x13, 0x16) else "utf-8", errors="replace")
    return f"{oid}=#{_der(tag, encoded).hex()}"


def _der(tag: int, content: bytes) -> bytes:
    length = len(content)
    if length < 0x80:
        return bytes((tag, length)) + content
    size = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes((tag, 0x80 | len(size))) + size + content


def _escaped(value: str) -> str:
    written = []
    for position, char in enumerate(value):
        if char in _ESCAPED or (char == " " and position in (0, len(value) - 1)):
            written.append("\\" + char)
        elif ord(char) < 0x20:
            written.append(f"\\{ord(char):02X}")
        else:
            written.append(char)
    return "".join(written)
