"""Members of a share group or a KIP-848 consumer group, kept as a tuple sorted by member id.

Both projections store members this way so their states compare and encode deterministically; one helper
replaces or adds a member for both. Finding a member by id serves classic groups too."""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, cast


class HasMemberId(Protocol):
    @property
    def member_id(self) -> str: ...


MemberT = TypeVar("MemberT", bound=HasMemberId)


def with_member(members: tuple[MemberT, ...], member: MemberT) -> tuple[MemberT, ...]:
    """``members`` with ``member`` in place of the one of the same id (or added), sorted by member id."""
    others = [existing for existing in members if existing.member_id != member.member_id]
    return tuple(sorted((*others, member), key=lambda m: m.member_id))


def member_by_id(members: tuple[MemberT, ...], member_id: str) -> MemberT | None:
    """The member of ``members`` with ``member_id``, or ``None``.

    A group's handlers ask for many members of one state (each member blocked in a join, each member of a
    description): a scan per question made a JoinGroup completing a 3,000-member generation take seconds. A tuple of
    `INDEXED_FROM` members or more is indexed by id once, kept while it is one of the last `INDEXES_KEPT` asked
    about (a state's tuple never changes)."""
    if len(members) < INDEXED_FROM:
        for member in members:
            if member.member_id == member_id:
                return member
        return None
    entry = _INDEXES.get(id(members))
    if entry is None or entry[0] is not members:
        if len(_INDEXES) >= INDEXES_KEPT:
            _INDEXES.clear()
        entry = _INDEXES[id(members)] = (members, {member.member_id: member for member in members})
    found = entry[1].get(member_id)
    return cast("MemberT | None", found)


INDEXED_FROM = 16
INDEXES_KEPT = 256
_INDEXES: dict[int, tuple[tuple[Any, ...], dict[str, Any]]] = {}
"""Member tuples by ``id``, each kept with its index: the tuple itself is held, so its id is not reused while kept."""
