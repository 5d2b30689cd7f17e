"""Client quota entities and alterations as Kafka defines them (KIP-546), with the checks its controller applies.

An entity has one or two parts, ``user`` and/or ``client-id``, or an ``ip`` alone; a part named ``None`` is the
default entity of its type. The values are doubles, as on the wire. The ACL-like types live here, apart from the
projection (`core.quotas.client_quotas`), so the quota event imports them without a cycle.

Kafka keeps an entity as a Java ``HashMap`` from type to name, and that map's iteration order is what its answers
show: the order of an entity's parts in AlterClientQuotas' answer and in its error messages. `java_map_order`
computes that order (String.hashCode, the table size a ``HashMap`` of that capacity ends with), so the answers are
Kafka's byte for byte; nothing else depends on it.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass

from logwright.core.java_hash_order import java_order, java_string_hash

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)

Entity = tuple[tuple[str, str | None], ...]
"""An entity's parts, ``(type, name or None for the default)``, sorted by type: one spelling per entity."""

USER_AND_CLIENT_KEYS: dict[str, str] = {
    "producer_byte_rate": "LONG",
    "consumer_byte_rate": "LONG",
    "request_percentage": "DOUBLE",
    "controller_mutation_rate": "DOUBLE",
}
"""Kafka's quota keys of user and client-id entities, with their config types (QuotaConfig)."""

IP_KEYS: dict[str, str] = {"connection_creation_rate": "INT"}
"""Kafka's quota key of ip entities."""

_LARGEST = {"SHORT": (2**15 - 1, "a SHORT"), "INT": (2**31 - 1, "an INT"), "LONG": (2**63 - 1, "a LONG")}


@dataclass(frozen=True, slots=True)
class QuotaAlteration:
    """What one entity's quotas become: keys set to values, keys removed (each key changed once)."""

    entity: Entity
    values: tuple[tuple[str, float], ...]
    removed: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EntityQuotas:
    """An entity's quotas (the ``client_quotas`` projection's state): sorted by key, never empty."""

    entity: Entity
    values: tuple[tuple[str, float], ...]


def entity_of(parts: Iterable[tuple[str, str | None]]) -> Entity:
    """The entity a request's parts name: a type named twice keeps its last name, as Kafka's map does."""
    return tuple(sorted(dict(parts).items()))


def entity_key(entity: Entity) -> str:
    """The projection key: each part as ``type=name`` (``type`` alone for the default), ``;`` between; a name's
    ``\\``, ``;`` and ``=`` escaped, so two entities never share a key."""
    return ";".join(kind if name is None else f"{kind}={_escaped(name)}" for kind, name in entity)


def _escaped(name: str) -> str:
    return name.replace("\\", "\\\\").replace(";", "\\;").replace("=", "\\=")


def check_entity(entity: Sequence[tuple[str, str | None]], resolvable: frozenset[str] = frozenset()) -> str | None:
    """Kafka's refusal of an entity (INVALID_REQUEST), in its controller's order and words; ``None`` if valid.
    ``entity``: its parts in the order Kafka checks them (`java_map_order`). ``resolvable``: the non-literal ip
    names the caller found to resolve (Kafka's ``InetAddress.getByName``)."""
    if not entity:
        return "Invalid empty client quota entity"
    for kind, name in entity:
        if kind not in ENTITY_TYPES:
            return f"Unhandled client quota entity type: {kind}"
        if name == "":
            return f"Empty {kind} not supported"
    kinds = dict(entity)
    if IP in kinds:
        if USER in kinds or CLIENT_ID in kinds:
            return ("Invalid quota entity combination, IP entity should"
                    "not be combined with User or ClientId")
        name = kinds[IP]
        if name is not None and not is_ip_literal(name) and name not in resolvable:
            return f"{name} is not a valid IP or resolvable host."
    return None


def is_ip_literal(name: str) -> bool:
    """An IPv4 or IPv6 address as Java's ``InetAddress`` reads one without a lookup: the short IPv4 forms included
    (``127.1``: one to four decimal parts, the last filling the bytes left)."""
    try:
        ipaddress.ip_address(name[1:-1] if name.startswith("[") and name.endswith("]") else name)
        return True
    except ValueError:
        pass
    parts = name.split(".")
    if not 1 <= len(parts) <= 4 or not all(part.isascii() and part.isdigit() for part in parts):
        return False
    values = [int(part) for part in parts]
    last_bytes = 5 - len(parts)
    return all(value <= 255 for value in values[:-1]) and values[-1] < 256 ** last_bytes


def check_value(entity: Entity, key: str, value: float) -> str | None:
    """Kafka's refusal of setting ``key`` to ``value`` on ``entity`` (a valid one); ``None`` if it may be set."""
    keys = IP_KEYS if any(kind == IP for kind, _ in entity) else USER_AND_CLIENT_KEYS
    kind = keys.get(key)
    if kind is None:
        return f"Invalid configuration key {key}"
    if not math.isfinite(value):
        return f"Quota {key} must be a finite number"
    if value <= 0.0:
        return f"Quota {key} must be greater than 0"
    if kind == "DOUBLE":
        return None
    largest, name = _LARGEST[kind]
    if value > largest:
        return f"Proposed value for {key} is too large for {name}."
    if abs(math.fmod(value, 1.0)) > 1e-6:
        return f"{key} cannot be a fractional value."
    return None


