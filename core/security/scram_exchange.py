"""The server side of a SCRAM exchange (RFC 5802, RFC 7677) as Kafka's ScramSaslServer runs it, without I/O: the
client's first message read with Kafka's grammar (a SASL name with ``=2C``/``=3D`` escapes, no channel binding, the
extensions of KIP-84, of which only ``tokenauth`` is accepted), the server's first message, the client's proof
checked against the stored key, the server's signature.

Written by hand: the SCRAM library logwright used first (scramp) refuses Kafka's extensions
(``tokenauth=true``, sent by every client authenticating with a delegation token) and prepares user names, which
Kafka does not; the exchange is four HMACs and two regular expressions.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Callable
from dataclasses import dataclass

from logwright.core.security.sasl_plain import SaslFailed
from logwright.core.security.scram_credentials import HASHES, MIN_ITERATIONS

_SASL_NAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_VALUE = r"[\x01-\x2B\x2D-\x7F]+"
_PRINTABLE = r"[\x21-\x2B\x2D-\x7E]+"
_BASE64 = r"[A-Za-z0-9+/]+=*"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASL_NAME}))?,(?P<bare>(?:m={_VALUE},)?n=(?P<name>{_SASL_NAME}),r=(?P<nonce>{_PRINTABLE})"
    rf"(?P<extensions>{_EXTENSIONS}))")
_CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}),p=(?P<proof>{_BASE64})")
SUPPORTED_EXTENSIONS = frozenset({"tokenauth"})


@dataclass(frozen=True, slots=True)
class ScramSecret:
    """What the server checks a client against: a stored credential, or a delegation token's (its owner then is
    the user the client authenticates as)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int
    principal: str
    principal_type: str = "User"
    expires_ms: int | None = None
    """When the credential itself expires (a delegation token's expiry): the session ends then at the latest."""


SecretLookup = Callable[[str, bool], ScramSecret | None]
"""``(user or token id, tokenauth) -> secret``: None when there is none (or the token has expired)."""


def sasl_name(text: str) -> str:
    """A user name as SCRAM writes it (``,`` and ``=`` escaped)."""
    return text.replace("=", "=3D").replace(",", "=2C")


def _user(name: str) -> str:
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """One exchange: `first` answers the client's first message, `final` its proof. Every failure is `SaslFailed`
    without words for the client (Kafka tells a SCRAM client only that authentication failed), but an authorization
    id other than the user, which Kafka names."""

    def __init__(self, mechanism: int, lookup: SecretLookup, server_nonce: str) -> None:
        self._hash = HASHES[mechanism]
        self._lookup = lookup
        self._server_nonce = server_nonce
        self._secret: ScramSecret | None = None
        self._bare = ""
        self._server_first = ""
        self._nonce = ""
        self.token_authenticated = False

    def first(self, message: bytes) -> bytes:
        match = _CLIENT_FIRST.fullmatch(_text(message))
        if match is None:
            raise SaslFailed(None)
        extensions = dict(pair.split("=", 1) for pair in match["extensions"].split(",")[1:])
        if not SUPPORTED_EXTENSIONS.issuperset(extensions):
            raise SaslFailed(None)
        self.token_authenticated = extensions.get("tokenauth", "").lower() == "true"
        user = _user(match["name"])
        secret = self._lookup(user, self.token_authenticated)
        if secret is None or secret.iterations < MIN_ITERATIONS:
            raise SaslFailed(None)
        authorization_id = _user(match["authzid"]) if match["authzid"] else ""
        if authorization_id and authorization_id != (secret.principal if self.token_authenticated else user):
            raise SaslFailed("Authentication failed: Client requested an authorization id that is different from "
                             "username")
        self._secret, self._bare = secret, match["bare"]
        self._nonce = match["nonce"] + self._server_nonce
        salt = base64.b64encode(secret.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={secret.iterations}"
        return self._server_first.encode()

    def final(self, message: bytes) -> tuple[bytes, ScramSecret]:
        """The server's final message and the secret the client proved it holds (whose principal it is)."""
        secret = self._secret
        match = _CLIENT_FINAL.fullmatch(_text(message))
        if secret is None or match is None or match["nonce"] != self._nonce:
            raise SaslFailed(None)
        auth_message = f"{self._bare},{self._server_first},{match['without_proof']}".encode()
        try:
            proof = base64.b64decode(match["proof"], validate=True)
        except binascii.Error as error:
            raise SaslFailed(None) from error
        signature = hmac.new(secret.stored_key, auth_message, self._hash).digest()
        if len(proof) != len(signature):
            raise SaslFailed(None)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self._hash, client_key).digest(), secret.stored_key):
            raise SaslFailed(None)
        self._secret = None
        server_signature = hmac.new(secret.server_key, auth_message, self._hash).digest()
        return b"v=" + base64.b64encode(server_signature), secret


def _text(message: bytes) -> str:
    try:
        return message.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SaslFailed(None) from error
