"""Signed OAUTHBEARER tokens (`core.security.oauthbearer_jwt`) on a clock the test sets: jose4j's key choice and
claim checks as Kafka's broker validator builds them. The wire answers, checked against Kafka 4.4, are in
tests/integration/test_sasl_oauthbearer_signed.py."""

from __future__ import annotations

import json
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from logwright.core.errors import InvalidConfig
from logwright.core.security.oauthbearer import InvalidToken
from logwright.core.security.oauthbearer_jwt import JwtSettings, KeySet, MissingKey, validate_signed
from logwright.core.security.sasl_plain import SaslAborted

NOW_S = 1_800_000_000
NOW_MS = NOW_S * 1000
RSA_A, RSA_B = rsa.generate_private_key(65537, 2048), rsa.generate_private_key(65537, 2048)
EC_256, EC_384 = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP384R1())
SETTINGS = JwtSettings(frozenset({"kafka"}), "issuer", clock_skew_s=30)


def jwk(algorithm: Any, key: Any, **members: Any) -> dict[str, Any]:
    return {**algorithm.to_jwk(key.public_key(), as_dict=True), **members}


def keys(*jwks: dict[str, Any]) -> KeySet:
    return KeySet.parse(json.dumps({"keys": list(jwks)}).encode())


def signed(key: Any, algorithm: str = "RS256", kid: str | None = None, **claims: Any) -> str:
    every = {"sub": "alice", "iat": NOW_S, "exp": NOW_S + 60, "aud": "kafka", "iss": "issuer", **claims}
    return jwt.encode({name: value for name, value in every.items() if value is not None}, key, algorithm=algorithm,
                      headers={} if kid is None else {"kid": kid})


def test_the_key_is_chosen_as_jose4j_chooses_it() -> None:
    both = keys(jwk(RSAAlgorithm, RSA_A, kid="a"), jwk(RSAAlgorithm, RSA_B, kid="b"), jwk(ECAlgorithm, EC_256))
    assert validate_signed(signed(RSA_B, kid="b"), both, SETTINGS, NOW_MS).principal == "alice"
    assert validate_signed(signed(RSA_A), both, SETTINGS, NOW_MS).expires_ms == (NOW_S + 60) * 1000
    with pytest.raises(InvalidToken):  # no kid: the first RSA key, which did not sign it
        validate_signed(signed(RSA_B), both, SETTINGS, NOW_MS)
    with pytest.raises(MissingKey) as missing:
        validate_signed(signed(RSA_A, kid="c"), both, SETTINGS, NOW_MS)
    assert missing.value.key_id == "c"
    assert validate_signed(signed(EC_256, "ES256"), both, SETTINGS, NOW_MS)
    # several keys left: the alg, then the curve, narrows them
    labelled = keys(jwk(RSAAlgorithm, RSA_A, alg="RS512"), jwk(RSAAlgorithm, RSA_B, alg="RS256"))
    assert validate_signed(signed(RSA_B), labelled, SETTINGS, NOW_MS)
    curves = keys(jwk(ECAlgorithm, EC_256), jwk(ECAlgorithm, EC_384))
    assert validate_signed(signed(EC_384, "ES384"), curves, SETTINGS, NOW_MS)
    encryption_only = keys(jwk(RSAAlgorithm, RSA_A, use="enc"))
    with pytest.raises(MissingKey):
        validate_signed(signed(RSA_A), encryption_only, SETTINGS, NOW_MS)
    assert keys({"kty": "nope"}, {"kid": 1, "kty": "RSA"}, jwk(RSAAlgorithm, RSA_A)).keys[0].kty == "RSA"


