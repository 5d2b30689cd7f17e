"""The peer suites' expected-failures files and the one rerun a ``flaky`` line buys (pure: no broker, no pytest run).

A ``flaky`` line names a test whose failure is a race in the client itself; it is run once more when it fails.
These tests hold the rule's edges: a second failure still fails, a test not listed is never run again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from peers.kafka_python import EXPECTED, Outcome, report, rerun_flaky, summarize
from peers.suite import SuiteResult, read_expected

RACE = "test_producer_integration.py::test_idempotent_producer_max_in_flight[1]"


def test_flaky_skip_and_failing_lines_are_told_apart(tmp_path: Path) -> None:
    listed = tmp_path / "expected.txt"
    listed.write_text("# comment\n\na.py::t1  # fails here\nskip a.py::t2  # not started\n"
                      "flaky a.py::t3  # the client's race\n")
    expected = read_expected(listed)
    assert expected.failing == {"a.py::t1": "fails here"}
    assert expected.not_run == {"a.py::t2": "not started"}
    assert expected.flaky == {"a.py::t3": "the client's race"}


def test_a_flaky_line_needs_a_test_and_a_reason(tmp_path: Path) -> None:
    listed = tmp_path / "expected.txt"
    listed.write_text("flaky  # no test named\n")
    with pytest.raises(SystemExit, match="needs a test"):
        read_expected(listed)
    listed.write_text("flaky a.py::t3\n")
    with pytest.raises(SystemExit, match="reason"):
        read_expected(listed)


def test_the_kafka_python_race_is_listed_as_flaky_not_as_failing() -> None:
    expected = read_expected(EXPECTED)
    assert RACE in expected.flaky
    assert RACE not in expected.failing


def run(outcomes: list[Outcome], second: dict[str, str]) -> tuple[list[Outcome], list[list[str]], SuiteResult]:
    """``rerun_flaky`` with a rerun that answers ``second``'s status per test and records what it was asked."""
    asked: list[list[str]] = []

    def rerun(test_ids: list[str]) -> list[Outcome]:
        asked.append(test_ids)
        return [Outcome(test_id, second[test_id], "") for test_id in test_ids if test_id in second]

    result = SuiteResult("kafka-python", "logwright")
    return rerun_flaky(outcomes, {RACE: "race"}, rerun, result), asked, result


def test_a_flaky_test_that_passes_the_second_time_counts_as_passed() -> None:
    outcomes, asked, result = run([Outcome("a.py::ok", "passed", ""), Outcome(RACE, "failed", "assert set()")],
                                  {RACE: "passed"})
    assert asked == [[RACE]]
    assert [outcome.status for outcome in outcomes] == ["passed", "passed"]
    assert any(RACE in note and "assert set()" in note for note in result.notes)
    summarize(result, outcomes, {})
    assert report(result, outcomes, strict=False) == 0


def test_a_flaky_test_that_fails_twice_fails_the_run() -> None:
    outcomes, asked, result = run([Outcome(RACE, "failed", "first")], {RACE: "failed"})
    assert asked == [[RACE]]
    summarize(result, outcomes, {})
    assert report(result, outcomes, strict=False) == 1


def test_a_flaky_test_without_a_second_result_keeps_its_first_failure() -> None:
    outcomes, _, result = run([Outcome(RACE, "failed", "first")], {})
    assert outcomes == [Outcome(RACE, "failed", "first")]
    assert any("no result" in note for note in result.notes)


def test_only_failed_tests_listed_as_flaky_are_run_again() -> None:
    outcomes = [Outcome("a.py::broken", "failed", "x"), Outcome(RACE, "passed", ""), Outcome("a.py::s", "skipped", "")]
    again, asked, result = run(outcomes, {})
    assert asked == []
    assert again == outcomes
    assert result.notes == []


def test_the_franz_go_runner_refuses_flaky_lines_it_would_not_run_again(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from peers import franz_go  # noqa: PLC0415 - only this test needs the module

    listed = tmp_path / "franz_go_expected_failures.txt"
    listed.write_text("flaky TestGroupETL  # a race\n")
    monkeypatch.setattr(franz_go, "EXPECTED", listed)
    monkeypatch.setattr("sys.argv", ["franz_go.py"])
    with pytest.raises(SystemExit, match="only by peers/kafka_python.py"):
        franz_go.main()
