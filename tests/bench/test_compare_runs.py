"""`compare_runs` sorts the Targets rows of several reports into met in every run, in none, and changing sides."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from compare_runs import markdown, targets  # noqa: E402

_REPORT = """# logwright, Apache Kafka and Tansu side by side

## Targets

| workload | metric | target (logwright / Kafka) | ratio | met |
|---|---|---|---|---|
| produce, 1 KiB | produce MB/s | ≥ 1 | {a} | {a_met} |
| produce, 1 KiB | produce CPU s/GB | ≤ 0.5 | {b} | {b_met} |
| groups: 1,000 committing | commit p99 ms | ≤ 1 | {c} | {c_met} |

![ratios to Apache Kafka](x.png)

## Workloads

| metric | Apache Kafka | logwright |
|---|---|---|
| produce MB/s (higher is better) | 1 | 2 |
"""


def _report(path: Path, **cells: str) -> Path:
    path.write_text(_REPORT.format(**cells))
    return path


def test_rows_are_sorted_by_whether_every_run_met_them(tmp_path: Path) -> None:
    first = _report(tmp_path / "one.md", a="1.20", a_met="yes", b="0.90", b_met="**no**", c="0.80", c_met="yes")
    second = _report(tmp_path / "two.md", a="1.05", a_met="yes", b="1.10", b_met="**no**", c="3.13", c_met="**no**")
    assert targets(first) == {("produce, 1 KiB", "produce MB/s"): ("1.20", True),
                              ("produce, 1 KiB", "produce CPU s/GB"): ("0.90", False),
                              ("groups: 1,000 committing", "commit p99 ms"): ("0.80", True)}
    text = markdown([first, second])
    assert text.startswith("3 rows in every report: met in every run 1, in none 1, changing sides 1.")
    changing = text.split("## Changing sides")[1].split("## Unmet")[0]
    assert "| groups: 1,000 committing | commit p99 ms | 0.80 | 3.13 (no) |" in changing
    never = text.split("## Unmet in every run")[1].split("## Met")[0]
    assert "| produce, 1 KiB | produce CPU s/GB | 0.90 (no) | 1.10 (no) |" in never
    assert "| produce, 1 KiB | produce MB/s | 1.20 | 1.05 |" in text.split("## Met in every run")[1]


def test_a_report_with_the_repeat_pairs_column_reads_the_same(tmp_path: Path) -> None:
    """Reports since session 31 have a sentence above the table and a sixth column, the repeat pairs met."""
    report = tmp_path / "six.md"
    report.write_text("## Targets\n\n2 of 2 targets met by the medians. In every pair ...\n\n"
                      "| workload | metric | target (logwright / Kafka) | ratio | met | repeat pairs met |\n"
                      "|---|---|---|---|---|---|\n"
                      "| produce, 1 KiB | produce MB/s | ≥ 1 | 1.20 | yes | 7/9 |\n"
                      "| groups: 1,000 committing | commit p99 ms | ≤ 1 | 3.13 | **no** | 0/9 |\n\n## Workloads\n")
    assert targets(report) == {("produce, 1 KiB", "produce MB/s"): ("1.20", True),
                               ("groups: 1,000 committing", "commit p99 ms"): ("3.13", False)}
