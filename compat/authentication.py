"""Listeners and where each connection is in Kafka's SASL exchange (KIP-43, KIP-152).

A PLAINTEXT listener's clients are ``User:ANONYMOUS`` from their first byte, an SSL listener's the subject of the
certificate they gave (`compat.tls`). On a SASL_PLAINTEXT listener a
connection may send only ApiVersions, SaslHandshake and SaslAuthenticate until it has authenticated; anything
else closes it, as Kafka closes it ("Unexpected Kafka request ... during SASL handshake"). A failed
authentication is answered SASL_AUTHENTICATION_FAILED after ``connection.failed.authentication.delay.ms`` on the
broker clock, then the connection closes; nothing more is read from it.

Mechanisms: PLAIN against the users of the listener's JAAS line (`core.security.sasl_plain`), SCRAM-SHA-256 and
SCRAM-SHA-512 (`core.security.scram_exchange`) against the credentials AlterUserScramCredentials stored
(`core.security.scram_credentials`), read at the moment the client names its user, or against a delegation token
when the client says ``tokenauth=true`` (`compat.delegation_tokens`): the client is then the token's owner, and
may not manage tokens; OAUTHBEARER with Kafka's default, unsecured validator (`core.security.oauthbearer`) or, where
a listener names Kafka's validator, tokens signed by a JWKS's keys (`core.security.oauthbearer_jwt`, keys from
`compat.jwks_endpoint`): the token's principal is the client, its expiry the session's end. GSSAPI is not served.
"""

from __future__ import annotations

import enum
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from logwright.core.errors import InvalidConfig
from logwright.core.java_hash_order import java_map_order_of_strings
from logwright.core.java_text import java_utf8
from logwright.core.security.oauthbearer import (
    OAUTHBEARER,
    AcceptedToken,
    OAuthBearerServer,
    UnsecuredValidatorOptions,
    validate_unsecured,
)
from logwright.core.security.oauthbearer_jwt import SIGNED_VALIDATOR, JwtSettings
from logwright.core.security.sasl_plain import SaslAborted, SaslFailed, plain_principal, plain_users
from logwright.core.security.scram_credentials import MECHANISM_NAMES
from logwright.core.security.scram_exchange import ScramSecret, ScramServer

PLAINTEXT, SASL_PLAINTEXT, SSL, SASL_SSL = "PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL"
PLAIN = "PLAIN"
MECHANISMS = (PLAIN, *MECHANISM_NAMES.values(), OAUTHBEARER)
"""Every mechanism logwright can serve (``sasl.enabled.mechanisms`` picks among them)."""
BEFORE_HANDSHAKE = frozenset({17, 18})
"""SaslHandshake and ApiVersions: all a SASL connection may send first."""
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
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
        """SASL_PLAINTEXT or SASL_SSL: the client is the user it authenticates as."""
        return self.name in (SASL_PLAINTEXT, SASL_SSL)

    @property
    def encrypted(self) -> bool:
        """SSL or SASL_SSL (`compat.tls`): answers go through the TLS transport (no sendfile); on SSL the client is
        its certificate's subject."""
        return self.name in (SSL, SASL_SSL)


def plain_jaas_key(listener_name: str) -> str:
    """The broker key holding a SASL listener's PLAIN users, as Kafka names it."""
    return f"listener.name.{listener_name.lower()}.plain.sasl.jaas.config"


PLAIN_JAAS_KEY = plain_jaas_key(SASL_PLAINTEXT)


def oauthbearer_handler_key(listener_name: str) -> str:
    """The broker key naming a SASL listener's OAUTHBEARER server callback handler class."""
    return f"listener.name.{listener_name.lower()}.oauthbearer.sasl.server.callback.handler.class"


def oauthbearer_jaas_key(listener_name: str) -> str:
    """The broker key holding a SASL listener's OAuthBearerLoginModule line (its unsecured validator's options)."""
    return f"listener.name.{listener_name.lower()}.oauthbearer.sasl.jaas.config"


def oauthbearer_config(broker_config: Callable[[str], str], listener_name: str) -> Callable[[str], str]:
    """A listener's OAUTHBEARER keys as Kafka reads them: ``listener.name.L.oauthbearer.KEY`` where set, else
    ``KEY``."""
    def config(key: str) -> str:
        return broker_config(f"listener.name.{listener_name.lower()}.oauthbearer.{key}") or broker_config(key)

    return config


