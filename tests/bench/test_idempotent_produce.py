"""bench/idempotent_produce.py's reading of librdkafka's statistics (the workload itself runs in bench/compare.py)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from idempotent_produce import WORKLOADS, Requests, requests_of  # noqa: E402


def _sample(*brokers: tuple[int, int, int, int, int]) -> dict[str, object]:
    return {"brokers": {f"b{index}": {"nodeid": node, "waitresp_cnt": waiting, "rtt": {"p50": p50}, "tx": sent,
                                      "txbytes": sent_bytes}
                        for index, (node, waiting, p50, sent, sent_bytes) in enumerate(brokers)}}


def test_the_round_trip_is_the_median_of_the_intervals_that_answered_and_the_bootstrap_connection_is_left_out() -> None:
    stats = [_sample((-1, 3, 9_999, 1, 68), (1, 1, 150, 10, 160_000)), _sample((1, 0, 0, 10, 160_000)),
             _sample((1, 1, 170, 30, 480_000)), _sample((1, 1, 160, 40, 640_000))]
    assert requests_of(stats) == Requests(160.0, 1, 16.0)


def test_a_run_whose_intervals_never_answered_has_no_round_trip() -> None:
    requests = requests_of([_sample((1, 0, 0, 0, 0))])
    assert math.isnan(requests.round_trip_p50_us) and requests.most_awaiting == 0 and math.isnan(requests.mean_kb)
    assert math.isnan(requests_of([]).round_trip_p50_us)


def test_one_workload_per_batch_size_the_round_trip_only_for_small_batches_which_the_quick_run_has() -> None:
    large, small = WORKLOADS
    assert (large.smoke, small.smoke) == (False, True)
    assert "request round trip p50 us" in [metric.key for metric in small.metrics]
    assert "request round trip p50 us" not in [metric.key for metric in large.metrics]
    assert "batch.size=16384" in small.method and "batch.size" not in large.method.split("into a fresh")[0]
    assert all(workload.not_applicable == {"tansu": "not part of this comparison"} for workload in WORKLOADS)
