"""Security events: AlterUserScramCredentials records one event with every credential it set and every one it
removed (tag 122), so a restarted broker authenticates the same users with the same keys; delegation tokens are
created, renewed and removed (tags 123-125).

The projections folding them are `core.security.scram_credentials.SCRAM_CREDENTIALS` and
`core.security.delegation_tokens.DELEGATION_TOKENS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from logwright.core.events.base import Event


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """A user's credential for one mechanism, as Kafka's UserScramCredentialRecord holds it (RFC 5802 keys)."""

    user: str
    mechanism: int
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True, slots=True)
class UserScramCredentialsAltered(Event):
    """Credentials set (replacing one of the same user and mechanism) and (user, mechanism) pairs removed."""

    TAG: ClassVar[int] = 122
    upserted: tuple[ScramCredential, ...]
    deleted: tuple[tuple[str, int], ...]




@dataclass(frozen=True, slots=True)
class DelegationTokenCreated(Event):
    """A delegation token (KIP-48), as Kafka's DelegationTokenRecord holds it: never its HMAC, which is derived from
    the broker's ``delegation.token.secret.key`` and the token id whenever it is needed."""

    TAG: ClassVar[int] = 123
    token_id: str
    owner_type: str
    owner_name: str
    requester_type: str
    requester_name: str
    renewers: tuple[tuple[str, str], ...]
    issue_ms: int
    expiry_ms: int
    max_ms: int


@dataclass(frozen=True, slots=True)
class DelegationTokenRenewed(Event):
    """A token's expiry moved (RenewDelegationToken, or ExpireDelegationToken with a period)."""

    TAG: ClassVar[int] = 124
    token_id: str
    expiry_ms: int


@dataclass(frozen=True, slots=True)
class DelegationTokenRemoved(Event):
    """A token gone: expired at once on request (``expired_by_request``) or swept once past its expiry."""

    TAG: ClassVar[int] = 125
    token_id: str
    expired_by_request: bool


SECURITY_EVENT_TYPES: tuple[type[Event], ...] = (UserScramCredentialsAltered,)
TOKEN_EVENT_TYPES: tuple[type[Event], ...] = (DelegationTokenCreated, DelegationTokenRenewed, DelegationTokenRemoved)
