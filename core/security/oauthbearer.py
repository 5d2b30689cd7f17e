"""SASL/OAUTHBEARER (RFC 7628, KIP-255) as Kafka's broker serves it without a callback handler configured: the
client's first message read with Kafka's grammar, its token checked as Kafka's unsecured validator
(``OAuthBearerUnsecuredValidatorCallbackHandler``) checks it. An unsecured token is an unsigned JWS (``alg``
``none``): anyone may claim any principal, so it is for development and tests, as on Kafka.

What the client is told follows Kafka's server: a first message it cannot read fails the authentication with
Kafka's hidden reason; a token it refuses is answered with RFC 7628's error challenge (``{"status":"invalid_token"}``,
or ``insufficient_scope`` naming the scope required), which the client acknowledges with a single ``0x01`` to be
refused with that challenge as the message (or retries with a new first message); an authorization id other than
the token's principal is refused with Kafka's words. Where Kafka's server trips over a token (no ``alg`` in its
header, an ``auth`` scheme other than Bearer) it closes the connection unanswered: `SaslAborted`.

The token is read with Java's quirks, since they decide which tokens Kafka accepts: Java's Base64URL decoder (no
``+`` or ``/``; padding optional but exact), Jackson's reading of JSON (the first value, trailing text
ignored; booleans and null as text; a member that is an object as ""), ``Math.round`` of seconds to milliseconds,
Java's ``trim``. Times are the broker clock's.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from logwright.core.errors import InvalidConfig
from logwright.core.java_text import java_utf8
from logwright.core.security.jaas import login_module_options
from logwright.core.security.sasl_plain import SaslAborted, SaslFailed

OAUTHBEARER = "OAUTHBEARER"
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
UNSECURED_VALIDATOR = ("org.apache.kafka.common.security.oauthbearer.internals.unsecured."
                       "OAuthBearerUnsecuredValidatorCallbackHandler")
"""Kafka's default server callback handler for OAUTHBEARER: the one logwright serves."""
CONTROL_A = b"\x01"

_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_KVPAIR = r"[A-Za-z]+=[\x21-\x7e \t\r\n]+\x01"
_FIRST_MESSAGE = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<kvpairs>(?:{_KVPAIR})*)\x01")
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)", re.ASCII)
_SCOPE_ITEM = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
_URL_BASE64 = re.compile(r"[A-Za-z0-9_-]*")
_JAVA_TRIMMED = "".join(chr(code) for code in range(0x21))
_LONG_MAX, _LONG_MIN = 2**63 - 1, -(2**63)


@dataclass(frozen=True, slots=True)
class FirstMessage:
    """What a client's first OAUTHBEARER message carries (RFC 7628 section 3.1)."""

    token: str
    authorization_id: str
    """As sent (``=2C``/``=3D`` escapes kept, as Kafka compares it); "" when the client named none."""
    extensions: Mapping[str, str]
    """The key-value pairs beside ``auth``; the unsecured validator accepts every one, as Kafka's."""


def read_first_message(data: bytes) -> FirstMessage:
    """The client's first message, read with Kafka's grammar. Raises `SaslFailed` (Kafka's hidden reason) where it
    does not parse, `SaslAborted` where Kafka's reader itself fails (a scheme other than Bearer)."""
    match = _FIRST_MESSAGE.fullmatch(data.decode("utf-8", errors="replace"))
    if match is None:
        raise SaslFailed(None)
    pairs = {key: value for key, _, value in (pair.partition("=") for pair in match.group("kvpairs").split("\x01")
                                                if pair)}
    auth = pairs.pop("auth", None)
    if auth is None:
        raise SaslFailed(None)
    scheme_and_token = _AUTH.fullmatch(auth)
    if scheme_and_token is None:
        raise SaslFailed(None)
    if scheme_and_token.group("scheme").lower() != "bearer":
        # Kafka formats its message with a group of the other pattern, which throws: the connection just closes
        raise SaslAborted("an OAUTHBEARER auth scheme other than Bearer")
    return FirstMessage(scheme_and_token.group("token"), match.group("authzid") or "", pairs)


