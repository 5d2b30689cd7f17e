"""SASL/OAUTHBEARER with signed tokens (KIP-768: Kafka's ``OAuthBearerValidatorCallbackHandler``), over the wire.

Differential: under ``--against kafka`` the same tests run on Apache Kafka 4.4 with the same JWKS (a file, and an
HTTP endpoint this module serves), expected audience and issuer; the answers written here are the ones Kafka 4.4
gave. Keys are made for the module: two RSA keys and an EC key in the JWKS, an HMAC key, a 1,024-bit RSA key, and an
RSA key the JWKS does not hold.
"""

from __future__ import annotations

import base64
import http.server
import json
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import pytest
from confluent_kafka import Producer
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, HMACAlgorithm, RSAAlgorithm

from .conftest import BENCH, against, sasl_logwright
from .sasl_listeners import NONE, PLAIN_USERS, TOKENS, Listeners
from .test_sasl_oauthbearer import INVALID, MECHANISMS, first, oauthbearer, refusal

pytestmark = [pytest.mark.differential,
              pytest.mark.filterwarnings("ignore:The RSA key is 1024 bits")]  # the small key is refused on purpose

ISSUER = "https://issuer.example"
SIGNED_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
ALLOWED_URLS = "org.apache.kafka.sasl.oauthbearer.allowed.urls"


@dataclass
class Keys:
    rsa: Any
    rsa2: Any
    ec: Any
    hmac: bytes
    small: Any
    stranger: Any

    @classmethod
    def make(cls) -> Keys:
        return cls(rsa.generate_private_key(65537, 2048), rsa.generate_private_key(65537, 2048),
                   ec.generate_private_key(ec.SECP256R1()), b"h" * 32, rsa.generate_private_key(65537, 1024),
                   rsa.generate_private_key(65537, 2048))

    def jwks(self, *extra: dict[str, Any]) -> dict[str, Any]:
        """The set both brokers read: rsa (kid "rsa"), rsa2 ("rsa2"), ec ("ec"), the HMAC key ("hmac"), the small
        RSA key ("small")."""
        def public(algorithm: Any, key: Any, kid: str) -> dict[str, Any]:
            return {**algorithm.to_jwk(key.public_key(), as_dict=True), "kid": kid, "use": "sig"}

        return {"keys": [public(RSAAlgorithm, self.rsa, "rsa"), public(RSAAlgorithm, self.rsa2, "rsa2"),
                         public(ECAlgorithm, self.ec, "ec"),
                         {**HMACAlgorithm.to_jwk(self.hmac, as_dict=True), "kid": "hmac"},
                         public(RSAAlgorithm, self.small, "small"), *extra]}


@dataclass
class SignedBroker:
    listeners: Listeners
    keys: Keys
    jwks_file: Path
    served: dict[str, Any]
    """What the HTTP JWKS endpoint answers (a test may change it)."""
    http_listeners: Listeners


class _JwksHandler(http.server.BaseHTTPRequestHandler):
    served: dict[str, Any] = {}

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = json.dumps(self.served).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
        pass


def _config(jwks_url: str) -> dict[str, str]:
    return {"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
            "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;",
            "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": SIGNED_HANDLER,
            "listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.jwks.endpoint.url": jwks_url,
            "sasl.oauthbearer.expected.audience": "kafka,other", "sasl.oauthbearer.expected.issuer": ISSUER}


def _broker(request: pytest.FixtureRequest, work: Path, jwks_url: str) -> Iterator[Listeners]:
    config = _config(jwks_url)
    work.mkdir()
    if against(request.config) == "kafka":
        sys.path.append(str(BENCH))
        from kafka_peer import KafkaPeer

        with KafkaPeer(work / "kafka", sasl_users=PLAIN_USERS, config={**TOKENS, **config},
                       system_properties={ALLOWED_URLS: jwks_url}) as kafka:
            yield Listeners(kafka.bootstrap, kafka.sasl_bootstrap)
        return
    yield from sasl_logwright(work, config)


