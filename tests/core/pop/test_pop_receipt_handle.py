"""Receipt handles: a round trip, and every malformed or foreign handle refused with a message."""

from __future__ import annotations

import uuid

import pytest
from logwright.core.pop.receipt_handle import ForeignReceiptHandle, InvalidReceiptHandle, ReceiptHandle

TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


def test_round_trip_keeps_a_group_with_spaces() -> None:
    handle = ReceiptHandle("my group 1", TOPIC_ID, 3, 1234, 7)
    assert handle.text() == "1 7 3 1234 00112233445566778899aabbccddeeff my group 1"
    assert ReceiptHandle.parse(handle.text()) == handle


@pytest.mark.parametrize("text", ["", "x", 5, None, "2 7 3 1 00112233445566778899aabbccddeeff g",
                                  "1 -7 3 1 00112233445566778899aabbccddeeff g", "1 7 3 1 nothex g",
                                  "1 7 3 1 00112233445566778899aabbccddeeff", "1 7 3 1 " + "a" * 600])
def test_anything_else_is_not_a_handle(text: object) -> None:
    with pytest.raises(InvalidReceiptHandle):
        ReceiptHandle.parse(text)


def test_a_handle_of_another_group_is_refused() -> None:
    with pytest.raises(ForeignReceiptHandle, match="group 'a' used by group 'b'"):
        ReceiptHandle("a", TOPIC_ID, 0, 0, 1).owned_by("b")
