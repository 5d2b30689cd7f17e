"""Delegation tokens (KIP-48): the ``delegation_tokens`` projection and what Create, Renew, Expire and Describe
decide, as Kafka 4.4's broker and controller decide them (checked over the wire in tests/integration/test_sasl.py);
a token's HMAC (HmacSHA512 of its id under ``delegation.token.secret.key``) and the SCRAM secret a client
authenticating with it is checked against.

Time is the broker clock's: a token past its expiry (or its maximum) is refused at authentication, renewal and
expiry, and removed by the next sweep, as Kafka's controller removes it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from logwright.core.events.base import Event
from logwright.core.events.security import (
    TOKEN_EVENT_TYPES,
    DelegationTokenCreated,
    DelegationTokenRemoved,
    DelegationTokenRenewed,
)
from logwright.core.projection import Projection
from logwright.core.security.scram_credentials import HASHES, MIN_ITERATIONS, derived_keys
from logwright.core.security.scram_exchange import ScramSecret

NONE, UNKNOWN_SERVER_ERROR = 0, -1
DELEGATION_TOKEN_AUTH_DISABLED, DELEGATION_TOKEN_NOT_FOUND, DELEGATION_TOKEN_OWNER_MISMATCH = 61, 62, 63
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, DELEGATION_TOKEN_EXPIRED, INVALID_PRINCIPAL_TYPE = 64, 66, 67
USER_TYPE = "User"

Principal = tuple[str, str]
"""(type, name), Kafka's KafkaPrincipal."""


@dataclass(frozen=True, slots=True)
class DelegationToken:
    """A token as the projection holds it (state tag 1222): as created, with its expiry now."""

    created: DelegationTokenCreated
    expiry_ms: int

    @property
    def token_id(self) -> str:
        return self.created.token_id

    @property
    def owner_type(self) -> str:
        return self.created.owner_type

    @property
    def owner_name(self) -> str:
        return self.created.owner_name

    @property
    def requester(self) -> Principal:
        return self.created.requester_type, self.created.requester_name

    @property
    def renewers(self) -> tuple[tuple[str, str], ...]:
        return self.created.renewers

    @property
    def issue_ms(self) -> int:
        return self.created.issue_ms

    @property
    def max_ms(self) -> int:
        return self.created.max_ms

    @property
    def owner(self) -> Principal:
        return self.owner_type, self.owner_name

    def owner_or_renewer(self, principal: Principal) -> bool:
        return principal == self.owner or principal in self.renewers

    def expired(self, now_ms: int) -> bool:
        return self.max_ms < now_ms or self.expiry_ms < now_ms


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, DelegationTokenCreated | DelegationTokenRenewed | DelegationTokenRemoved):
        return (event.token_id,)
    return ()


def _evolve(state: DelegationToken | None, event: Event, key: str) -> DelegationToken | None:
    if isinstance(event, DelegationTokenCreated):
        return DelegationToken(event, event.expiry_ms)
    if isinstance(event, DelegationTokenRenewed):
        return replace(state, expiry_ms=event.expiry_ms) if state is not None else None
    if isinstance(event, DelegationTokenRemoved):
        return None
    return state


DELEGATION_TOKENS: Projection[DelegationToken] = Projection(
    "delegation_tokens", _keys, _evolve, frozenset(TOKEN_EVENT_TYPES))


def token_hmac(secret_key: str, token_id: str) -> bytes:
    """Kafka's token HMAC: HmacSHA512 of the token id, keyed by the secret key's UTF-8 bytes."""
    return hmac.new(secret_key.encode(), token_id.encode(), "sha512").digest()


@dataclass(frozen=True, slots=True)
class TokenSettings:
    """``delegation.token.*``: the secret key ("" disables tokens), the longest life and the renewal period."""

    secret_key: str
    max_lifetime_ms: int
    renew_period_ms: int

    @property
    def enabled(self) -> bool:
        return bool(self.secret_key)


@dataclass(frozen=True, slots=True)
class Created:
    """CreateDelegationToken's answer: ``event`` is None when refused (``error``)."""

    error: int
    owner: Principal
    event: DelegationTokenCreated | None = None


