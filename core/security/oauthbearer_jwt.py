"""OAUTHBEARER's signed tokens as Kafka's broker validates them (KIP-768: ``OAuthBearerValidatorCallbackHandler``,
Kafka 4.4's ``BrokerJwtValidator`` over jose4j): a JWS signed by a key of the identity provider's JWKS.

Kafka's checks, in its terms: three sections; an algorithm jose4j knows, never ``none``; the key chosen as jose4j's
``VerificationJwkSelector`` chooses it (the header's ``kid`` required to match where the header names one; the key
type the algorithm needs; ``use`` ``sig`` or absent; then the ``alg``, then the curve, among several) and the
signature verified by it (RSA keys of 2,048 bits at least, HMAC keys as long as the hash); JSON without a member
named twice; ``exp`` and ``iat`` required, ``iat`` not after ``exp``, ``exp`` ahead and ``nbf`` behind within
``sasl.oauthbearer.clock.skew.seconds`` (a token past its ``exp`` within the skew authenticates a session that is
already over); ``aud`` naming an expected audience and ``iss`` the expected issuer (both required in Kafka 4.4
unless ``allow.unverified`` says otherwise); the principal claim a non-blank string (trimmed), each scope item
non-blank and unique. A refused token is RFC 7628's ``invalid_token``; where Kafka's validator throws instead (a
scope list holding a number, an ``exp`` past what a long holds in milliseconds), the connection closes unanswered
(`SaslAborted`).

Signatures are verified by PyJWT's algorithms over ``cryptography`` (a JOSE library made for it); the choice of key
and the claim checks are written here because they must be jose4j's, not PyJWT's (which differ in key choice,
``aud`` handling and number parsing).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jwt.algorithms import get_default_algorithms
from jwt.exceptions import InvalidKeyError
from logwright.core.errors import InvalidConfig
from logwright.core.security.oauthbearer import (
    AcceptedToken,
    InvalidToken,
    java_base64url,
    java_trim,
    refuse_constant,
)
from logwright.core.security.sasl_plain import SaslAborted

SIGNED_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
"""The callback handler class that asks for signed tokens (Kafka 4.x's name)."""
JWT_VALIDATORS = ("org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator",
                  "org.apache.kafka.common.security.oauthbearer.BrokerJwtValidator")
_ALGORITHMS = get_default_algorithms()
_KEY_TYPE = {**{f"HS{bits}": "oct" for bits in (256, 384, 512)}, **{f"RS{bits}": "RSA" for bits in (256, 384, 512)},
             **{f"PS{bits}": "RSA" for bits in (256, 384, 512)}, **{f"ES{bits}": "EC" for bits in (256, 384, 512)},
             "EdDSA": "OKP"}
"""jose4j's JWS algorithms and the key type each verifies with."""
_KEY_READERS = {"RSA": _ALGORITHMS["RS256"], "EC": _ALGORITHMS["ES256"], "oct": _ALGORITHMS["HS256"],
                "OKP": _ALGORITHMS["EdDSA"]}
"""PyJWT's readers of each key type's JWK (any algorithm of the type reads it)."""
_CURVE = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}
_HMAC_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}


@dataclass(frozen=True, slots=True)
class JwtSettings:
    """The ``sasl.oauthbearer.*`` keys Kafka's broker validator reads."""

    expected_audiences: frozenset[str]
    expected_issuer: str | None
    clock_skew_s: int = 30
    scope_claim: str = "scope"
    sub_claim: str = "sub"

    @classmethod
    def read(cls, broker_config: Callable[[str], str]) -> JwtSettings:
        """Raises `InvalidConfig` with Kafka 4.4's words where the audience or the issuer is left unchecked without
        ``sasl.oauthbearer.allow.unverified.*`` set."""
        audiences = frozenset(item.strip() for item in broker_config("sasl.oauthbearer.expected.audience").split(",")
                              if item.strip())
        issuer = broker_config("sasl.oauthbearer.expected.issuer").strip() or None
        for key, missing in (("audience", not audiences), ("issuer", issuer is None)):
            name, allowed = f"sasl.oauthbearer.expected.{key}", f"sasl.oauthbearer.allow.unverified.{key}"
            if missing and broker_config(allowed).lower() != "true":
                claim = "aud" if key == "audience" else "iss"
                raise InvalidConfig(
                    f'The OAuth validator for the broker requires "{name}" to be configured so that the token\'s '
                    f'{key} ("{claim}") claim can be verified, but it was not set. Set "{name}", or set "{allowed}" '
                    "to true to skip it")
        return cls(audiences, issuer, int(broker_config("sasl.oauthbearer.clock.skew.seconds")),
                   broker_config("sasl.oauthbearer.scope.claim.name").strip() or "scope",
                   broker_config("sasl.oauthbearer.sub.claim.name").strip() or "sub")