@dataclass(frozen=True, slots=True)
class SignedOAuthBearer:
    """How a listener checks signed OAUTHBEARER tokens: the claims (`JwtSettings`) and where its keys are."""

    jwt: JwtSettings
    jwks_url: str
    refresh_ms: int
    backoff_ms: int
    backoff_max_ms: int

    @classmethod
    def read(cls, config: Callable[[str], str]) -> SignedOAuthBearer:
        url = config("sasl.oauthbearer.jwks.endpoint.url").strip()
        if not url:
            raise InvalidConfig('The OAuth validator for the broker requires "sasl.oauthbearer.jwks.endpoint.url" '
                                "to be configured so that JWT signatures can be verified, but it was not set")
        return cls(JwtSettings.read(config), url, int(config("sasl.oauthbearer.jwks.endpoint.refresh.ms")),
                   int(config("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms")),
                   int(config("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms")))

    @property
    def endpoint(self) -> tuple[str, int, int, int]:
        """What names its key source (listeners configured alike share one)."""
        return self.jwks_url, self.refresh_ms, self.backoff_ms, self.backoff_max_ms


@dataclass(frozen=True, slots=True)
class SaslSettings:
    """The broker's SASL configuration, read once at start (the keys are static, as on Kafka)."""

    enabled: tuple[str, ...]
    plain_users: Mapping[str, str]
    """The SASL_PLAINTEXT listener's PLAIN users."""
    ssl_plain_users: Mapping[str, str]
    """The SASL_SSL listener's (each listener has its own JAAS line, as on Kafka)."""
    oauthbearer: Mapping[str, UnsecuredValidatorOptions]
    """The unsecured validator's options of each SASL listener that uses it, by listener name."""
    signed_oauthbearer: Mapping[str, SignedOAuthBearer]
    """The SASL listeners whose OAUTHBEARER tokens must be signed (their callback handler is Kafka's
    ``OAuthBearerValidatorCallbackHandler``) and how each checks them."""
    max_receive_size: int
    """``sasl.server.max.receive.size``: the largest frame a SASL connection may send before it authenticates."""
    reauthentication_ms: int
    """``connections.max.reauth.ms``: the longest session before the client must re-authenticate (0: no limit)."""

    @classmethod
    def read(cls, broker_config: Callable[[str], str]) -> SaslSettings:
        enabled = tuple(name.strip() for name in broker_config("sasl.enabled.mechanisms").split(",") if name.strip())
        signed = {name: SignedOAuthBearer.read(oauthbearer_config(broker_config, name))
                  for name in (SASL_PLAINTEXT, SASL_SSL) if OAUTHBEARER in enabled
                  and broker_config(oauthbearer_handler_key(name)) == SIGNED_VALIDATOR}
        oauthbearer = {name: UnsecuredValidatorOptions.from_jaas(broker_config(oauthbearer_jaas_key(name)))
                       for name in (SASL_PLAINTEXT, SASL_SSL) if name not in signed} if OAUTHBEARER in enabled else {}
        return cls(enabled, plain_users(broker_config(PLAIN_JAAS_KEY)) if PLAIN in enabled else {},
                   plain_users(broker_config(plain_jaas_key(SASL_SSL))) if PLAIN in enabled else {}, oauthbearer,
                   signed,
                   int(broker_config("sasl.server.max.receive.size")),
                   int(broker_config("connections.max.reauth.ms")))