@pytest.fixture(scope="module")
def signed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SignedBroker]:
    """Two brokers of a kind: one reading the JWKS from a file, one from this module's HTTP endpoint."""
    work = tmp_path_factory.mktemp("oauthbearer-signed")
    keys = Keys.make()
    jwks_file = work / "jwks.json"
    jwks_file.write_text(json.dumps(keys.jwks()))
    served = keys.jwks()
    handler = type("Handler", (_JwksHandler,), {"served": served})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/jwks"
        with_file = _broker(request, work / "file", jwks_file.as_uri())
        with_http = _broker(request, work / "http", url)
        yield SignedBroker(next(with_file), keys, jwks_file, served, next(with_http))
        for finished in (with_file, with_http):
            next(finished, None)
    finally:
        server.shutdown()


def token(key: Any, algorithm: str = "RS256", kid: str | None = "rsa", **claims: Any) -> str:
    """A token signed by ``key``, for alice, an hour long, for audience kafka from `ISSUER`, with ``claims``
    changed (None: left out)."""
    now = int(time.time())
    every = {"sub": "alice", "iat": now, "exp": now + 3600, "aud": "kafka", "iss": ISSUER, "scope": "read", **claims}
    headers = {} if kid is None else {"kid": kid}
    return jwt.encode({name: value for name, value in every.items() if value is not None}, key, algorithm=algorithm,
                      headers=headers)


RSA_HEADER = '{"alg":"RS256","kid":"rsa"}'


def claims_json(extra: str = "", exp: str | None = None) -> str:
    """A valid token's claims as JSON text, with ``extra`` members appended (for what `jwt.encode` cannot write)."""
    now = int(time.time())
    return (f'{{"sub":"alice","iat":{now},"exp":{exp or now + 600},"aud":"kafka","iss":"{ISSUER}"{extra}}}')


def raw(keys: Keys, header: str, claims: str) -> str:
    """A token of this header and claims text, signed RS256 by the first RSA key."""
    def encoded(text: str | bytes) -> str:
        return base64.urlsafe_b64encode(text if isinstance(text, bytes) else text.encode()).rstrip(b"=").decode()

    signing_input = f"{encoded(header)}.{encoded(claims)}"
    return f"{signing_input}.{encoded(RSAAlgorithm(RSAAlgorithm.SHA256).sign(signing_input.encode(), keys.rsa))}"


def outcome(answers: list[Any]) -> str:
    if answers[1:] == [(NONE, "", b""), (34, "SaslAuthenticate request received after successful authentication",
                                          b""), answers[-1]] and answers[-1][0] == "brokers":
        return "accepted"
    if answers == refusal(INVALID):
        return "invalid"
    if answers == [(NONE, MECHANISMS), "closed"]:
        return "closed"
    if answers == [(NONE, MECHANISMS), (NONE, "", b""), "closed"]:
        return "accepted, session over"  # a token past its exp within the skew: a session of 0 ms
    return repr(answers)