@dataclass(frozen=True, slots=True)
class VerificationKey:
    """One JWK of the set, with what key selection reads of it."""

    jwk: Mapping[str, Any]
    key: Any
    """The key ``cryptography`` holds for it (its public half, for a JWK that holds a private key; bytes for HMAC)."""
    kid: str | None
    kty: str
    use: str | None
    alg: str | None
    crv: str | None


@dataclass(frozen=True, slots=True)
class KeySet:
    keys: tuple[VerificationKey, ...]

    @classmethod
    def parse(cls, data: bytes) -> KeySet:
        """A JWKS document (``{"keys": [...]}``); keys jose4j skips (an unknown ``kty``, members of the wrong type,
        key material that does not make a key) are skipped. Raises ValueError for a document that is not a key
        set."""
        document = json.loads(data)
        if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
            raise ValueError('a JWKS is a JSON object with a "keys" list')
        keys = []
        for jwk in document["keys"]:
            if not isinstance(jwk, dict) or jwk.get("kty") not in ("RSA", "EC", "oct", "OKP"):
                continue
            members = {name: jwk.get(name) for name in ("kid", "use", "alg", "crv")}
            if not all(value is None or isinstance(value, str) for value in members.values()):
                continue
            try:
                key = _KEY_READERS[jwk["kty"]].from_jwk(json.dumps(jwk))
            except (InvalidKeyError, ValueError, KeyError, TypeError, AttributeError):
                continue
            if hasattr(key, "public_key"):  # a JWK holding a private key verifies with its public half
                key = key.public_key()
            keys.append(VerificationKey(jwk, key, members["kid"], jwk["kty"], members["use"], members["alg"],
                                        members["crv"]))
        return cls(tuple(keys))

    def select(self, header: Mapping[str, Any]) -> VerificationKey | None:
        """jose4j's ``VerificationJwkSelector``: the first key left by its filters, or None."""
        alg, kid = header["alg"], header.get("kid")
        kty = _KEY_TYPE[alg]
        chosen = [key for key in self.keys if key.kty == kty and key.use in (None, "sig")
                  and (kid is None or key.kid == kid)]
        if len(chosen) > 1:
            chosen = [key for key in chosen if key.alg in (None, alg)]
        if len(chosen) > 1 and alg in _CURVE:
            chosen = [key for key in chosen if key.crv in (None, _CURVE[alg])]
        if len(chosen) > 1 and alg == "EdDSA":
            chosen = [key for key in chosen if key.crv in (None, "Ed25519", "Ed448")]
        return chosen[0] if chosen else None


class MissingKey(InvalidToken):
    """No key of the set verifies this token's header: refused, and the key set may be stale (`key_id` names the
    key asked for, None if the header named none)."""

    def __init__(self, key_id: str | None) -> None:
        super().__init__(f"Unable to find a suitable verification key (kid {key_id!r})")
        self.key_id = key_id


