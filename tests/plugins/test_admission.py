"""`Admission`: decisions for many partitions at once, and lookups by index (a wide Produce's admission was
quadratic: each refusal copied the admission, each lookup searched it)."""

from __future__ import annotations

import pytest
from logwright.core.cursors import plugin_decisions
from logwright.core.cursors.plugin_decisions import Admission, Deduplication
from logwright.core.errors import PolicyViolation


def test_decisions_given_at_once_keep_the_first_for_each_partition() -> None:
    first, second = PolicyViolation("first"), PolicyViolation("second")
    admission = Admission().refusing([(1, first), (2, second), (1, second)]).refuse(2, first)
    assert admission.refused == ((1, first), (2, second))
    assert admission.error_for(1) is first and admission.error_for(2) is second and admission.error_for(3) is None
    dedup = Deduplication(lambda record: None, 1_000, "key")
    other = Deduplication(lambda record: None, 2_000, "key")
    deduplicated = admission.deduplicating([(5, dedup), (5, other)]).deduplicate(6, other)
    assert deduplicated.deduplicated == ((5, dedup), (6, other))
    assert deduplicated.deduplication_for(5) is dedup and deduplicated.refused == admission.refused
    assert Admission(((7, first), (7, second))).error_for(7) is first, "built by hand: the first still wins"
    assert admission.refusing([]) is admission


def test_ten_thousand_refusals_copy_the_admission_once(monkeypatch: pytest.MonkeyPatch) -> None:
    built = 0
    init = Admission.__init__

    def counted(self: Admission, *args: object, **kwargs: object) -> None:
        nonlocal built
        built += 1
        init(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(plugin_decisions.Admission, "__init__", counted)
    admission = Admission().refusing((partition, PolicyViolation("quota")) for partition in range(10_000))
    assert len(admission.refused) == 10_000 and all(admission.error_for(n) is not None for n in range(10_000))
    assert built == 2
