"""`FlatSequence`: a tuple of small dataclasses that the codec stores as one flat tuple of integers."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from logwright.core.flat_sequence import FlatSequence


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int


class Spans(FlatSequence[Span]):
    ENTRY = Span
    __slots__ = ()


class OtherSpans(FlatSequence[Span]):
    ENTRY = Span
    __slots__ = ()


def test_it_is_built_from_entries_or_from_the_flat_integers_it_stores() -> None:
    spans = Spans((Span(1, 2), Span(5, 9)))
    assert spans.codec_plain() == (1, 2, 5, 9)
    assert Spans(spans.codec_plain()) == spans
    assert list(spans) == [Span(1, 2), Span(5, 9)] and len(spans) == 2
    assert spans[-1] == Span(5, 9) and spans[1:] == (Span(5, 9),)
    assert Spans() == () and not Spans() and Spans().codec_plain() == ()


def test_it_equals_the_tuple_of_its_entries_but_not_another_kind_holding_the_same() -> None:
    spans = Spans((Span(1, 2),))
    assert spans == (Span(1, 2),) and spans == Spans((Span(1, 2),))
    assert spans != OtherSpans((Span(1, 2),))
    assert hash(spans) == hash(Spans((Span(1, 2),)))
    assert repr(spans) == "Spans((Span(start=1, end=2),))"


def test_entries_of_one_field_are_refused_when_the_kind_is_declared() -> None:
    @dataclass(frozen=True)
    class Single:
        value: int

    with pytest.raises(TypeError, match="at least two fields"):
        class Singles(FlatSequence[Single]):
            ENTRY = Single
