"""Listeners and where each connection is in Kafka's SASL exchange (KIP-43, KIP-152).

A PLAINTEXT listener's clients are ``User:ANONYMOUS`` from their first byte. On a SASL_PLAINTEXT listener a
connection may send only ApiVersions, SaslHandshake and SaslAuthenticate until it has authenticated; anything
else closes it, as Kafka closes it ("Unexpected Kafka request ... during SASL handshake"). A failed
authentication is answered SASL_AUTHENTICATION_FAILED after ``connection.failed.authentication.delay.ms`` on the
broker clock, then the connection closes; nothing more is read from it.

Mechanisms: PLAIN against the users of the listener's JAAS line (`core.security.sasl_plain`), SCRAM-SHA-256 and
SCRAM-SHA-512 (`core.security.scram_exchange`) against the credentials AlterUserScramCredentials stored
(`core.security.scram_credentials`), read at the moment the client names its user, or against a delegation token
when the client says ``tokenauth=true`` (`compat.delegation_tokens`): the client is then the token's owner, and
may not manage tokens. GSSAPI and OAUTHBEARER are not served.
"""

from __future__ import annotations

import enum
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from logwright.core.java_hash_order import java_map_order_of_strings
from logwright.core.security.sasl_plain import SaslFailed, plain_principal, plain_users
from logwright.core.security.scram_credentials import MECHANISM_NAMES
from logwright.core.security.scram_exchange import ScramSecret, ScramServer

PLAINTEXT, SASL_PLAINTEXT = "PLAINTEXT", "SASL_PLAINTEXT"
PLAIN = "PLAIN"
MECHANISMS = (PLAIN, *MECHANISM_NAMES.values())
"""Every mechanism logwright can serve (``sasl.enabled.mechanisms`` picks among them)."""
BEFORE_HANDSHAKE = frozenset({17, 18})
"""SaslHandshake and ApiVersions: all a SASL connection may send first."""
SASL_AUTHENTICATE = 36
ANONYMOUS = "ANONYMOUS"


@dataclass(frozen=True, slots=True)
class Listener:
    """One socket the broker serves on, by Kafka's listener name, and the address it gives clients."""

    name: str
    host: str
    port: int
    advertised_host: str
    advertised_port: int

    @property
    def sasl(self) -> bool:
        return self.name == SASL_PLAINTEXT


PLAIN_JAAS_KEY = "listener.name.sasl_plaintext.plain.sasl.jaas.config"


@dataclass(frozen=True, slots=True)
class SaslSettings:
    """The broker's SASL configuration, read once at start (the keys are static, as on Kafka)."""

    enabled: tuple[str, ...]
    plain_users: Mapping[str, str]
    max_receive_size: int
    """``sasl.server.max.receive.size``: the largest frame a SASL connection may send before it authenticates."""

    @classmethod
    def read(cls, broker_config: Callable[[str], str]) -> SaslSettings:
        enabled = tuple(name.strip() for name in broker_config("sasl.enabled.mechanisms").split(",") if name.strip())
        return cls(enabled, plain_users(broker_config(PLAIN_JAAS_KEY)) if PLAIN in enabled else {},
                   int(broker_config("sasl.server.max.receive.size")))


class Stage(enum.Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    AUTHENTICATED = "authenticated"
    FAILED = "failed"


class ConnectionAuthentication:
    """One connection's SASL state; the handlers of SaslHandshake and SaslAuthenticate move it."""

    def __init__(self, listener: Listener, enabled: tuple[str, ...], plain_users: Mapping[str, str],
                 scram_secret: Callable[[str, bool, int], ScramSecret | None],
                 close: Callable[[str], None] = lambda reason: None) -> None:
        self.listener = listener
        self.close = close
        """Close the connection once the answers owed (this one's included) are sent, for this reason."""
        self.on_authenticated: Callable[[], None] = lambda: None
        """Called once the client has authenticated (the server lifts the frame bound it read with until then)."""
        self.enabled = tuple(java_map_order_of_strings(enabled))
        """In the order Kafka's SaslHandshake lists them (its ``HashSet``'s)."""
        self._plain_users = plain_users
        self._scram_secret = scram_secret
        self.stage = Stage.HANDSHAKE if listener.sasl else Stage.AUTHENTICATED
        self.principal = ANONYMOUS
        """The user this connection is (the name of Kafka's ``User:<name>`` principal)."""
        self.principal_type = "User"
        """The principal's type: User, but for a token whose owner is of another type."""
        self.token_authenticated = False
        """Authenticated with a delegation token (which may not create, renew, expire or describe tokens)."""
        self.mechanism: str | None = None
        self._scram: ScramServer | None = None
        self._scram_started = False

    @property
    def authenticated(self) -> bool:
        return self.stage is Stage.AUTHENTICATED

    def allows(self, api_key: int) -> bool:
        """Whether a request of this key may start now: before the handshake ApiVersions and SaslHandshake,
        then SaslAuthenticate only, as Kafka's SaslServerAuthenticator reads them."""
        stage = self.stage
        return stage is Stage.AUTHENTICATED or (stage is Stage.HANDSHAKE and api_key in BEFORE_HANDSHAKE) or (
            stage is Stage.AUTHENTICATE and api_key == SASL_AUTHENTICATE)

    @property
    def answers_refusal(self) -> bool:
        """A request refused now is answered with its error response (ILLEGAL_SASL_STATE) before the connection
        closes, as Kafka answers one in the middle of an exchange; before the handshake it closes unanswered."""
        return self.stage is Stage.AUTHENTICATE

    def handshake(self, mechanism: str) -> bool:
        """A SaslHandshake naming ``mechanism``: True if the exchange may go on with it. False closes the
        connection after the answer, as on Kafka."""
        if self.stage is not Stage.HANDSHAKE or mechanism not in self.enabled:
            self.stage = Stage.FAILED
            return False
        self.mechanism = mechanism
        self.stage = Stage.AUTHENTICATE
        if mechanism != PLAIN:
            code = next(code for code, name in MECHANISM_NAMES.items() if name == mechanism)
            self._scram = ScramServer(code, lambda name, token: self._scram_secret(name, token, code),
                                      secrets.token_urlsafe(24))
        return True

    def authenticate(self, token: bytes) -> tuple[bytes, bool]:
        """One SaslAuthenticate token: the bytes to answer and whether the client is now authenticated. Raises
        `SaslFailed` (the stage is then FAILED)."""
        try:
            if self.mechanism == PLAIN:
                self.principal = plain_principal(token, self._plain_users)
                self._authenticated()
                return b"", True
            return self._scram_step(token)
        except SaslFailed:
            self.stage = Stage.FAILED
            raise
        except Exception as error:  # noqa: BLE001 - whatever a hostile token makes the parser raise is a refusal
            self.stage = Stage.FAILED
            raise SaslFailed(None) from error

    def _scram_step(self, token: bytes) -> tuple[bytes, bool]:
        server = self._scram
        if server is None:
            raise SaslFailed(None)
        if not self._scram_started:
            self._scram_started = True
            return server.first(token), False
        final, secret = server.final(token)
        self.principal, self.principal_type = secret.principal, secret.principal_type
        self.token_authenticated = server.token_authenticated
        self._scram = None
        self._authenticated()
        return final, True

    def _authenticated(self) -> None:
        self.stage = Stage.AUTHENTICATED
        self.on_authenticated()

