"""The extension keys' body validation: every malformed field is an `InvalidRequest` naming it."""

from __future__ import annotations

import msgpack
import pytest
from logwright.compat.wire.extension_body import answer, decode, integer, ranges, text
from logwright.core.errors import InvalidRequest


def test_a_body_must_be_a_msgpack_map() -> None:
    assert decode(msgpack.packb({"a": 1})) == {"a": 1}
    with pytest.raises(InvalidRequest, match="not msgpack"):
        decode(b"\xc1")
    with pytest.raises(InvalidRequest, match="must be a msgpack map, got list"):
        decode(msgpack.packb([1, 2]))


@pytest.mark.parametrize("value", [None, [], [[1]], [[2, 1]], [[-1, 3]], [[0, True]], [["0", 1]], "0-1"])
def test_offset_ranges_must_be_inclusive_non_negative_pairs(value: object) -> None:
    with pytest.raises(InvalidRequest, match="ranges"):
        ranges(value)


def test_valid_fields_are_returned_as_they_are() -> None:
    assert ranges([[0, 0], [4, 9]]) == ((0, 0), (4, 9))
    assert text({"group_id": "g"}, "group_id") == "g"
    assert integer({}, "priority", default=0) == 0
    with pytest.raises(InvalidRequest, match="'group_id' must be a non-empty string"):
        text({"group_id": ""}, "group_id")
    with pytest.raises(InvalidRequest, match="'delay_ms' must be an integer of at least 0"):
        integer({"delay_ms": -5}, "delay_ms")
    with pytest.raises(InvalidRequest, match="'offset'"):
        integer({"offset": True}, "offset")


def test_every_answer_carries_an_error_code_and_message() -> None:
    assert msgpack.unpackb(answer()) == {"error_code": 0, "error_message": None}
    assert msgpack.unpackb(answer(42, "bad", results=[])) == {"error_code": 42, "error_message": "bad", "results": []}


def test_ranges_are_int64_offsets() -> None:
    assert ranges([[0, 2**63 - 1]]) == ((0, 2**63 - 1),)
    with pytest.raises(InvalidRequest):
        ranges([[0, 2**64 - 1]])
