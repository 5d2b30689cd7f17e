"""Which targets two or more whole comparisons agree on: met in every run, unmet in every run, or changing sides.

One run of `compare.py --repeats 3` is three samples per row on a shared 2-core VM, and a row whose ratio sits near
its target can land on either side of it from one run to the next with the code unchanged. A gap is only
established when every run shows it. This reads the "Targets" table of each report (`compare.py --out`'s
Markdown), so runs from different sessions can be set side by side too (the rows are matched by workload and
metric).

    .venv/bin/python bench/compare_runs.py bench/results/compare-s30.md bench/results/compare-s30b.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

Row = tuple[str, str]
"""(workload, metric)."""


def targets(report: Path) -> dict[Row, tuple[str, bool]]:
    """Each row of the report's "Targets" table: its ratio as printed, and whether it was met."""
    rows: dict[Row, tuple[str, bool]] = {}
    inside = False
    for line in report.read_text().splitlines():
        if line.startswith("## "):
            if inside:
                break
            inside = line.startswith("## Targets")
            continue
        if not inside or not line.startswith("| ") or line.startswith(("| workload", "|---")):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        workload, metric, _target, ratio, met = cells[:5]  # a sixth column (repeat pairs met) since session 31
        rows[workload, metric] = (ratio, met == "yes")
    if not rows:
        raise SystemExit(f"{report}: no Targets table")
    return rows


def markdown(reports: list[Path]) -> str:
    runs = [targets(report) for report in reports]
    shared = [row for row in runs[0] if all(row in run for run in runs[1:])]
    always = [row for row in shared if all(run[row][1] for run in runs)]
    never = [row for row in shared if not any(run[row][1] for run in runs)]
    changing = [row for row in shared if row not in always and row not in never]
    header = "| workload | metric | " + " | ".join(report.stem for report in reports) + " |"
    rule = "|---|---|" + "---|" * len(reports)

    def table(rows: list[Row]) -> list[str]:
        return [header, rule, *(f"| {workload} | {metric} | " + " | ".join(
            run[workload, metric][0] + ("" if run[workload, metric][1] else " (no)") for run in runs) + " |"
            for workload, metric in rows)]

    return "\n".join([
        f"{len(shared)} rows in every report: met in every run {len(always)}, in none {len(never)}, "
        f"changing sides {len(changing)}.", "",
        "## Changing sides", "", *table(changing), "",
        "## Unmet in every run", "", *table(never), "",
        "## Met in every run", "", *table(always), ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+", type=Path, help="compare.py reports (.md)")
    print(markdown(parser.parse_args().reports))


if __name__ == "__main__":
    main()