@dataclass(frozen=True, slots=True)
class UnsecuredValidatorOptions:
    """The ``unsecuredValidator*`` options of the listener's OAuthBearerLoginModule JAAS line."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    clock_skew_ms: int = 0

    @classmethod
    def from_jaas(cls, jaas: str) -> UnsecuredValidatorOptions:
        """Read from a JAAS line ("" gives the defaults). Raises `InvalidConfig` for a clock skew that is not a
        non-negative integer or a required scope item RFC 6749 does not allow (Kafka fails every authentication
        then; logwright refuses to start)."""
        options = login_module_options(jaas, LOGIN_MODULE)

        def option(name: str, default: str) -> str:
            value = java_trim(options.get("unsecuredValidator" + name, ""))
            return value or default

        required = tuple(item for item in option("RequiredScope", "").split(" ") if item)
        bad = [item for item in required if not _SCOPE_ITEM.fullmatch(item)]
        if bad:
            raise InvalidConfig(f"Invalid scope value: {bad[0]}")
        skew = option("AllowableClockSkewMs", "0")
        if not re.fullmatch(r"[+-]?[0-9]+", skew) or not 0 <= int(skew) <= 2**31 - 1:
            raise InvalidConfig(f"Allowable clock skew millis must be a non-negative int: {skew}")
        return cls(option("PrincipalClaimName", "sub"), option("ScopeClaimName", "scope"), required, int(skew))


@dataclass(frozen=True, slots=True)
class AcceptedToken:
    """A token a validator accepted (the unsecured one here, the signed one in `core.security.oauthbearer_jwt`)."""

    principal: str
    expires_ms: int
    """Its ``exp`` in milliseconds: the session ends then (KIP-368), or sooner with ``connections.max.reauth.ms``."""
    scope: frozenset[str]


class InvalidToken(Exception):  # noqa: N818 - a refusal, answered as RFC 7628's error challenge
    """A token the validator refuses; ``reason`` is what Kafka logs, ``challenge`` what the client is sent."""

    def __init__(self, reason: str, required_scope: tuple[str, ...] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        if required_scope is None:
            self.challenge = '{"status":"invalid_token"}'
        else:  # Kafka quotes Java's List.toString of the scope required
            self.challenge = '{"status":"insufficient_scope", "scope":"[' + ", ".join(required_scope) + ']"}'


def validate_unsecured(token: str, options: UnsecuredValidatorOptions, now_ms: int) -> AcceptedToken:
    """Check ``token`` as Kafka's unsecured validator checks it, in its order. Raises `InvalidToken`, or
    `SaslAborted` for a header without ``alg`` (Kafka's null check throws there)."""
    if ".." in token:
        raise InvalidToken("Malformed compact serialization contains '..'")
    splits = token.split(".")
    while splits and not splits[-1]:  # Java's String.split drops trailing empty strings...
        splits.pop()
    if token.endswith("."):  # ...and Kafka adds one back for an empty signature
        splits.append("")
    if len(splits) != 3:
        raise InvalidToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
    header, claims = _members(splits[0]), _members(splits[1])
    if "alg" not in header:
        raise SaslAborted("JWS header must have an Algorithm value")
    if header["alg"] != "none":
        raise InvalidToken("Unsecured JWS must have 'none' for an algorithm")
    if splits[2]:
        raise InvalidToken("Unsecured JWS must not contain a digital signature")
    scope = _scope(claims, options.scope_claim)
    expires = _claim(claims, "exp", (int, float))
    if expires is None:
        raise InvalidToken("No expiration time in JWT")
    principal = _claim(claims, options.principal_claim, (str,))
    if principal is None or not java_trim(principal):
        raise InvalidToken(f"No principal name in JWT claim: {options.principal_claim}")
    issued = _claim(claims, "iat", (int, float))
    skew = options.clock_skew_ms
    if issued is not None and 1000 * _double(issued) > now_ms + skew:
        raise InvalidToken("The Issued At value was after the indicated time plus allowable clock skew")
    if now_ms - skew >= 1000 * _double(expires):
        raise InvalidToken("The indicated time minus allowable clock skew was on or after the Expiration Time value")
    if issued is not None and _double(expires) <= _double(issued):
        raise InvalidToken("The Expiration Time time was not after the Issued At time")
    for required in options.required_scope:
        if required not in scope:
            raise InvalidToken(f"The provided scope was missing a required scope ({required})", options.required_scope)
    return AcceptedToken(principal, _java_round(1000 * _double(expires)), scope)


class OAuthBearerServer:
    """One OAUTHBEARER exchange on a connection (Kafka's ``OAuthBearerSaslServer``), its tokens checked by
    ``validate`` (raising `InvalidToken` or `SaslAborted`): the unsecured validator, or the signed one."""

    def __init__(self, validate: Callable[[str], AcceptedToken]) -> None:
        self._validate = validate
        self._challenge: str | None = None

    def step(self, data: bytes) -> tuple[bytes, AcceptedToken | None]:
        """The answer to one client message and, once authenticated, the token. A refused token is answered with
        its error challenge (None: not authenticated); the client's ``0x01`` after it raises `SaslFailed` with the
        challenge as Kafka's message. Raises `SaslFailed` or `SaslAborted` as `read_first_message`."""
        if data == CONTROL_A and self._challenge is not None:
            raise SaslFailed(self._challenge)
        self._challenge = None
        message = read_first_message(data)
        try:
            token = self._validate(message.token)
        except InvalidToken as refused:
            self._challenge = refused.challenge
            return refused.challenge.encode(), None
        if message.authorization_id and message.authorization_id != token.principal:
            raise SaslFailed(f"Authentication failed: Client requested an authorization id "
                             f"({message.authorization_id}) that is different from the token's principal name "
                             f"({java_utf8(token.principal)})")
        return b"", token


def _members(split: str) -> dict[str, Any]:
    """A token section's JSON object's members as Kafka's ``toMap`` gives them."""
    try:
        raw = java_base64url(split)
    except ValueError:
        raise InvalidToken("malformed Base64 URL encoded value") from None
    try:
        text = raw.decode(json.detect_encoding(raw)).lstrip(" \t\r\n")  # UTF-8, -16 or -32, as Jackson detects
        if not text:  # Jackson reads no content as a missing node: no members
            return {}
        value, _ = _JACKSON.raw_decode(text)  # the first value; what follows is ignored
    except (ValueError, RecursionError):
        raise InvalidToken("malformed JSON") from None
    if not isinstance(value, dict):
        return {}
    return {name: _jackson_value(member, top=True) for name, member in value.items()}


def refuse_constant(name: str) -> Any:
    """JSON's parser hook for NaN and Infinity, which neither Jackson nor jose4j reads."""
    raise ValueError(f"{name} is not JSON")


def _bounded(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """Jackson's default bound on a number's length (``StreamReadConstraints``: 1,000 characters)."""
    def number(text: str) -> Any:
        if len(text) > _JACKSON_NUMBER_LENGTH:
            raise ValueError("number too long")
        return parse(text)

    return number


_JACKSON_NUMBER_LENGTH = 1000
_JACKSON = json.JSONDecoder(parse_constant=refuse_constant, parse_int=_bounded(int), parse_float=_bounded(float))


def _jackson_value(value: Any, top: bool = False) -> Any:
    """Kafka's ``convert``: arrays as lists of each element's text, numbers as numbers, anything else as text."""
    if isinstance(value, list) and top:
        return [_jackson_value(element) for element in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return value if top else str(value)
    if isinstance(value, str):
        return value
    return ""  # an object, or an array inside an array: Jackson's asText of a container


def _claim(claims: Mapping[str, Any], name: str, types: tuple[type, ...]) -> Any:
    value = claims.get(name)
    if value is not None and not isinstance(value, types):
        raise InvalidToken(f"The '{name}' claim was not of the type expected")
    return value


def _scope(claims: Mapping[str, Any], name: str) -> frozenset[str]:
    value = _claim(claims, name, (str, list))
    if isinstance(value, str):
        return frozenset({java_trim(value)}) if java_trim(value) else frozenset()
    return frozenset(java_trim(item) for item in value or () if java_trim(item))


def java_base64url(text: str) -> bytes:
    """``java.util.Base64.getUrlDecoder().decode``: the URL alphabet; padding optional, exact where present."""
    data, padding, rest = text.partition("=")
    if not _URL_BASE64.fullmatch(data) or len(data) % 4 == 1:
        raise ValueError("not Base64URL")
    if padding and rest != {2: "=", 3: ""}.get(len(data) % 4):
        raise ValueError("wrong padding")
    try:
        return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
    except binascii.Error as error:
        raise ValueError(str(error)) from None


def java_trim(text: str) -> str:
    """``String.trim``: every character up to the space, control characters included."""
    return text.strip(_JAVA_TRIMMED)


def _double(number: int | float) -> float:
    """``Number.doubleValue``: an integer too large for a double is infinite."""
    try:
        return float(number)
    except OverflowError:
        return math.inf if number > 0 else -math.inf


def _java_round(value: float) -> int:
    """``Math.round`` of a double to a long (saturating)."""
    if math.isnan(value):
        return 0
    if value >= _LONG_MAX:
        return _LONG_MAX
    if value <= _LONG_MIN:
        return _LONG_MIN
    return math.floor(value + 0.5)
