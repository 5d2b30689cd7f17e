"""The ``client_quotas`` projection (one entity per quota entity, `entities.entity_key`), DescribeClientQuotas'
matching, and which byte-rate quota applies to a client (Kafka's default quota callback).

A client of the PLAINTEXT listener is Kafka's ``User:ANONYMOUS``, so a quota on user ``ANONYMOUS`` (or the default
user) applies to every such client, one on a client id to the clients that send it; a client of the SASL listener
is the user it authenticated as (`compat.authentication`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from logwright.core.errors import InvalidRequest, UnsupportedFeature
from logwright.core.events.base import Event
from logwright.core.events.quotas import QUOTA_EVENT_TYPES, ClientQuotasAltered
from logwright.core.projection import Projection
from logwright.core.quotas.entities import CLIENT_ID, ENTITY_TYPES, IP, USER, Entity, EntityQuotas, entity_key

ANONYMOUS = "ANONYMOUS"
"""The user a client of a PLAINTEXT listener is, as on Kafka."""

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, ClientQuotasAltered):
        return tuple(entity_key(alteration.entity) for alteration in event.alterations)
    return ()


def _evolve(state: EntityQuotas | None, event: Event, key: str) -> EntityQuotas | None:
    if not isinstance(event, ClientQuotasAltered):
        return state
    for alteration in event.alterations:
        if entity_key(alteration.entity) != key:
            continue
        values = dict(state.values) if state is not None else {}
        for name in alteration.removed:
            values.pop(name, None)
        values.update(alteration.values)
        state = EntityQuotas(alteration.entity, tuple(sorted(values.items()))) if values else None
    return state


CLIENT_QUOTAS: Projection[EntityQuotas] = Projection("client_quotas", _keys, _evolve, frozenset(QUOTA_EVENT_TYPES))


@dataclass(frozen=True, slots=True)
class Component:
    """One filter component of DescribeClientQuotas."""

    entity_type: str
    match_type: int
    match: str | None


def describe(stored: Iterable[EntityQuotas], components: Sequence[Component], strict: bool) -> list[EntityQuotas]:
    """The entities a DescribeClientQuotas filter matches, as Kafka's metadata image answers it: a bad filter raises
    `InvalidRequest` (or `UnsupportedFeature` for an unknown entity type: UNSUPPORTED_VERSION) with Kafka's words.
    A component "any specified name" matches the default entity of its type too, as Kafka's does."""
    exact: dict[str, str | None] = {}
    typed: set[str] = set()
    for component in components:
        kind = component.entity_type
        if not kind:
            raise InvalidRequest("Invalid empty entity type.")
        if kind in exact or kind in typed:
            raise InvalidRequest(f"Entity type {kind} cannot appear more than once in the filter.")
        if kind not in ENTITY_TYPES:
            raise UnsupportedFeature(f"Unsupported entity type {kind}")
        if component.match_type == MATCH_EXACT:
            if component.match is None:
                raise InvalidRequest("Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[kind] = component.match
        elif component.match_type == MATCH_DEFAULT:
            if component.match is not None:
                raise InvalidRequest("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[kind] = None
        elif component.match_type == MATCH_SPECIFIED:
            if component.match is not None:
                raise InvalidRequest("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
            typed.add(kind)
        else:
            raise InvalidRequest(f"Unknown match type {component.match_type}")
    named = exact.keys() | typed
    if IP in named and (USER in named or CLIENT_ID in named):
        raise InvalidRequest("Invalid entity filter component combination. IP filter component should not be used "
                             "with user or clientId filter component.")
    found = []
    for quotas in stored:
        parts = dict(quotas.entity)
        if strict and len(parts) != len(named):
            continue
        if all(kind in parts and parts[kind] == name for kind, name in exact.items()) and typed <= parts.keys():
            found.append(quotas)
    return found


def _precedence(user: str, client_id: str) -> tuple[tuple[Entity, tuple[str, str]], ...]:
    """Kafka's order of the entities a client's quota may come from, each with the rate it is measured under
    (the quota's metric tags: user and client id, or one of them)."""
    both, user_only, client_only = (user, client_id), (user, ""), ("", client_id)
    return (
        (((CLIENT_ID, client_id), (USER, user)), both),
        (((CLIENT_ID, None), (USER, user)), both),
        (((USER, user),), user_only),
        (((CLIENT_ID, client_id), (USER, None)), both),
        (((CLIENT_ID, None), (USER, None)), both),
        (((USER, None),), user_only),
        (((CLIENT_ID, client_id),), client_only),
        (((CLIENT_ID, None),), client_only),
    )


@dataclass(frozen=True, slots=True)
class AppliedQuota:
    """The quota a client's requests count against: its bound, and the rate it shares with every client that
    resolves to the same ``metric`` (the clients of one user share a user quota)."""

    bound: float
    metric: tuple[str, str]


class QuotaBook:
    """The byte-rate quotas in force (``producer_byte_rate`` or ``consumer_byte_rate``), resolved per client id."""

    def __init__(self, key: str, stored: Iterable[EntityQuotas]) -> None:
        self.key = key
        self._bounds: dict[Entity, float] = {}
        self._resolved: dict[tuple[str, str], AppliedQuota | None] = {}
        for quotas in stored:
            self.update(quotas.entity, quotas)

    def update(self, entity: Entity, quotas: EntityQuotas | None) -> None:
        """``entity``'s quotas are now ``quotas`` (``None``: it has none): one alteration, not a rebuild of every
        entity stored."""
        value = dict(quotas.values).get(self.key) if quotas is not None else None
        if value is None or any(kind == IP for kind, _ in entity):
            if self._bounds.pop(entity, None) is None:
                return
        elif self._bounds.get(entity) == value:
            return
        else:
            self._bounds[entity] = value
        self._resolved.clear()

    @property
    def any(self) -> bool:
        """Whether any quota of this key is set: without one, nothing is recorded."""
        return bool(self._bounds)

    def applied(self, client_id: str, user: str = ANONYMOUS) -> AppliedQuota | None:
        """The most specific quota on (``user``, ``client_id``) in Kafka's precedence; ``None`` if none applies."""
        who = (user, client_id)
        if who in self._resolved:
            return self._resolved[who]
        found = None
        for entity, metric in _precedence(user, client_id):
            bound = self._bounds.get(entity)
            if bound is not None:
                # Kafka's callback finds no quota for metric tags that are both empty (a client-id quota for a
                # client that sent none)
                found = AppliedQuota(bound, metric) if metric != ("", "") else None
                break
        if len(self._resolved) >= 100_000:  # client ids are the client's to choose: keep the cache bounded
            self._resolved.clear()
        self._resolved[who] = found
        return found


def stored_quotas(entities: Mapping[str, object]) -> list[EntityQuotas]:
    """The projection's rows that are quota states."""
    return [state for state in entities.values() if isinstance(state, EntityQuotas)]


CONNECTION_CREATION_RATE = "connection_creation_rate"


class IpConnectionRates:
    """The ``connection_creation_rate`` quotas of ``ip`` entities (KIP-612): an address's own, else the default
    ip entity's, else none, as Kafka's ``connectionRateForIp``. Names are matched as written: an entity named by a
    host name (which Kafka resolves when it is set) applies to a client whose address is written the same."""

    def __init__(self, stored: Iterable[EntityQuotas]) -> None:
        self._rates: dict[str | None, float] = {}
        for quotas in stored:
            self.update(quotas.entity, quotas)

    def update(self, entity: Entity, quotas: EntityQuotas | None) -> None:
        if len(entity) != 1 or entity[0][0] != IP:
            return
        name = entity[0][1]
        value = dict(quotas.values).get(CONNECTION_CREATION_RATE) if quotas is not None else None
        if value is None:
            self._rates.pop(name, None)
        else:
            self._rates[name] = value

    @property
    def any(self) -> bool:
        return bool(self._rates)

    def bound(self, address: str) -> float | None:
        """The connections per second ``address`` may open, or None without a quota."""
        return self._rates.get(address, self._rates.get(None))
