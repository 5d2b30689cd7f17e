"""Kafka's ``ssl.cipher.suites`` on an `ssl.SSLContext`: the suites a TLS listener may negotiate.

Kafka names suites as Java does, by their IANA names (``TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384``); OpenSSL, under
Python's ``ssl``, by its own (``ECDHE-RSA-AES256-GCM-SHA384``) and refuses the IANA ones. `OPENSSL_NAMES` maps the
TLS 1.2 suites OpenSSL 3 offers that a broker would choose (ephemeral key exchange or plain RSA, AES-GCM,
ChaCha20-Poly1305, AES-CBC; not the anonymous, PSK, ARIA, Camellia and CCM ones): standard registry data, checked
against ``openssl ciphers -stdname`` in tests/compat/test_tls_ciphers.py, since no library here carries the mapping.

As Java does with its enabled suites: a list without any TLS 1.3 suite leaves TLS 1.3 unused (the listener serves
TLS 1.2 only), one without TLS 1.2 suites leaves TLS 1.2 unused. Python's ``ssl`` cannot narrow the TLS 1.3 suites
(it has no ``set_ciphersuites``), so a list naming some of them but not all three is refused at start rather than
served with all three; so is a name not served here, as Java refuses a suite it does not know.
"""

from __future__ import annotations

import ssl

from logwright.core.errors import InvalidConfig

TLS13_SUITES = frozenset({"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"})
"""OpenSSL's TLS 1.3 suites (the same names in both namings), all offered whenever TLS 1.3 is."""

OPENSSL_NAMES = {
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "DHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": "ECDHE-ECDSA-AES256-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256": "DHE-RSA-AES256-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256": "DHE-RSA-AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA": "DHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA": "DHE-RSA-AES128-SHA",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA256": "AES256-SHA256",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
}
"""IANA name (Kafka's, Java's) of a TLS 1.2 suite -> OpenSSL's name of it."""


def cipher_suites_problem(value: str) -> str | None:
    """Why ``ssl.cipher.suites`` cannot be served (checked when the key is set, before any listener starts)."""
    names = _names(value)
    unknown = [name for name in names if name not in OPENSSL_NAMES and name not in TLS13_SUITES]
    if unknown:
        return (f"cipher suites not served: {', '.join(unknown)} (served: the TLS 1.3 suites "
                f"{', '.join(sorted(TLS13_SUITES))} and the TLS 1.2 suites {', '.join(OPENSSL_NAMES)})")
    tls13 = TLS13_SUITES.intersection(names)
    if tls13 and tls13 != TLS13_SUITES:
        return (f"the TLS 1.3 suites cannot be narrowed here (Python's ssl serves all three or none): name "
                f"{', '.join(sorted(TLS13_SUITES))}, or none of them to serve TLS 1.2 only")
    return None


def restrict(context: ssl.SSLContext, value: str) -> None:
    """Narrow ``context`` (its protocol range already set) to the suites ``value`` lists; empty: OpenSSL's default
    suites, as Kafka's default leaves the JVM's. Raises `InvalidConfig` when no enabled protocol keeps a suite."""
    names = _names(value)
    if not names:
        return
    problem = cipher_suites_problem(value)
    if problem is not None:
        raise InvalidConfig(f"ssl.cipher.suites: {problem}")
    tls12 = [OPENSSL_NAMES[name] for name in names if name in OPENSSL_NAMES]
    low, high = context.minimum_version, context.maximum_version
    if not tls12:
        low = ssl.TLSVersion.TLSv1_3
    if not TLS13_SUITES.intersection(names):
        high = ssl.TLSVersion.TLSv1_2
    if low > high:
        raise InvalidConfig("ssl.cipher.suites names no suite of a protocol ssl.enabled.protocols enables")
    if tls12:
        context.set_ciphers(":".join(tls12))
    context.minimum_version, context.maximum_version = low, high


def _names(value: str) -> list[str]:
    return [name.strip() for name in value.split(",") if name.strip()]
