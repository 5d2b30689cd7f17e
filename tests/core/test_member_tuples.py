"""Members kept as tuples: finding one by id, in a tuple of any size, without scanning it for each question."""

from __future__ import annotations

from logwright.core import member_tuples
from logwright.core.member_tuples import INDEXED_FROM, member_by_id, with_member


class Member:
    """A member whose id reads are counted."""

    reads = 0

    def __init__(self, member_id: str, note: str = "") -> None:
        self._member_id, self.note = member_id, note

    @property
    def member_id(self) -> str:
        Member.reads += 1
        return self._member_id


def test_every_member_of_a_big_group_is_found_by_one_pass_over_it() -> None:
    """A JoinGroup completing a 3,000-member generation asks for each member: a scan each made it take seconds."""
    members = tuple(Member(f"m{i:04}") for i in range(3_000))
    Member.reads = 0
    for member in members:
        assert member_by_id(members, member._member_id) is member
    assert member_by_id(members, "nobody") is None
    assert Member.reads <= 2 * len(members), Member.reads


def test_a_new_tuple_is_never_answered_from_another_ones_index() -> None:
    """The index is kept by the tuple's ``id``, with the tuple: an entry left under the same id by another tuple (ids
    are reused once an object is gone) is never taken for this one's."""
    members = tuple(Member(f"m{i:03}") for i in range(INDEXED_FROM + 5))
    other = tuple(Member(f"m{i:03}", "other") for i in range(INDEXED_FROM + 5))
    member_tuples._INDEXES[id(members)] = (other, {member._member_id: member for member in other})
    assert member_by_id(members, "m001") is members[1]
    replaced = with_member(members, Member("m001", "again"))
    found = member_by_id(replaced, "m001")
    assert found is not None and found.note == "again"
    small = (Member("a"), Member("b"))
    assert member_by_id(small, "b") is small[1] and member_by_id(small, "c") is None
