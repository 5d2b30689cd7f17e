"""The delegation token sweep: every ``delegation.token.expiry.check.interval.ms`` on the broker clock, remove the
tokens past their expiry or their maximum (`core.security.delegation_tokens.swept`), as Kafka's controller does.
On a `DeadlineTimer`: nothing polls, and on a manual clock LogwrightAdvanceClock runs it when due.
"""

from __future__ import annotations

from logwright.compat.broker import Broker
from logwright.compat.coordinators.deadline_timer import DeadlineTimer
from logwright.core.security.delegation_tokens import swept


class TokenExpiry:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._interval_ms = int(broker.broker_config("delegation.token.expiry.check.interval.ms"))
        self._next_ms = broker.clock.now_ms() + self._interval_ms
        self.timer = DeadlineTimer(broker.clock, self.next_deadline, self.tick, "logwright-token-expiry")

    def next_deadline(self) -> int | None:
        return self._next_ms

    def tick(self) -> None:
        now = self.broker.clock.now_ms()
        if now < self._next_ms:
            return
        self._next_ms = now + self._interval_ms
        removed = swept(self.broker.delegation_tokens.tokens(), now)
        if removed:
            self.broker.stage(removed)
