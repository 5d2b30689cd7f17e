"""Kafka's producer and consumer byte-rate quotas enforced (``producer_byte_rate``, ``consumer_byte_rate``): the
bytes of each Produce and Fetch a quota applies to are recorded on Kafka's sampled rate (`core.quotas.rate`, on the
broker clock), and a request that takes the rate over its bound is answered with the throttle time Kafka computes
(``throttle_time_ms``) and its connection reads nothing more until that time has passed (KIP-219: the answer goes
at once, the channel is muted), as Kafka's socket server mutes it.

A Fetch that takes the rate over its quota is answered as Kafka answers it: empty, with the throttle time, its bytes
taken back off the rate and its session left as it was (its epoch moved on). A Fetch's ``max_bytes`` and
``min_bytes`` are capped, as Kafka caps them, at what one quota window may take. One difference: a Fetch's bytes are
its records' (Kafka counts the whole response, a few dozen bytes a partition more).

Kafka's controller mutation quota (``controller_mutation_rate``, KIP-599) is a token bucket per client
(`MutationQuota`), applied by CreateTopics, DeleteTopics and CreatePartitions. Kafka's connection creation quota
(``connection_creation_rate`` of ``ip`` entities, KIP-612) counts each connection an address opens on the same
sampled rate; one that takes it over is not served and is closed once the throttle time Kafka computes (at most one
quota window) has passed on the broker clock, as Kafka's acceptor closes it (`connection_throttle_ms`).

With no byte-rate quota set nothing is recorded: Produce and Fetch ask one attribute each.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from logwright.core.errors import ThrottlingQuotaExceeded
from logwright.core.events.quotas import ClientQuotasAltered
from logwright.core.quotas.client_quotas import (
    ANONYMOUS,
    CONNECTION_CREATION_RATE,
    IpConnectionRates,
    QuotaBook,
    stored_quotas,
)
from logwright.core.quotas.entities import IP, EntityQuotas, entity_key
from logwright.core.quotas.rate import ByteRates, TokenBucket
from logwright.eventstore.interface import LoggedEvent

if TYPE_CHECKING:
    from logwright.compat.broker import Broker

log = logging.getLogger(__name__)

PRODUCE, FETCH, MUTATION = "producer_byte_rate", "consumer_byte_rate", "controller_mutation_rate"
CONNECTIONS = CONNECTION_CREATION_RATE


class MutationQuota:
    """One request's controller mutation quota (KIP-599), as Kafka's controller applies it: each topic created or
    deleted, or partitions added, takes its partitions' count from the client's token bucket once everything else
    about it was found valid (validate-only requests too, as on Kafka). Strict (from CreateTopics v6, DeleteTopics
    v5, CreatePartitions v3): a bucket below zero refuses the topic (`ThrottlingQuotaExceeded`) and the answer
    carries the time until it is back at zero; permissive (older versions, which know no such error): everything
    goes and the answer carries the time the bucket then needs."""

    def __init__(self, bucket: TokenBucket | None, bound: float, strict: bool, now_ms: int) -> None:
        self._bucket = bucket
        self._bound = bound
        self._strict = strict
        self._now_ms = now_ms
        self._throttle_ms = 0

    @property
    def bounded(self) -> bool:
        """A quota applies: without one, `apply` does nothing."""
        return self._bucket is not None

    def apply(self, permits: int) -> None:
        bucket = self._bucket
        if bucket is None:
            return
        if self._strict:
            tokens = bucket.tokens(self._bound, self._now_ms)
            if tokens < 0:
                self._throttle_ms = TokenBucket.throttle_ms(tokens, self._bound)
                raise ThrottlingQuotaExceeded("The throttling quota has been exceeded.")
            bucket.record(permits, self._bound, self._now_ms)
        else:
            bucket.record(permits, self._bound, self._now_ms)
            self._throttle_ms = TokenBucket.throttle_ms(bucket.tokens(self._bound, self._now_ms), self._bound)

    @property
    def throttle_ms(self) -> int:
        return self._throttle_ms


UNBOUNDED = MutationQuota(None, 0.0, False, 0)


class ClientQuotaEnforcement:
    """The byte-rate quotas in force, the rates they are measured on, and the connections they mute."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        samples = int(broker.broker_config("quota.window.num"))
        window_ms = int(broker.broker_config("quota.window.size.seconds")) * 1000
        self._rates = {key: ByteRates(samples, window_ms) for key in (PRODUCE, FETCH, MUTATION, CONNECTIONS)}
        self._window_ms = window_ms
        self._ip_rates = IpConnectionRates(())
        self._books = {key: QuotaBook(key, ()) for key in (PRODUCE, FETCH, MUTATION)}
        self.producing = False
        """A ``producer_byte_rate`` is set somewhere: Produce records its bytes."""
        self.fetching = False
        """A ``consumer_byte_rate`` is set somewhere: Fetch records its bytes."""
        self.mute: Callable[[int, int], None] = lambda connection_id, until_ms: None
        """``(connection_id, until_ms)``: the server reads nothing more from that connection until then (it sets
        this)."""
        self._load()
        broker.store.add_commit_listener(self._altered, (ClientQuotasAltered,))
        broker.store.add_reload_listener(self._load)

    def _load(self) -> None:
        stored = stored_quotas(self._broker.store.entities("client_quotas"))
        self._books = {key: QuotaBook(key, stored) for key in (PRODUCE, FETCH, MUTATION)}
        self._ip_rates = IpConnectionRates(stored)
        self.producing, self.fetching = self._books[PRODUCE].any, self._books[FETCH].any

    def _altered(self, events: Sequence[LoggedEvent]) -> None:
        """The entities a commit altered, read back from the projection (a commit changes a few of many)."""
        stored = self._broker.store.entities("client_quotas")
        for logged in events:
            if isinstance(logged.event, ClientQuotasAltered):
                for alteration in logged.event.alterations:
                    quotas = stored.get(entity_key(alteration.entity))
                    held = quotas if isinstance(quotas, EntityQuotas) else None
                    for book in self._books.values():
                        book.update(alteration.entity, held)
                    self._ip_rates.update(alteration.entity, held)
        self.producing, self.fetching = self._books[PRODUCE].any, self._books[FETCH].any

    def record(self, key: str, client_id: str | None, connection_id: int, nbytes: int, user: str = ANONYMOUS) -> int:
        """Record a request's bytes against the quota of ``key`` that applies to ``user`` and ``client_id``; the
        throttle time (ms) to answer with, the connection muted for it. 0 when no quota applies."""
        applied = self._books[key].applied(client_id or "", user)
        if applied is None:
            return 0
        now_ms = self._broker.clock.now_ms()
        throttle_ms = self._rates[key].record(applied.metric, nbytes, applied.bound, now_ms)
        if throttle_ms > 0 and connection_id >= 0:
            self.mute(connection_id, now_ms + throttle_ms)
        return throttle_ms

    def connection_throttle_ms(self, address: str) -> int:
        """A new connection from ``address``: counted on its connection creation quota, and the time to hold it
        unserved before closing it when it takes the rate over (then it is not counted, as Kafka un-records it);
        0: serve it."""
        if not self._ip_rates.any:
            return 0
        bound = self._ip_rates.bound(address)
        if bound is None:
            return 0
        rates, now_ms = self._rates[CONNECTIONS], self._broker.clock.now_ms()
        throttle_ms = rates.record((IP, address), 1.0, bound, now_ms)
        if throttle_ms <= 0:
            return 0
        rates.record((IP, address), -1.0, bound, now_ms)
        return min(throttle_ms, self._window_ms)

    def mutations(self, client_id: str | None, strict: bool, user: str = ANONYMOUS) -> MutationQuota:
        """The controller mutation quota of one CreateTopics, DeleteTopics or CreatePartitions request."""
        book = self._books[MUTATION]
        applied = book.applied(client_id or "", user) if book.any else None
        if applied is None:
            return UNBOUNDED
        now_ms = self._broker.clock.now_ms()
        return MutationQuota(self._rates[MUTATION].bucket(applied.metric, now_ms), applied.bound, strict, now_ms)

    def throttle(self, connection_id: int, throttle_ms: int) -> None:
        """Mute ``connection_id`` for ``throttle_ms`` (a mutation quota's answer), as `record` does."""
        if throttle_ms > 0 and connection_id >= 0:
            self.mute(connection_id, self._broker.clock.now_ms() + throttle_ms)

    def unrecord(self, key: str, client_id: str | None, nbytes: int, user: str = ANONYMOUS) -> None:
        """Take back bytes `record` counted: a throttled Fetch is answered empty, so what it read is not counted, as
        Kafka unrecords it."""
        applied = self._books[key].applied(client_id or "", user)
        if applied is not None:
            self._rates[key].record(applied.metric, -nbytes, applied.bound, self._broker.clock.now_ms())

    def fetch_cap(self, client_id: str | None, user: str = ANONYMOUS) -> int | None:
        """The most a Fetch of ``user`` and ``client_id`` may return under its quota (one quota window's worth);
        ``None`` without one."""
        applied = self._books[FETCH].applied(client_id or "", user)
        if applied is None:
            return None
        return max(1, int(self._rates[FETCH].max_value_in_window(applied.bound)))
