"""Members of a share group or a KIP-848 consumer group, kept as a tuple sorted by member id.

Both projections store members this way so their states compare and encode deterministically; one helper
replaces or adds a member for both. Finding a member by id (or, in classic groups, by group instance id) serves
classic groups too."""

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
    return cast("MemberT | None", _index(members, _INDEXES, "member_id").get(member_id))


def member_by_instance_id(members: tuple[Any, ...], group_instance_id: str) -> Any:
    """The first member of ``members`` whose ``group_instance_id`` is this one, or ``None``: a LeaveGroup naming
    static members by instance id asked once per entry, a scan of the tuple each (indexed as `member_by_id`)."""
    if len(members) < INDEXED_FROM:
        for member in members:
            if member.group_instance_id == group_instance_id:
                return member
        return None
    return _index(members, _INSTANCE_INDEXES, "group_instance_id").get(group_instance_id)


def _index(members: tuple[Any, ...], indexes: dict[int, tuple[tuple[Any, ...], dict[Any, Any]]],
           attribute: str) -> dict[Any, Any]:
    """``members`` by ``attribute`` (the first member with a value wins), built once per tuple."""
    entry = indexes.get(id(members))
    if entry is None or entry[0] is not members:
        if len(indexes) >= INDEXES_KEPT:
            indexes.clear()
        by_value: dict[Any, Any] = {}
        for member in members:
            by_value.setdefault(getattr(member, attribute), member)
        entry = indexes[id(members)] = (members, by_value)
    return entry[1]


INDEXED_FROM = 16
INDEXES_KEPT = 256
_INDEXES: dict[int, tuple[tuple[Any, ...], dict[Any, Any]]] = {}
"""Member tuples by ``id``, each kept with its index: the tuple itself is held, so its id is not reused while kept."""
_INSTANCE_INDEXES: dict[int, tuple[tuple[Any, ...], dict[Any, Any]]] = {}
"""The same, by group instance id (classic groups' static members)."""