def validate_signed(token: str, keys: KeySet, settings: JwtSettings, now_ms: int) -> AcceptedToken:
    """Check ``token`` as Kafka 4.4's broker validator does. Raises `InvalidToken` (`MissingKey` where no key
    matched) or `SaslAborted`."""
    sections = token.split(".")
    while sections and not sections[-1]:  # Java's String.split drops trailing empty strings
        sections.pop()
    if len(sections) != 3:
        raise InvalidToken("Malformed JWT provided; expected three sections (header, payload, and signature)")
    header = _json_object(sections[0])
    alg = header.get("alg")
    if not isinstance(alg, str) or alg not in _KEY_TYPE:
        raise InvalidToken(f"the algorithm {alg!r} is not allowed")
    if header.get("crit") is not None:
        raise InvalidToken("critical headers are not understood")
    key = keys.select(header)
    if key is None:
        raise MissingKey(header.get("kid") if isinstance(header.get("kid"), str) else None)
    _verify(alg, key, sections)
    claims = _json_object(sections[1])
    expires_s = _verified_claims(claims, settings, now_ms // 1000)
    return _kafka_token(claims, settings, expires_s)


def _verify(alg: str, key: VerificationKey, sections: list[str]) -> None:
    algorithm = _ALGORITHMS[alg]
    verifier = key.key
    if key.kty == "OKP" and key.crv not in ("Ed25519", "Ed448"):
        raise InvalidToken("EdDSA needs an Ed25519 or Ed448 key")
    if key.kty == "RSA" and verifier.key_size < 2048:
        raise InvalidToken("An RSA key of size 2048 bits or larger MUST be used")
    if key.kty == "oct" and len(verifier) < _HMAC_BYTES[alg]:
        raise InvalidToken(f"A key of the same size as the hash output or larger MUST be used with {alg}")
    if alg in _CURVE and getattr(getattr(verifier, "curve", None), "key_size", 0) != {
            "ES256": 256, "ES384": 384, "ES512": 521}[alg]:
        raise InvalidToken(f"the key's curve is not {_CURVE[alg]}")
    signature = _base64url(sections[2])
    if not algorithm.verify(f"{sections[0]}.{sections[1]}".encode(), verifier, signature):
        raise InvalidToken("JWT rejected due to invalid signature")


def _verified_claims(claims: Mapping[str, Any], settings: JwtSettings, now_s: int) -> int:
    """jose4j's claim validators as Kafka builds them; the expiry in seconds."""
    skew = settings.clock_skew_s
    expires, issued, not_before = (_numeric_date(claims, name) for name in ("exp", "iat", "nbf"))
    if expires is None:
        raise InvalidToken("No Expiration Time (exp) claim present.")
    if issued is None:
        raise InvalidToken("No Issued At (iat) claim present.")
    if now_s - skew >= expires:
        raise InvalidToken("The JWT is no longer valid")
    if issued > expires:
        raise InvalidToken("The Expiration Time (exp) claim value cannot be before the Issued At (iat) claim value")
    if not_before is not None and now_s + skew < not_before:
        raise InvalidToken("The JWT is not yet valid")
    if settings.expected_audiences:
        audience = claims.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience
        if not isinstance(audiences, list) or not all(isinstance(item, str) for item in audiences):
            raise InvalidToken("No Audience (aud) claim present.")
        if not settings.expected_audiences.intersection(audiences):
            raise InvalidToken("Audience (aud) claim doesn't contain an acceptable identifier.")
    if settings.expected_issuer is not None and claims.get("iss") != settings.expected_issuer:
        raise InvalidToken("Issuer (iss) claim value is not the expected one.")
    for name in ("sub", "jti"):  # jose4j reads these as strings wherever they appear
        if name in claims and claims[name] is not None and not isinstance(claims[name], str):
            raise InvalidToken(f"The value of the '{name}' claim is not a String")
    return expires


def _kafka_token(claims: Mapping[str, Any], settings: JwtSettings, expires_s: int) -> AcceptedToken:
    raw_scope = claims.get(settings.scope_claim)
    items = [raw_scope] if isinstance(raw_scope, str) else raw_scope if isinstance(raw_scope, list) else []
    scope: set[str] = set()
    for item in items:
        if item is None:
            raise InvalidToken(f"{settings.scope_claim} value must be non-null")
        if not isinstance(item, str):  # Kafka casts each item to String: a ClassCastException it does not catch
            raise SaslAborted(f"a {settings.scope_claim} item that is not a string")
        trimmed = java_trim(item)
        if not trimmed or trimmed in scope:
            raise InvalidToken(f"{settings.scope_claim} value must be non-empty and without duplicates")
        scope.add(trimmed)
    subject = claims.get(settings.sub_claim)
    if not isinstance(subject, str) or not java_trim(subject):
        raise InvalidToken(f"{settings.sub_claim} value must be a non-empty string")
    expires_ms, issued_ms = _milliseconds(expires_s), _milliseconds(_numeric_date(claims, "iat") or 0)
    if expires_ms < 0 or issued_ms < 0:
        raise InvalidToken("exp and iat must be non-negative")
    return AcceptedToken(java_trim(subject), expires_ms, frozenset(scope))


def _numeric_date(claims: Mapping[str, Any], name: str) -> int | None:
    """jose4j's ``getNumericDateClaimValue``: a number's ``longValue`` in seconds; anything else refused."""
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidToken(f"The value of the '{name}' claim is not a Number")
    if isinstance(value, float):  # a double's longValue: toward zero, saturating
        return 0 if math.isnan(value) else 2**63 - 1 if value >= 2.0**63 else -(2**63) if value <= -(2.0**63) else (
            int(value))
    return _java_long(value)


def _milliseconds(seconds: int) -> int:
    """jose4j's ``NumericDate.getValueInMillis``, which throws where the milliseconds overflow a long (uncaught by
    Kafka: the connection closes)."""
    milliseconds = seconds * 1000
    if not -(2**63) <= milliseconds < 2**63:
        raise SaslAborted("a NumericDate past what a long holds in milliseconds")
    return milliseconds


def _java_long(value: int) -> int:
    """A Java long's arithmetic: wrapped into 64 bits."""
    return (value + 2**63) % 2**64 - 2**63


def _json_object(section: str) -> dict[str, Any]:
    try:
        value = json.loads(_base64url(section), object_pairs_hook=_unique_members,
                           parse_constant=refuse_constant)
    except (ValueError, RecursionError):
        raise InvalidToken("not a JSON object") from None
    if not isinstance(value, dict):
        raise InvalidToken("not a JSON object")
    return value


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if len(members) != len(pairs):  # jose4j's JSON reader refuses a member named twice
        raise ValueError("a member named twice")
    return members


def _base64url(text: str) -> bytes:
    try:
        return java_base64url(text)
    except ValueError:
        raise InvalidToken("not Base64URL") from None
