"""The arithmetic and wording of bench/compare.py's report: percentiles, medians, ratios, targets, n/a.

No broker and no timing: samples are built by hand.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from compare_api import Metric, NotApplicable, OwnRatio, Workload  # noqa: E402
from compare_report import (  # noqa: E402
    Sample,
    cell,
    markdown,
    meets,
    own_ratios_section,
    pairings_met,
    percentile,
    ratio,
    ratios,
    table,
    targets_section,
)


def _never(ctx: object, peer: str) -> dict[str, float]:
    raise NotApplicable("not called")


THROUGHPUT = Workload("produce", (Metric("MB/s", "MB/s", target=1.0), Metric("msg/s", plot=False)), _never,
                      method="m")
LATENCY = Workload("latency", (Metric("p99", "ms", higher_is_better=False, target=1.5),), _never, method="m",
                   not_applicable={"tansu": "no reason"})


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 1001)]
    assert percentile(values, 50) == 500
    assert percentile(values, 99) == 990
    assert percentile(values, 99.9) == 999
    assert percentile([3.0, 1.0, 2.0], 100) == 3.0
    assert percentile([7.0], 0.1) == 7.0
    assert math.isnan(percentile([], 50))


def test_cell_takes_median_and_range_over_the_repeats_that_gave_a_value() -> None:
    samples = [Sample("produce", "kafka", 0, {"MB/s": 10.0}), Sample("produce", "kafka", 1, {"MB/s": 30.0}),
               Sample("produce", "kafka", 2, {"MB/s": 12.0}), Sample("produce", "kafka", 3, error="boom")]
    got = cell(samples, "MB/s")
    assert (got.median, got.low, got.high, got.n) == (12.0, 10.0, 30.0, 3)
    assert cell(samples[3:], "MB/s").reason == "boom"


def test_ratio_and_targets_follow_the_direction_of_better() -> None:
    samples = [Sample("produce", "kafka", 0, {"MB/s": 100.0}), Sample("produce", "logwright", 0, {"MB/s": 80.0}),
               Sample("latency", "kafka", 0, {"p99": 10.0}), Sample("latency", "logwright", 0, {"p99": 14.0})]
    by_metric = {(w.name, m.key): r for w, m, r in ratios([THROUGHPUT, LATENCY], samples, "logwright")}
    assert by_metric["produce", "MB/s"] == pytest.approx(0.8)
    assert by_metric["latency", "p99"] == pytest.approx(1.4)
    assert meets(THROUGHPUT.metrics[0], 0.8) is False
    assert meets(LATENCY.metrics[0], 1.4) is True
    assert meets(THROUGHPUT.metrics[1], 2.0) is None
    assert math.isnan(ratio(cell([], "MB/s"), cell(samples[:1], "MB/s")))


def test_a_rate_the_workload_fixes_meets_its_target_within_the_slack_and_says_so() -> None:
    offered = Metric("delivered rec/s", "rec/s", target=1.0, slack=0.001)
    assert meets(offered, 4000.2 / 4000.33) is True  # both delivered what was offered, but for the window's edges
    assert meets(offered, 0.998) is False
    assert meets(Metric("delivered rec/s", target=1.0), 4000.2 / 4000.33) is False
    assert meets(Metric("p99", higher_is_better=False, target=1.0, slack=0.01), 1.009) is True
    workload = Workload("pairs", (offered,), _never, method="m")
    samples = [Sample("pairs", "kafka", 0, {"delivered rec/s": 4000.33}),
               Sample("pairs", "logwright", 0, {"delivered rec/s": 4000.2})]
    report = markdown([workload], samples, {"date": "today"}, None, "t")
    assert "| pairs | delivered rec/s | ≥ 1 (within 0.1%) | 1.00 | yes |" in report
    assert "≥ 1 (within 0.1%): met" in report


def test_unsupported_peer_is_na_with_its_reason_in_the_report() -> None:
    samples = [Sample("latency", "kafka", 0, {"p99": 10.0}), Sample("latency", "logwright", 0, {"p99": 20.0})]
    assert table(LATENCY, samples)["p99", "tansu"].reason == "n/a: no reason"
    text = markdown([LATENCY], samples, {"date": "today"}, "compare.png", "title")
    assert "| latency | p99 | ≤ 1.5 | 2.00 | **no** |" in text
    assert "- Tansu: n/a: no reason" in text
    assert "| p99 (ms, lower is better) | 10.0 | n/a | 20.0 | n/a | 2.00 | ≤ 1.5: **not met** |" in text


def test_a_peer_left_out_of_the_run_is_not_reported_failed() -> None:
    samples = [Sample("latency", "kafka", 0, {"p99": 10.0}), Sample("latency", "logwright", 0, {"p99": 20.0})]
    text = markdown([THROUGHPUT, LATENCY], samples + [Sample("produce", "kafka", 0, {"MB/s": 1.0}),
                                                      Sample("produce", "logwright", 0, {"MB/s": 2.0})],
                    {"date": "today"}, "compare.png", "title")
    assert "| MB/s (higher is better) | 1.0 | – | 2.0 | n/a | 2.00 | ≥ 1: met |" in text
    assert "| msg/s (higher is better) | – | – | – | n/a | n/a |  |" in text
    assert "| failed |" not in text


def test_pairs_of_repeats_say_whether_the_spreads_overlap_the_target() -> None:
    throughput, latency = THROUGHPUT.metrics[0], LATENCY.metrics[0]
    assert pairings_met(throughput, [110.0, 120.0], [90.0, 100.0, 105.0]) == (6, 6)
    assert pairings_met(throughput, [80.0, 95.0], [90.0, 100.0]) == (1, 4)  # only 95 against 90 meets >= 1
    assert pairings_met(latency, [14.0, 16.0], [10.0]) == (1, 2)  # 1.4 meets <= 1.5, 1.6 does not
    assert pairings_met(throughput, [1.0], [0.0]) == (0, 0)  # a zero reference makes no pair
    assert pairings_met(throughput, [], [1.0]) == (0, 0)


def test_the_targets_table_counts_rows_settled_either_way_and_those_left_open() -> None:
    samples = [Sample("produce", "kafka", 0, {"MB/s": 100.0}), Sample("produce", "kafka", 1, {"MB/s": 104.0}),
               Sample("produce", "logwright", 0, {"MB/s": 120.0}), Sample("produce", "logwright", 1, {"MB/s": 130.0}),
               Sample("latency", "kafka", 0, {"p99": 10.0}), Sample("latency", "kafka", 1, {"p99": 12.0}),
               Sample("latency", "logwright", 0, {"p99": 14.0}), Sample("latency", "logwright", 1, {"p99": 19.0})]
    lines = targets_section([THROUGHPUT, LATENCY], samples)
    assert lines[0].startswith("2 of 2 targets met by the medians. In every pair of a logwright repeat with a Kafka "
                               "repeat: 1 met, 0 not met; the other 1 have pairs on both sides")
    assert lines[-2] == "| produce | MB/s | ≥ 1 | 1.23 | yes | 4/4 |"
    # 14/10 and 14/12 meet <= 1.5, 19/10 and 19/12 do not; the medians' ratio 16.5/11 = 1.5 meets it
    assert lines[-1] == "| latency | p99 | ≤ 1.5 | 1.50 | yes | 2/4 |"


def test_one_repeat_claims_nothing_about_the_spread() -> None:
    samples = [Sample("produce", "kafka", 0, {"MB/s": 100.0}), Sample("produce", "logwright", 0, {"MB/s": 120.0})]
    assert targets_section([THROUGHPUT], samples)[0] == (
        "1 of 1 targets met by the medians (one repeat of each broker: its one pair of repeats says nothing about the "
        "spread).")


SCALING = (OwnRatio("many", "one", "MB/s", 0.5),)


def test_a_broker_against_itself_is_the_ratio_of_its_own_medians_with_the_pairs_of_its_repeats() -> None:
    samples = [Sample("one", "logwright", 0, {"MB/s": 200.0}), Sample("one", "logwright", 1, {"MB/s": 300.0}),
               Sample("many", "logwright", 0, {"MB/s": 120.0}), Sample("many", "logwright", 1, {"MB/s": 140.0}),
               Sample("one", "kafka", 0, {"MB/s": 100.0}), Sample("many", "kafka", 0, {"MB/s": 10.0})]
    lines = own_ratios_section(SCALING, samples)
    assert lines[0].startswith("A broker against itself: 1 of 1 met by logwright's medians")
    # 130 / 250 = 0.52; of the pairs 120/200, 140/200 meet >= 0.5, 120/300 and 140/300 do not; Tansu unmeasured
    assert lines[-1] == "| many / one | MB/s | ≥ 0.5 | 0.52 | yes | 2/4 | 0.10 | – |"


def test_a_ratio_logwright_was_not_measured_in_leaves_the_report_alone() -> None:
    samples = [Sample("one", "logwright", 0, {"MB/s": 200.0}), Sample("many", "kafka", 0, {"MB/s": 10.0}),
               Sample("one", "kafka", 0, {"MB/s": 100.0})]
    assert own_ratios_section(SCALING, samples) == []
    missed = own_ratios_section(SCALING, samples + [Sample("many", "logwright", 0, {"MB/s": 40.0})])
    assert missed[0].startswith("A broker against itself: 0 of 1 met")
    assert missed[-1] == "| many / one | MB/s | ≥ 0.5 | 0.20 | **no** | 0/1 | 0.10 | – |"
    workload = Workload("one", (Metric("MB/s", "MB/s"),), _never, method="m")
    assert "against itself" not in markdown([workload], samples, {"date": "today"}, None, "t", SCALING)
    assert "| many / one | MB/s |" in markdown([workload], samples + [Sample("many", "logwright", 0, {"MB/s": 40.0})],
                                               {"date": "today"}, None, "t", SCALING)
