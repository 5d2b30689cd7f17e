"""Security events (tag 122): AlterUserScramCredentials records one event with every credential it set and every
one it removed, so a restarted broker authenticates the same users with the same keys.

The ``scram_credentials`` projection folding it is `core.security.scram_credentials.SCRAM_CREDENTIALS`.
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


SECURITY_EVENT_TYPES: tuple[type[Event], ...] = (UserScramCredentialsAltered,)