def test_weak_keys_and_unsigned_tokens_are_refused() -> None:
    small = rsa.generate_private_key(65537, 1024)
    with pytest.warns(UserWarning), pytest.raises(InvalidToken, match="2048"):
        validate_signed(signed(small), keys(jwk(RSAAlgorithm, small)), SETTINGS, NOW_MS)
    short = keys({"kty": "oct", "k": "c2hvcnQ"})
    with pytest.warns(UserWarning), pytest.raises(InvalidToken, match="hash output"):
        validate_signed(signed(b"short", "HS256"), short, SETTINGS, NOW_MS)
    for token in ["a.b", jwt.encode({"sub": "a"}, None, algorithm="none") + "c2ln",
                  signed(RSA_A).replace(".", ".x", 1)]:
        with pytest.raises(InvalidToken):
            validate_signed(token, keys(jwk(RSAAlgorithm, RSA_A)), SETTINGS, NOW_MS)


def test_the_claims_on_a_set_clock() -> None:
    one = keys(jwk(RSAAlgorithm, RSA_A))
    accepted = {"exp within the skew": {"exp": NOW_S - 29, "iat": NOW_S - 100},
                "nbf within the skew": {"nbf": NOW_S + 30}, "iat at exp": {"iat": NOW_S + 60},
                "audiences": {"aud": ["x", "kafka"]}, "scope as one text": {"scope": "a b"},
                "scope not a list": {"scope": 5}}
    for name, claims in accepted.items():
        assert validate_signed(signed(RSA_A, **claims), one, SETTINGS, NOW_MS), name
    refused = {"expired": {"exp": NOW_S - 30, "iat": NOW_S - 100}, "nbf ahead": {"nbf": NOW_S + 31},
               "iat after exp": {"iat": NOW_S + 61}, "no iat": {"iat": None}, "no exp": {"exp": None},
               "another audience": {"aud": "x"}, "no audience": {"aud": None}, "another issuer": {"iss": "x"},
               "no sub": {"sub": None}, "blank sub": {"sub": " \t"}, "jti a number": {"jti": 5},
               "scope repeated": {"scope": ["a", " a"]}, "scope item null": {"scope": [None]}}
    for name, claims in refused.items():
        with pytest.raises(InvalidToken):
            validate_signed(signed(RSA_A, **claims), one, SETTINGS, NOW_MS)
            pytest.fail(name)
    assert validate_signed(signed(RSA_A, sub=" bob "), one, SETTINGS, NOW_MS).principal == "bob"
    assert validate_signed(signed(RSA_A, scope=[" a", "b"]), one, SETTINGS, NOW_MS).scope == {"a", "b"}
    for claims in [{"scope": ["a", 5]}, {"exp": 2**62}]:
        with pytest.raises(SaslAborted):
            validate_signed(signed(RSA_A, **claims), one, SETTINGS, NOW_MS)
    unverified = JwtSettings(frozenset(), None)
    assert validate_signed(signed(RSA_A, aud="anyone", iss="anyone"), one, unverified, NOW_MS)


def test_the_settings_require_an_audience_and_an_issuer_unless_told_not_to() -> None:
    def read(**values: str) -> JwtSettings:
        defaults = {"sasl.oauthbearer.expected.audience": "", "sasl.oauthbearer.expected.issuer": "",
                    "sasl.oauthbearer.allow.unverified.audience": "false",
                    "sasl.oauthbearer.allow.unverified.issuer": "false", "sasl.oauthbearer.clock.skew.seconds": "30",
                    "sasl.oauthbearer.scope.claim.name": "scope", "sasl.oauthbearer.sub.claim.name": "sub"}
        return JwtSettings.read(lambda key: {**defaults, **{k.replace("_", "."): v for k, v in values.items()}}[key])

    with pytest.raises(InvalidConfig, match="expected.audience"):
        read()
    with pytest.raises(InvalidConfig, match="expected.issuer"):
        read(**{"sasl_oauthbearer_expected_audience": "a, b"})
    settings = read(**{"sasl_oauthbearer_expected_audience": "a, b", "sasl_oauthbearer_allow_unverified_issuer":
                       "true"})
    assert (settings.expected_audiences, settings.expected_issuer) == (frozenset({"a", "b"}), None)
