"""``ssl.cipher.suites`` read onto a TLS context: Kafka's (IANA) names, OpenSSL's suites, refusals at start."""

from __future__ import annotations

import shutil
import ssl
import subprocess

import pytest
from logwright.compat.tls_ciphers import OPENSSL_NAMES, TLS13_SUITES, cipher_suites_problem, restrict
from logwright.core.errors import InvalidConfig


def _context(low: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2,
             high: ssl.TLSVersion = ssl.TLSVersion.TLSv1_3) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version, context.maximum_version = low, high
    return context


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_every_name_maps_to_the_suite_openssl_gives_that_name() -> None:
    listed = subprocess.run(["openssl", "ciphers", "-stdname", "ALL"], capture_output=True, text=True, check=True)
    standard = {line.split()[0]: line.split()[2] for line in listed.stdout.splitlines() if " - " in line}
    assert {name: standard.get(name) for name in OPENSSL_NAMES} == OPENSSL_NAMES
    assert TLS13_SUITES <= set(standard)


def test_tls12_suites_narrow_tls12_and_leave_tls13_out() -> None:
    context = _context()
    restrict(context, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384")
    assert sorted(cipher["name"] for cipher in context.get_ciphers() if cipher["protocol"] == "TLSv1.2") == [
        "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384"]
    assert context.maximum_version == ssl.TLSVersion.TLSv1_2, "no TLS 1.3 suite named: TLS 1.2 only, as Java"


def test_tls13_suites_alone_serve_tls13_only() -> None:
    context = _context()
    restrict(context, ",".join(sorted(TLS13_SUITES)))
    assert (context.minimum_version, context.maximum_version) == (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_3)


def test_empty_leaves_openssls_defaults() -> None:
    context, untouched = _context(), _context()
    restrict(context, " ")
    assert context.get_ciphers() == untouched.get_ciphers()
    assert (context.minimum_version, context.maximum_version) == (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)


@pytest.mark.parametrize(("value", "says"), [
    ("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_RSA_WITH_NULL_SHA", "not served: TLS_RSA_WITH_NULL_SHA"),
    ("ECDHE-RSA-AES256-GCM-SHA384", "not served: ECDHE-RSA-AES256-GCM-SHA384"),  # OpenSSL's name, not Kafka's
    ("TLS_AES_128_GCM_SHA256", "cannot be narrowed"),
])
def test_a_list_that_cannot_be_served_is_refused(value: str, says: str) -> None:
    problem = cipher_suites_problem(value)
    assert problem is not None and says in problem
    with pytest.raises(InvalidConfig, match="ssl.cipher.suites"):
        restrict(_context(), value)


def test_no_suite_of_an_enabled_protocol_is_refused() -> None:
    with pytest.raises(InvalidConfig, match="no suite of a protocol"):
        restrict(_context(ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_3), "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384")
    with pytest.raises(InvalidConfig, match="no suite of a protocol"):
        restrict(_context(ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_2), ",".join(TLS13_SUITES))