@dataclass(frozen=True, slots=True)
class AlterationAsked:
    """One entry of an AlterClientQuotas request: its parts as sent, and its operations ``(key, value or None
    to remove)`` in order."""

    parts: tuple[tuple[str, str | None], ...]
    ops: tuple[tuple[str, float | None], ...]


@dataclass(frozen=True, slots=True)
class AlterationResult:
    """One entry of the answer: the entity's parts in Kafka's order, and its refusal (``None``: done)."""

    parts: tuple[tuple[str, str | None], ...]
    error: str | None


MAX_RECORDS = 10_000
"""Kafka's controller writes one record per key changed and refuses an operation of more (MAX_RECORDS_PER_USER_OP):
every entry of such a request is answered POLICY_VIOLATION, nothing changes, validate-only or not."""

JAVA_ORDER_UP_TO = 10_000
"""Answers of more entities are in request order: Kafka's map order (a hash of every name) would hold the loop."""

STEP_ENTRIES = 1000
"""Entries decided between two yields of `alterations_decided`: a request may name hundreds of thousands."""


def decide_alterations(asked: Sequence[AlterationAsked], current: Mapping[Entity, Mapping[str, float]],
                       resolvable: frozenset[str] = frozenset()
                       ) -> tuple[list[AlterationResult], tuple[QuotaAlteration, ...]]:
    """`alterations_decided` in one go."""
    steps = alterations_decided(asked, current, resolvable)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            result: tuple[list[AlterationResult], tuple[QuotaAlteration, ...]] = done.value
            return result


def alterations_decided(asked: Sequence[AlterationAsked], current: Mapping[Entity, Mapping[str, float]],
                        resolvable: frozenset[str] = frozenset()
                        ) -> Generator[None, None, tuple[list[AlterationResult], tuple[QuotaAlteration, ...]]]:
    """The answer and the changes of an AlterClientQuotas request, as Kafka's controller decides them.

    Each entity is answered once, in Kafka's ``HashMap`` order. An entity named twice is answered "Ignoring
    duplicate entity", yet its first alteration is made (Kafka's controller does so); a key named twice in one
    entry is answered the same way and nothing of that entry is made. An entry with an invalid part or value
    changes nothing. Setting a key to the value it has, or removing one it lacks, is no change."""
    results: dict[Entity, tuple[tuple[tuple[str, str | None], ...], str | None]] = {}
    changes: list[QuotaAlteration] = []
    for count, entry in enumerate(asked, 1):
        if count % STEP_ENTRIES == 0:
            yield
        entity = entity_of(entry.parts)
        shown = java_map_order(entry.parts)
        ops: dict[str, float | None] = {}
        duplicate_key = False
        for key, value in entry.ops:
            if key in ops:
                duplicate_key = True
            else:
                ops[key] = value
        if entity in results or duplicate_key:
            first = results.get(entity, (shown, None))[0]
            results[entity] = (first, f"Ignoring duplicate entity ClientQuotaEntity(entries={_java_map(shown)})")
            continue
        error = check_entity(shown, resolvable)
        alteration = None
        if error is None:
            alteration, error = _alteration(entity, ops, current.get(entity, {}))
        results[entity] = (shown, error)
        if alteration is not None:
            changes.append(alteration)
    order = java_map_order_of_entities(results) if len(results) <= JAVA_ORDER_UP_TO else list(results)
    answered = [AlterationResult(*results[entity]) for entity in order]
    return answered, tuple(changes)


def record_count(changes: Iterable[QuotaAlteration]) -> int:
    """The records Kafka's controller would write for these changes: one per key set or removed."""
    return sum(len(change.values) + len(change.removed) for change in changes)


def _alteration(entity: Entity, ops: dict[str, float | None], current: Mapping[str, float]
                ) -> tuple[QuotaAlteration | None, str | None]:
    values: list[tuple[str, float]] = []
    removed: list[str] = []
    for key, value in ops.items():
        if value is None:
            if key in current:
                removed.append(key)
            continue
        error = check_value(entity, key, value)
        if error is not None:
            return None, error
        if current.get(key) != value:
            values.append((key, value))
    if not values and not removed:
        return None, None
    return QuotaAlteration(entity, tuple(values), tuple(removed)), None


def java_map_order(parts: Sequence[tuple[str, str | None]]) -> tuple[tuple[str, str | None], ...]:
    """A request's entity parts in the order Kafka's map of them iterates (a type named twice: its last name, at
    its first place)."""
    names: dict[str, str | None] = {}
    for kind, name in parts:
        names[kind] = name
    kinds = list(names)
    order = java_order([java_string_hash(kind) for kind in kinds], len(parts))
    return tuple((kinds[index], names[kinds[index]]) for index in order)


def java_map_order_of_entities(entities: Iterable[Entity]) -> list[Entity]:
    """Entities in the order Kafka's answer map (a default ``HashMap`` keyed by ``ClientQuotaEntity``) lists them."""
    listed = list(entities)
    hashes = [(31 + sum((java_string_hash(kind) ^ (java_string_hash(name) if name is not None else 0))
                        for kind, name in entity)) & 0xFFFFFFFF for entity in listed]  # Objects.hash(entries)
    return [listed[index] for index in java_order(hashes, None)]


def _java_map(parts: Iterable[tuple[str, str | None]]) -> str:
    return "{" + ", ".join(f"{kind}={'null' if name is None else name}" for kind, name in parts) + "}"
