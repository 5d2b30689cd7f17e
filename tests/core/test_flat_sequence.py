"""`FlatSequence`: a tuple of small dataclasses that the codec stores as one flat tuple of integers."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st
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


class GrowingSpans(FlatSequence[Span]):
    ENTRY = Span
    __slots__ = ()

    def plus(self, span: Span) -> GrowingSpans:
        return GrowingSpans._built(*self._with(span))


SPANS = st.lists(st.builds(Span, st.integers(-2**63, 2**63 - 1), st.integers(0, 2**40)), max_size=30)


@given(spans=SPANS, added=SPANS)
def test_entries_and_flat_form_agree_however_the_sequence_was_made_and_extended(spans: list[Span],
                                                                               added: list[Span]) -> None:
    """From entries, from the stored integers, flattened or not before entries are added: the same entries and the
    same integers."""
    expected = GrowingSpans((*spans, *added))
    for start in (GrowingSpans(spans), GrowingSpans(GrowingSpans(spans).codec_plain())):
        for flatten_first in (False, True):
            grown = GrowingSpans(start.codec_plain()) if flatten_first else start
            for span in added:
                grown = grown.plus(span)
            assert grown == expected and list(grown) == [*spans, *added] and len(grown) == len(expected)
            assert grown.codec_plain() == expected.codec_plain()


def test_the_flat_form_is_made_once_and_carried_over_to_an_extended_sequence() -> None:
    """A row the store rewrites on every transaction of its partition is not flattened again each time (5 ms at
    50,000 aborted transactions), and one read from the store is not turned into entries until read."""
    stored = GrowingSpans((1, 2, 5, 9))
    assert stored.codec_plain() is stored.codec_plain() and len(stored) == 2
    grown = stored.plus(Span(10, 11))
    assert grown.codec_plain() == (1, 2, 5, 9, 10, 11) and grown.codec_plain() is grown.codec_plain()
    built = GrowingSpans((Span(1, 2),))
    assert built.codec_plain() is built.codec_plain()


def test_stored_integers_that_are_not_whole_entries_are_refused() -> None:
    with pytest.raises(ValueError, match="not whole entries"):
        GrowingSpans((1, 2, 3))
