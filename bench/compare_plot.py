"""The PNG of bench/compare.py: for every plotted metric, logwright's and Tansu's ratio to Apache Kafka.

Bars on a logarithmic axis (2x faster and 2x slower are the same distance from 1), a line at 1 (Kafka), a
marker at each metric's target, and "↑"/"↓" in the label saying which direction is better.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

from compare_api import PEER_NAMES, REFERENCE, SUBJECT, Workload
from compare_report import DISPLAY, Sample, ratios

COLOURS = {"logwright": "#2b6cb0", "tansu": "#dd8452"}


def _two_and_five(y: float, _position: int) -> str:
    """Minor tick labels at 2x and 5x of each decade only: every one crowds the axis over several decades."""
    digit = f"{y:.0e}"[0]
    return f"{y:g}" if digit in "25" else ""


def plot(workloads: Sequence[Workload], samples: Sequence[Sample], path: Path, title: str) -> None:
    import matplotlib  # noqa: PLC0415 - the bench extra; only when a plot is written

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    import matplotlib.ticker  # noqa: PLC0415

    others = [p for p in PEER_NAMES if p != REFERENCE]
    series = {peer: ratios(workloads, samples, peer, plotted_only=True) for peer in others}
    rows = series[SUBJECT]
    labels = [textwrap.fill(w.name, 17) + f"\n{m.key} {'↑' if m.higher_is_better else '↓'}" for w, m, _ in rows]
    width = 0.8 / len(others)
    fig, ax = plt.subplots(figsize=(max(8.0, 1.05 * len(rows) + 1.5), 6.5))
    for i, peer in enumerate(others):
        xs = [x + (i - (len(others) - 1) / 2) * width for x in range(len(rows))]
        heights = [0.0 if math.isnan(v) else v - 1.0 for _, _, v in series[peer]]
        bars = ax.bar(xs, heights, width, bottom=1.0, label=f"{DISPLAY[peer]} / Kafka", color=COLOURS.get(peer))
        for bar, (_, _, value) in zip(bars, series[peer], strict=True):
            text = "n/a" if math.isnan(value) else f"{value:.2f}"
            above = math.isnan(value) or value >= 1.0
            ax.annotate(text, (bar.get_x() + bar.get_width() / 2, 1.0 if math.isnan(value) else value),
                        ha="center", va="bottom" if above else "top", fontsize=7,
                        xytext=(0, 2 if above else -2), textcoords="offset points")
    for x, (_, metric, _) in enumerate(rows):
        if metric.target is not None:
            ax.hlines(metric.target, x - 0.45, x + 0.45, colors="#c53030", linestyles="dashed", linewidth=1.2)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:g}"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(_two_and_five))
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.set_ylabel("ratio to Apache Kafka (same session, medians)")
    ax.set_xticks(range(len(rows)), labels, fontsize=7)
    ax.plot([], [], color="#c53030", linestyle="dashed", label="logwright target")
    ax.legend(fontsize=8)
    ax.set_title(textwrap.fill(title, 90), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
