"""Certificates for the TLS tests and the peer scenarios, made with the ``openssl`` command line: a CA, the broker's
certificate (for 127.0.0.1 and localhost) signed by it, client certificates signed by it, and one a stranger signed
itself. Keys are PKCS#8 PEM, as Kafka's PEM stores want them; each keystore file holds the key and the certificate
(`Certificates.client_keystore` for the Java client)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

CLIENT_SUBJECT = "/C=NO/O=logwright/OU=tests/CN=alice"
CLIENT_PRINCIPAL = "CN=alice,OU=tests,O=logwright,C=NO"
"""The principal name Kafka gives the client certificate (Java's RFC 2253 form: the last RDN first)."""


@dataclass(frozen=True, slots=True)
class Certificates:
    ca: Path
    """The CA's certificate: the truststore of both sides."""
    broker: Path
    """The broker's keystore: key and certificate."""
    client_key: Path
    client_certificate: Path
    stranger_key: Path
    stranger_certificate: Path
    """A client certificate no trusted CA signed."""

    @property
    def client_keystore(self) -> Path:
        """The client's key and certificate in one PEM file (the Java client's ``ssl.keystore.type=PEM``)."""
        return self.client_key.parent / "client-keystore.pem"


def _openssl(work: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=work, check=True, capture_output=True)


def _key(work: Path, name: str) -> Path:
    _openssl(work, "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", f"{name}.key")
    return work / f"{name}.key"


def _signed(work: Path, name: str, subject: str, extensions: str = "") -> Path:
    _key(work, name)
    _openssl(work, "req", "-new", "-key", f"{name}.key", "-subj", subject, "-out", f"{name}.csr")
    (work / f"{name}.ext").write_text(extensions or "basicConstraints=CA:FALSE\n")
    _openssl(work, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-days", "2", "-sha256", "-extfile", f"{name}.ext", "-out", f"{name}.pem")
    return work / f"{name}.pem"


def make_certificates(work: Path) -> Certificates:
    work.mkdir(parents=True, exist_ok=True)
    _key(work, "ca")
    _openssl(work, "req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=logwright test CA", "-days", "2",
             "-sha256", "-out", "ca.pem")
    broker = _signed(work, "broker", "/CN=localhost",
                     "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
    keystore = work / "broker-keystore.pem"
    keystore.write_text((work / "broker.key").read_text() + broker.read_text())
    client = _signed(work, "client", CLIENT_SUBJECT)
    _key(work, "stranger")
    _openssl(work, "req", "-x509", "-new", "-key", "stranger.key", "-subj", "/CN=stranger", "-days", "2",
             "-out", "stranger.pem")
    (work / "client-keystore.pem").write_text((work / "client.key").read_text() + client.read_text())
    return Certificates(work / "ca.pem", keystore, work / "client.key", client, work / "stranger.key",
                        work / "stranger.pem")