def create(settings: TokenSettings, requester: Principal, owner: Principal | None,
           renewers: Sequence[Principal], max_lifetime_ms: int, now_ms: int, token_id: str) -> Created:
    """Kafka's checks in its order (the request's channel is the caller's, DELEGATION_TOKEN_REQUEST_NOT_ALLOWED):
    renewers must be users, tokens must be enabled; an owner named (any type, even an empty one, as Kafka takes it)
    else the requester. The life is the broker's longest or the request's if shorter; the first expiry one renewal
    period on, at most that life."""
    the_owner = owner if owner is not None and owner[1] else requester
    if any(kind != USER_TYPE for kind, _ in renewers):
        return Created(INVALID_PRINCIPAL_TYPE, the_owner)
    if not settings.enabled:
        return Created(DELEGATION_TOKEN_AUTH_DISABLED, the_owner)
    life_ms = min(settings.max_lifetime_ms, max_lifetime_ms) if max_lifetime_ms > 0 else settings.max_lifetime_ms
    max_ms = now_ms + life_ms
    return Created(NONE, the_owner, DelegationTokenCreated(
        token_id, the_owner[0], the_owner[1], requester[0], requester[1], tuple(renewers), now_ms,
        min(max_ms, now_ms + settings.renew_period_ms), max_ms))


def _checked(token: DelegationToken | None, requester: Principal, now_ms: int) -> int:
    if token is None:
        return DELEGATION_TOKEN_NOT_FOUND
    if token.expired(now_ms):
        return DELEGATION_TOKEN_EXPIRED
    if not token.owner_or_renewer(requester):
        return DELEGATION_TOKEN_OWNER_MISMATCH
    return NONE


def renew(settings: TokenSettings, token: DelegationToken | None, requester: Principal, period_ms: int,
          now_ms: int) -> tuple[int, int, DelegationTokenRenewed | None]:
    """(error, new expiry, event): the owner or a renewer moves a live token's expiry one period on (the broker's,
    or the request's if shorter and positive), never past its maximum. The expiry answered with a refusal is 0."""
    error = _checked(token, requester, now_ms) if settings.enabled else DELEGATION_TOKEN_AUTH_DISABLED
    if error != NONE or token is None:
        return error, 0, None
    period = min(settings.renew_period_ms, period_ms) if period_ms > 0 else settings.renew_period_ms
    expiry_ms = min(token.max_ms, now_ms + period)
    return NONE, expiry_ms, DelegationTokenRenewed(token.token_id, expiry_ms)


def expire(settings: TokenSettings, token: DelegationToken | None, requester: Principal, period_ms: int,
           now_ms: int) -> tuple[int, int, Event | None]:
    """(error, expiry answered, event): a negative period removes the token now (answered with the time now, as
    Kafka 4.4 answers it), any other moves its expiry to now plus the period, at most its maximum (0: the token
    is expired from the next millisecond, refused and swept)."""
    if not settings.enabled:
        return DELEGATION_TOKEN_AUTH_DISABLED, 0, None
    error = _checked(token, requester, now_ms)
    if error != NONE or token is None:
        return error, 0, None
    if period_ms < 0:
        return NONE, now_ms, DelegationTokenRemoved(token.token_id, True)
    expiry_ms = min(token.max_ms, now_ms + period_ms)
    return NONE, expiry_ms, DelegationTokenRenewed(token.token_id, expiry_ms)


def described(tokens: Iterable[DelegationToken], owners: Sequence[Principal] | None) -> list[DelegationToken]:
    """DescribeDelegationToken without an authorizer: every token (owners None), none (owners empty), or those
    whose owner or a renewer is among ``owners``."""
    if owners is not None and not owners:
        return []
    return [token for token in tokens
            if owners is None or any(token.owner_or_renewer(owner) for owner in owners)]


def swept(tokens: Iterable[DelegationToken], now_ms: int) -> list[DelegationTokenRemoved]:
    """The tokens the expiry sweep removes: past their expiry or their maximum."""
    return [DelegationTokenRemoved(token.token_id, False) for token in tokens if token.expired(now_ms)]


def token_secret(secret_key: str, token: DelegationToken, mechanism: int) -> ScramSecret:
    """The SCRAM secret a client authenticating with ``token`` (``tokenauth=true``) is checked against: its password
    is the base64 of the token's HMAC, as Kafka's clients send it, salted with a salt derived from that HMAC (Kafka
    draws one at random; either is private to the broker), 4096 iterations. The client is the token's owner."""
    password = base64.b64encode(token_hmac(secret_key, token.token_id))
    salt = hashlib.sha256(b"logwright delegation token salt" + password).digest()[:16]
    salted = hashlib.pbkdf2_hmac(HASHES[mechanism], password, salt, MIN_ITERATIONS)
    stored_key, server_key = derived_keys(mechanism, salted)
    return ScramSecret(salt, stored_key, server_key, MIN_ITERATIONS, token.owner_name, token.owner_type,
                       token.expiry_ms)