class Stage(enum.Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    AUTHENTICATED = "authenticated"
    FAILED = "failed"


class HandshakeOutcome(enum.Enum):
    GO_ON = "go on"
    UNSUPPORTED = "unsupported"
    """The mechanism is not enabled: answered with the enabled ones, then the connection closes."""
    ILLEGAL = "illegal"
    """No exchange to begin (a PLAINTEXT listener, or a session that may not re-authenticate now)."""


LONGEST_SESSION_MS = (2**63 - 1) // 1_000_000
"""Kafka times a session in nanoseconds of a long: a credential lasting longer (an OAUTHBEARER token expiring ~292
years ahead) overflows its arithmetic and the connection closes unanswered; logwright closes it too."""
REAUTHENTICATION_INTERVAL_MS = 1_000
"""Kafka lets a connection begin re-authenticating at most once a second."""


class ConnectionAuthentication:
    """One connection's SASL state; the handlers of SaslHandshake and SaslAuthenticate move it.

    A session may expire (KIP-368): with ``connections.max.reauth.ms`` set, or when the client authenticated with a
    delegation token (its expiry), the session lasts the shorter of the two, told to the client as
    ``session_lifetime_ms``. A client re-authenticates by a new handshake on the same connection (at most once a
    second; the same mechanism and principal, or the exchange fails); past its session, any other request closes the
    connection unanswered, as Kafka's socket server closes it. Expiry reads the broker clock.
    """

    def __init__(self, listener: Listener, enabled: tuple[str, ...], plain_users: Mapping[str, str],
                 scram_secret: Callable[[str, bool, int], ScramSecret | None],
                 close: Callable[[str], None] = lambda reason: None, reauthentication_ms: int = 0,
                 now_ms: Callable[[], int] = lambda: 0,
                 oauthbearer: Callable[[str], AcceptedToken] | None = None) -> None:
        self.listener = listener
        self.close = close
        """Close the connection once the answers owed (this one's included) are sent, for this reason."""
        self.on_authenticated: Callable[[], None] = lambda: None
        """Called once the client has authenticated (the server lifts the frame bound it read with until then)."""
        self.on_reauthenticating: Callable[[], None] = lambda: None
        """Called as a re-authentication begins (the server bounds its frames again until it has ended, as Kafka
        reads a re-authenticating connection with ``sasl.server.max.receive.size``)."""
        self.enabled = tuple(java_map_order_of_strings(enabled))
        """In the order Kafka's SaslHandshake lists them (its ``HashSet``'s)."""
        self._plain_users = plain_users
        self._scram_secret = scram_secret
        self._validate_oauthbearer = oauthbearer or (
            lambda token: validate_unsecured(token, UnsecuredValidatorOptions(), now_ms()))
        """Checks an OAUTHBEARER token: the listener's validator (by default the unsecured one's defaults)."""
        self._oauthbearer: OAuthBearerServer | None = None
        self._reauthentication_ms = reauthentication_ms
        self._now_ms = now_ms
        self.principal = ANONYMOUS
        """The user this connection is (the name of Kafka's ``User:<name>`` principal)."""
        self.principal_type = "User"
        """The principal's type: User, but for a token whose owner is of another type."""
        self.token_authenticated = False
        """Authenticated with a delegation token (which may not create, renew, expire or describe tokens)."""
        self.mechanism: str | None = None
        self.session_expires_ms: int | None = None
        """When the session ends unless the client re-authenticates (None: never)."""
        self.session_lifetime_ms = 0
        """What the last successful SaslAuthenticate tells the client (0: no expiry)."""
        self.reauthenticating = False
        self._reauthentication_started_ms: int | None = None
        self._previous: tuple[str, str, str | None] = ("", "", None)
        self._scram: ScramServer | None = None
        self._scram_started = False
        self.unframed = False
        """The exchange under way began with SaslHandshake v0: its tokens come bare, each framed by its size only
        (`request_dispatch`), until it ends."""
        self._stage = Stage.HANDSHAKE if listener.sasl else Stage.AUTHENTICATED
        self.gated = listener.sasl
        """Requests must be checked (`allows`): not yet authenticated, or a session that expires. False for a
        PLAINTEXT connection and a session without expiry: the hot path looks at this one attribute."""

    @property
    def stage(self) -> Stage:
        return self._stage

    @stage.setter
    def stage(self, stage: Stage) -> None:
        self._stage = stage
        self.gated = stage is not Stage.AUTHENTICATED or self.session_expires_ms is not None

    @property
    def authenticated(self) -> bool:
        return self._stage is Stage.AUTHENTICATED

    def allows(self, api_key: int) -> bool:
        """Whether a request of this key may start now: before the handshake ApiVersions and SaslHandshake, then
        SaslAuthenticate only, as Kafka's SaslServerAuthenticator reads them; once the session has expired, only a
        SaslHandshake (which re-authenticates)."""
        stage = self._stage
        if stage is Stage.AUTHENTICATED:
            expires = self.session_expires_ms
            return expires is None or api_key == SASL_HANDSHAKE or self._now_ms() <= expires
        return (stage is Stage.HANDSHAKE and api_key in BEFORE_HANDSHAKE) or (
            stage is Stage.AUTHENTICATE and api_key == SASL_AUTHENTICATE)

    @property
    def answers_refusal(self) -> bool:
        """A request refused now is answered with its error response (ILLEGAL_SASL_STATE) before the connection
        closes, as Kafka answers one in the middle of an exchange; before the handshake, or past the session, it
        closes unanswered."""
        return self._stage is Stage.AUTHENTICATE

    def handshake(self, mechanism: str) -> HandshakeOutcome:
        """A SaslHandshake naming ``mechanism``. On an authenticated connection it begins re-authentication where
        the session expires and the last one began a second ago or more; otherwise it is ILLEGAL (answered so, the
        connection kept, as Kafka answers it)."""
        if self._stage is Stage.AUTHENTICATED:
            now = self._now_ms()
            started = self._reauthentication_started_ms
            if self.session_expires_ms is None or (
                    started is not None and now - started < REAUTHENTICATION_INTERVAL_MS):
                return HandshakeOutcome.ILLEGAL
            self._reauthentication_started_ms = now
            self._previous = (self.principal_type, self.principal, self.mechanism)
            self.reauthenticating = True
            self.stage = Stage.HANDSHAKE
            self.on_reauthenticating()
        if self._stage is not Stage.HANDSHAKE or mechanism not in self.enabled:
            self.stage = Stage.FAILED
            return HandshakeOutcome.UNSUPPORTED
        self.mechanism = mechanism
        self.stage = Stage.AUTHENTICATE
        self._scram, self._scram_started, self._oauthbearer = None, False, None
        if mechanism == OAUTHBEARER:
            self._oauthbearer = OAuthBearerServer(self._validate_oauthbearer)
        elif mechanism != PLAIN:
            code = next(code for code, name in MECHANISM_NAMES.items() if name == mechanism)
            self._scram = ScramServer(code, lambda name, token: self._scram_secret(name, token, code),
                                      secrets.token_urlsafe(24))
        return HandshakeOutcome.GO_ON

    @property
    def mechanism_changed(self) -> bool:
        """A re-authentication with another mechanism than the session's: Kafka closes the connection at its first
        token, unanswered."""
        return self.reauthenticating and self.mechanism != self._previous[2]

    def authenticate(self, token: bytes) -> tuple[bytes, bool]:
        """One SaslAuthenticate token: the bytes to answer and whether the client is now authenticated (then
        `session_lifetime_ms` says for how long: told to clients of SaslAuthenticate v1+, ended on time for every
        client, as Kafka does). Raises `SaslFailed`, or `SaslAborted` where Kafka closes the connection unanswered
        (the stage is then FAILED)."""
        try:
            if self.mechanism == PLAIN:
                self._authenticated(("User", plain_principal(token, self._plain_users)), None, False)
                return b"", True
            if self._oauthbearer is not None:
                return self._oauthbearer_step(self._oauthbearer, token)
            return self._scram_step(token)
        except (SaslFailed, SaslAborted):
            self.stage = Stage.FAILED
            raise
        except Exception as error:  # noqa: BLE001 - whatever a hostile token makes the parser raise is a refusal
            self.stage = Stage.FAILED
            raise SaslFailed(None) from error

    def _oauthbearer_step(self, server: OAuthBearerServer, message: bytes) -> tuple[bytes, bool]:
        answer, token = server.step(message)
        if token is None:
            return answer, False
        self._oauthbearer = None
        self._authenticated(("User", token.principal), token.expires_ms, False)
        return answer, True

    def _scram_step(self, token: bytes) -> tuple[bytes, bool]:
        server = self._scram
        if server is None:
            raise SaslFailed(None)
        if not self._scram_started:
            self._scram_started = True
            return server.first(token), False
        final, secret = server.final(token)
        self._scram = None
        self._authenticated((secret.principal_type, secret.principal), secret.expires_ms, server.token_authenticated)
        return final, True

    def _authenticated(self, principal: tuple[str, str], credential_expires_ms: int | None, token: bool) -> None:
        if self.reauthenticating and principal != self._previous[:2]:
            before, after = self._previous[:2], principal
            raise SaslFailed(f"Cannot change principals during re-authentication from "
                             f"{before[0]}.{java_utf8(before[1])}: {after[0]}.{java_utf8(after[1])}")
        now = self._now_ms()
        limits = [self._reauthentication_ms] if self._reauthentication_ms > 0 else []
        if credential_expires_ms is not None:
            limits.append(credential_expires_ms - now)
        lifetime_ms = max(0, min(limits)) if limits else 0
        if lifetime_ms > LONGEST_SESSION_MS:
            raise SaslAborted("a session longer than Kafka's nanosecond clock can time")
        self.principal_type, self.principal = principal
        self.token_authenticated = token
        self.session_lifetime_ms = lifetime_ms
        # a credential already expired (a token within the clock skew) ends the session at once, as Kafka's
        # nanosecond expiry does with a lifetime of 0
        self.session_expires_ms = (now + lifetime_ms if lifetime_ms > 0 else now - 1) if limits else None
        self.reauthenticating = False
        self.unframed = False
        self.stage = Stage.AUTHENTICATED
        self.on_authenticated()
