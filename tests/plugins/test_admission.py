"""`Admission`: decisions for many partitions at once, and lookups by index (a wide Produce's admission was
quadratic: each refusal copied the admission, each lookup searched it)."""

from __future__ import annotations

from logwright.core.cursors.plugin_decisions import ADMIT_ALL, Admission, Deduplication
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


def test_ten_thousand_refusals_at_once_build_one_list() -> None:
    admission = Admission().refusing((partition, PolicyViolation("quota")) for partition in range(10_000))
    assert len(admission.refused) == 10_000 and all(admission.error_for(n) is not None for n in range(10_000))


def test_refusals_one_a_call_share_one_list_and_each_admission_keeps_its_own() -> None:
    """A plugin refusing a 10,000-partition Produce one call at a time copied the tuple of every earlier refusal
    each call (61 ms; 40,000: two seconds). Every admission along the way still reads as it was."""
    errors = [PolicyViolation(f"quota {n}") for n in range(10_000)]
    admissions = [Admission()]
    for partition, error in enumerate(errors):
        admissions.append(admissions[-1].refuse(partition, error))
    shared = {id(admission._refused._items) for admission in admissions[1:]}
    assert len(shared) == 1, "each refusal copied the ones before it"
    for count in (0, 1, 2, 5_000, 9_999, 10_000):
        assert admissions[count].refused == tuple(enumerate(errors[:count]))
        assert admissions[count].error_for(count) is None
        assert count == 0 or admissions[count].error_for(count - 1) is errors[count - 1]
    branch = admissions[5].refuse(77_777, PolicyViolation("branch"))
    assert [partition for partition, _ in branch.refused] == [0, 1, 2, 3, 4, 77_777]
    assert admissions[6].refused[-1] == (5, errors[5]) and admissions[6].error_for(77_777) is None
    assert admissions[10_000].refuse(3, PolicyViolation("again")) is admissions[10_000], "partition 3 was decided"
    assert admissions[3] == Admission(((0, errors[0]), (1, errors[1]), (2, errors[2])))


def test_the_empty_admission_keeps_no_request_s_refusals() -> None:
    refused = ADMIT_ALL.refuse(1, PolicyViolation("one request"))
    assert ADMIT_ALL.refused == () and ADMIT_ALL._refused._items == [] and refused.refused[0][0] == 1