def test_signed_tokens_are_checked_as_kafkas_broker_validator_checks_them(signed: SignedBroker) -> None:
    keys, now = signed.keys, int(time.time())
    cases = {
        "RS256": (token(keys.rsa), "accepted"),
        "PS256 by the same key": (token(keys.rsa, "PS256"), "accepted"),
        "ES256": (token(keys.ec, "ES256", "ec"), "accepted"),
        "HS256 by the set's HMAC key": (token(keys.hmac, "HS256", "hmac"), "accepted"),
        "the second RSA key by its kid": (token(keys.rsa2, kid="rsa2"), "accepted"),
        "no kid: the first RSA key": (token(keys.rsa, kid=None), "accepted"),
        "no kid, signed by the second": (token(keys.rsa2, kid=None), "invalid"),
        "an unknown kid": (token(keys.rsa, kid="nobody"), "invalid"),
        "a key outside the set": (token(keys.stranger), "invalid"),
        "HS256 keyed by the RSA public key": (jwt.encode({"sub": "alice"}, b"x" * 32, algorithm="HS256",
                                                         headers={"kid": "rsa"}), "invalid"),
        "a 1,024-bit RSA key": (token(keys.small, kid="small"), "invalid"),
        "past exp within the clock skew": (token(keys.rsa, exp=now - 10, iat=now - 100), "accepted, session over"),
        "iat after exp": (token(keys.rsa, exp=now - 10), "invalid"),
        "iat at exp": (token(keys.rsa, exp=now + 100, iat=now + 100), "accepted"),
        "expired": (token(keys.rsa, exp=now - 60), "invalid"),
        "no exp": (token(keys.rsa, exp=None), "invalid"),
        "no iat": (token(keys.rsa, iat=None), "invalid"),
        "iat ahead": (token(keys.rsa, iat=now + 600), "accepted"),
        "nbf within the skew": (token(keys.rsa, nbf=now + 10), "accepted"),
        "nbf ahead": (token(keys.rsa, nbf=now + 120), "invalid"),
        "the other audience": (token(keys.rsa, aud="other"), "accepted"),
        "audiences naming one": (token(keys.rsa, aud=["x", "kafka"]), "accepted"),
        "another audience": (token(keys.rsa, aud="x"), "invalid"),
        "no audience": (token(keys.rsa, aud=None), "invalid"),
        "another issuer": (token(keys.rsa, iss="https://elsewhere"), "invalid"),
        "no issuer": (token(keys.rsa, iss=None), "invalid"),
        "no sub": (token(keys.rsa, sub=None), "invalid"),
        "sub a number": (token(keys.rsa, sub=5), "invalid"),
        "sub padded": (token(keys.rsa, sub="  alice "), "accepted"),
        "sub blank": (token(keys.rsa, sub="  "), "invalid"),
        "scope with a space": (token(keys.rsa, scope="a b"), "accepted"),
        "scope a number": (token(keys.rsa, scope=5), "accepted"),
        "scope items repeated": (token(keys.rsa, scope=["a", "a"]), "invalid"),
        "scope item null": (token(keys.rsa, scope=["a", None]), "invalid"),
        "scope item blank": (token(keys.rsa, scope=["a", " "]), "invalid"),
        "scope item a number": (token(keys.rsa, scope=["a", 5]), "closed"),
        "jti a number": (token(keys.rsa, jti=5), "invalid"),
        "exp a fraction": (token(keys.rsa, exp=now + 600.9), "accepted"),
        "a critical header": (jwt.encode({"sub": "a"}, keys.rsa, algorithm="RS256",
                                         headers={"kid": "rsa", "crit": ["exp"], "exp": 1}), "invalid"),
        "kid a number": (raw(keys, '{"alg":"RS256","kid":5}', claims_json()), "invalid"),
        "a claim named twice": (raw(keys, RSA_HEADER, claims_json(',"sub":"bob"')), "invalid"),
        "a header member named twice": (raw(keys, '{"alg":"RS256","kid":"rsa","kid":"rsa2"}', claims_json()),
                                        "invalid"),
        "typ": (token(keys.rsa, typ="x"), "accepted"),
        "exp as text": (token(keys.rsa, exp=str(now + 600)), "invalid"),
        "iat as text": (token(keys.rsa, iat="x"), "invalid"),
        "iss a number": (raw(keys, RSA_HEADER, claims_json().replace(f'"{ISSUER}"', "5")), "invalid"),
        "audiences with a number": (token(keys.rsa, aud=["kafka", 5]), "invalid"),
        "whitespace after the claims": (raw(keys, RSA_HEADER, claims_json() + "  "), "accepted"),
        "text after the claims": (raw(keys, RSA_HEADER, claims_json() + "x"), "invalid"),
        "exp past a long's milliseconds": (token(keys.rsa, exp=2**62), "closed"),
        "exp 1e300": (raw(keys, RSA_HEADER, claims_json(exp="1e300")), "closed"),
        "exp negative": (token(keys.rsa, exp=-5, iat=-10), "invalid"),
        "alg in lower case": (raw(keys, '{"alg":"rs256","kid":"rsa"}', claims_json()), "invalid"),
        "no alg": (raw(keys, '{"kid":"rsa"}', claims_json()), "invalid"),
        "alg none": (jwt.encode({"sub": "a"}, None, algorithm="none") + "c2ln", "invalid"),
        "unsigned, no signature": (jwt.encode({"sub": "a"}, None, algorithm="none"), "invalid"),
    }
    answers = {name: outcome(oauthbearer(signed.listeners.sasl, first(value), b"\x01"))
               for name, (value, _) in cases.items()}
    assert answers == {name: expected for name, (_, expected) in cases.items()}


