"""The broker's delegation tokens (KIP-48) as the handlers and the SASL exchange use them: the settings, a token
found by its HMAC (Renew and Expire name a token by it) and the SCRAM secret of a token, kept while the token
lives so a client authenticating with it costs one PBKDF2 per token and mechanism, not one per connection.

The tokens themselves are the ``delegation_tokens`` projection (`core.security.delegation_tokens`); this reads it.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING

from logwright.core.events.security import TOKEN_EVENT_TYPES
from logwright.core.security.delegation_tokens import DelegationToken, TokenSettings, token_hmac, token_secret
from logwright.core.security.scram_exchange import ScramSecret
from logwright.eventstore.interface import LoggedEvent

if TYPE_CHECKING:
    from logwright.compat.broker import Broker


class DelegationTokenBook:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self.settings = TokenSettings(broker.broker_config("delegation.token.secret.key"),
                                      int(broker.broker_config("delegation.token.max.lifetime.ms")),
                                      int(broker.broker_config("delegation.token.expiry.time.ms")))
        self._by_hmac: dict[bytes, str] | None = None
        self._secrets: dict[tuple[str, int], ScramSecret] = {}
        broker.store.add_commit_listener(self._changed, TOKEN_EVENT_TYPES)
        broker.store.add_reload_listener(self._forget)

    def _changed(self, events: Sequence[LoggedEvent]) -> None:
        self._forget()

    def _forget(self) -> None:
        self._by_hmac = None
        self._secrets.clear()

    def tokens(self) -> list[DelegationToken]:
        return list(self._broker.store.entities("delegation_tokens").values())

    def token(self, token_id: str) -> DelegationToken | None:
        found = self._broker.store.state("delegation_tokens", token_id)
        return found if isinstance(found, DelegationToken) else None

    def hmac(self, token_id: str) -> bytes:
        return token_hmac(self.settings.secret_key, token_id)

    def by_hmac(self, hmac: bytes) -> DelegationToken | None:
        """The token whose HMAC this is (an index made once per change of the tokens)."""
        if not self.settings.enabled:
            return None
        if self._by_hmac is None:
            self._by_hmac = {self.hmac(token.token_id): token.token_id for token in self.tokens()}
        token_id = self._by_hmac.get(hmac)
        return self.token(token_id) if token_id is not None else None

    def scram_secret(self, token_id: str, mechanism: int) -> ScramSecret | None:
        """What a client authenticating with this token is checked against; None for a token that does not exist
        or has expired (on the broker clock)."""
        token = self.token(token_id) if self.settings.enabled else None
        if token is None or token.expired(self._broker.clock.now_ms()):
            return None
        key = (token_id, mechanism)
        if key not in self._secrets:
            self._secrets[key] = token_secret(self.settings.secret_key, token, mechanism)
        return self._secrets[key]

    @staticmethod
    def new_token_id() -> str:
        """A token id as Kafka makes one: a random UUID, URL-safe base64 without padding (22 characters)."""
        return base64.urlsafe_b64encode(secrets.token_bytes(16)).decode().rstrip("=")
