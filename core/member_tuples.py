"""Members of a share group or a KIP-848 consumer group, kept as a tuple sorted by member id.

Both projections store members this way so their states compare and encode deterministically; one helper
replaces or adds a member for both. Finding a member by id serves classic groups too."""

from __future__ import annotations

from typing import Protocol, TypeVar


class HasMemberId(Protocol):
    @property
    def member_id(self) -> str: ...


MemberT = TypeVar("MemberT", bound=HasMemberId)


def with_member(members: tuple[MemberT, ...], member: MemberT) -> tuple[MemberT, ...]:
    """``members`` with ``member`` in place of the one of the same id (or added), sorted by member id."""
    others = [existing for existing in members if existing.member_id != member.member_id]
    return tuple(sorted((*others, member), key=lambda m: m.member_id))


def member_by_id(members: tuple[MemberT, ...], member_id: str) -> MemberT | None:
    """The member of ``members`` with ``member_id``, or ``None``."""
    for member in members:
        if member.member_id == member_id:
            return member
    return None