def test_a_signed_session_ends_with_its_token(signed: SignedBroker) -> None:
    from .test_sasl_oauthbearer import session  # noqa: PLC0415 - the unsecured module's helper

    exp = int(time.time()) + 40
    answers = session(signed.listeners.sasl, [token(signed.keys.rsa, exp=exp)])
    assert answers[0][:3] == (NONE, NONE, "") and 30_000 < answers[0][3] <= 40_000, answers


def outcome_within(bootstrap: str, signed_token: str, seconds: float) -> str:
    """The outcome of ``signed_token``, tried again every 0.2 s until accepted or ``seconds`` have passed (the
    broker reads new keys a moment after they appear)."""
    deadline = time.monotonic() + seconds
    while (result := outcome(oauthbearer(bootstrap, first(signed_token), b"\x01"))) != "accepted" and (
            time.monotonic() < deadline):
        time.sleep(0.2)
    return result


def test_a_key_added_to_the_http_endpoint_is_fetched_when_a_token_names_it(signed: SignedBroker) -> None:
    """A token signed by a key the endpoint did not serve when the broker last fetched it is refused, and its key
    id makes the broker fetch the set again: the next try is accepted (the fetch is not awaited by the refusal)."""
    sasl = signed.http_listeners.sasl
    new_key = rsa.generate_private_key(65537, 2048)
    kid = f"new-{uuid.uuid4().hex[:6]}"
    fresh = token(new_key, kid=kid)
    assert outcome(oauthbearer(sasl, first(token(signed.keys.rsa)), b"\x01")) == "accepted"
    signed.served["keys"].append({**RSAAlgorithm.to_jwk(new_key.public_key(), as_dict=True), "kid": kid})
    assert outcome(oauthbearer(sasl, first(fresh), b"\x01")) == "invalid"
    assert outcome_within(sasl, fresh, 30) == "accepted"


def test_a_key_written_to_the_jwks_file_is_read(signed: SignedBroker) -> None:
    """The JWKS file replaced with one holding a new key: tokens signed by it are accepted without a restart."""
    new_key = ec.generate_private_key(ec.SECP384R1())
    kid = f"file-{uuid.uuid4().hex[:6]}"
    fresh = token(new_key, "ES384", kid)
    sasl = signed.listeners.sasl
    assert outcome(oauthbearer(sasl, first(fresh), b"\x01")) == "invalid"
    replacement = signed.jwks_file.with_suffix(".new")
    replacement.write_text(json.dumps(signed.keys.jwks(
        {**ECAlgorithm.to_jwk(new_key.public_key(), as_dict=True), "kid": kid})))
    replacement.replace(signed.jwks_file)
    assert outcome_within(sasl, fresh, 30) == "accepted"


def test_librdkafka_produces_with_a_signed_token(signed: SignedBroker) -> None:
    keys = signed.keys

    def refresh(_: str) -> tuple[str, float]:
        return token(keys.ec, "ES256", "ec"), time.time() + 3600

    producer = Producer({"bootstrap.servers": signed.listeners.sasl, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanisms": "OAUTHBEARER", "oauth_cb": refresh, "acks": "all"})
    producer.produce(f"signed-{uuid.uuid4().hex[:8]}", b"signed")
    assert producer.flush(30) == 0


def test_kafka_python_produces_with_a_signed_token(signed: SignedBroker) -> None:
    """kafka-python's own OAUTHBEARER client (a refusal only shows there as a bootstrap timeout, so the refusals
    are the raw exchanges' above)."""
    from kafka import KafkaProducer  # noqa: PLC0415 - kafka-python, only here
    from kafka.net.sasl.oauth import AbstractTokenProvider  # noqa: PLC0415

    class Provider(AbstractTokenProvider):  # type: ignore[misc]
        def token(self) -> str:
            return token(signed.keys.rsa2, kid="rsa2")

    producer = KafkaProducer(bootstrap_servers=signed.listeners.sasl, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=Provider(), acks="all")
    try:
        producer.send(f"signed-python-{uuid.uuid4().hex[:8]}", b"signed").get(timeout=30)
    finally:
        producer.close()
