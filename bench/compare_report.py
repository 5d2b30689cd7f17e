"""Medians, spreads, ratios to Apache Kafka, targets and the Markdown report of bench/compare.py.

Pure functions over the recorded samples, so a report can be rebuilt from the JSON of a run
(``compare.py --from-json``) and the arithmetic is unit-tested without starting a broker.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from compare_api import PEER_NAMES, REFERENCE, SUBJECT, Metric, OwnRatio, Workload

DISPLAY = {"kafka": "Apache Kafka", "tansu": "Tansu", "logwright": "logwright"}


@dataclass(frozen=True, slots=True)
class Sample:
    """One call of a workload's ``measure`` for one peer: its values, or why there are none."""

    workload: str
    peer: str
    repeat: int
    values: Mapping[str, float] = field(default_factory=dict)
    error: str | None = None
    not_applicable: str | None = None
    load: float = math.nan
    quiet_wait_s: float = 0.0
    """How long the other brokers took to go quiet before this measurement (`compare_api.wait_until_quiet`)."""
    page_cache_dropped: bool = False
    """Whether the page cache was dropped right before this measurement (`compare_api.release_page_cache`)."""


@dataclass(frozen=True, slots=True)
class Cell:
    """A metric of one peer over the repeats: median and range of ``n`` values, or a reason for none."""

    median: float = math.nan
    low: float = math.nan
    high: float = math.nan
    n: int = 0
    reason: str | None = None


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile (0 < q <= 100): a value that was observed, never interpolated."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = math.ceil(round(q * len(ordered) / 100, 9))  # 99.9 * 1000 / 100 is 999.0000000000001
    return ordered[min(max(rank, 1), len(ordered)) - 1]


NOT_MEASURED = "not measured"
"""The reason of a cell no sample gave a value for, none failing: a peer left out of the run (``--peers``), or a
metric added after the run a report is rebuilt from (``--from-json``)."""


def cell(samples: Iterable[Sample], key: str) -> Cell:
    """Median and min–max of ``key`` over the samples that have it; else the first reason given."""
    chosen = list(samples)
    values = [s.values[key] for s in chosen if key in s.values and not math.isnan(s.values[key])]
    if values:
        return Cell(statistics.median(values), min(values), max(values), len(values))
    reasons = [s.not_applicable for s in chosen if s.not_applicable] or [s.error for s in chosen if s.error]
    return Cell(reason=reasons[0] if reasons else NOT_MEASURED)


def ratio(subject: Cell, reference: Cell) -> float:
    """subject/reference of the medians; NaN when either is missing or the reference is zero."""
    if subject.n == 0 or reference.n == 0 or reference.median == 0:
        return math.nan
    return subject.median / reference.median


def meets(metric: Metric, value: float) -> bool | None:
    """Whether a ratio meets the metric's target; None when there is no target or no ratio."""
    if metric.target is None or math.isnan(value):
        return None
    if metric.higher_is_better:
        return value >= metric.target - metric.slack
    return value <= metric.target + metric.slack


def table(workload: Workload, samples: Sequence[Sample],
          names: Sequence[str] = PEER_NAMES) -> dict[tuple[str, str], Cell]:
    """(metric key, peer) -> Cell for one workload; unsupported peers carry their n/a reason."""
    cells: dict[tuple[str, str], Cell] = {}
    for peer in names:
        mine = [s for s in samples if s.workload == workload.name and s.peer == peer]
        for metric in workload.metrics:
            if peer in workload.not_applicable:
                cells[metric.key, peer] = Cell(reason=f"n/a: {workload.not_applicable[peer]}")
            else:
                cells[metric.key, peer] = cell(mine, metric.key)
    return cells


def ratios(workloads: Sequence[Workload], samples: Sequence[Sample], peer: str,
           plotted_only: bool = False) -> list[tuple[Workload, Metric, float]]:
    """Every metric's ratio of ``peer`` to Apache Kafka, in workload order (NaN where there is none)."""
    rows = []
    for workload in workloads:
        cells = table(workload, samples)
        for metric in workload.metrics:
            if plotted_only and not metric.plot:
                continue
            rows.append((workload, metric, ratio(cells[metric.key, peer], cells[metric.key, REFERENCE])))
    return rows


def _number(value: float, decimals: int) -> str:
    return "n/a" if math.isnan(value) else f"{value:,.{decimals}f}"


def _cell_text(c: Cell, decimals: int, repeats: int) -> str:
    if c.n == 0:
        if c.reason == NOT_MEASURED:
            return "–"
        return "n/a" if (c.reason or "").startswith("n/a") else "failed"
    text = _number(c.median, decimals)
    if c.n > 1:
        text += f" ({_number(c.low, decimals)}–{_number(c.high, decimals)})"
    if c.n < repeats:
        text += f" [{c.n}/{repeats}]"
    return text


def _verdict(metric: Metric, value: float) -> str:
    ok = meets(metric, value)
    if metric.target is None:
        return ""
    return f"{_target_text(metric)}: " + {True: "met", False: "**not met**", None: "n/a"}[ok]


def _target_text(metric: Metric) -> str:
    """"≥ 1", or with a slack "≥ 1 (within 0.1%)": the report says what was checked."""
    sign = "≥" if metric.higher_is_better else "≤"
    within = f" (within {metric.slack:.1%})" if metric.slack else ""
    return f"{sign} {metric.target:g}{within}"


def workload_section(workload: Workload, samples: Sequence[Sample]) -> list[str]:
    """A workload's heading, method, table (median (min–max) per peer, ratios to Kafka) and notes."""
    mine = [s for s in samples if s.workload == workload.name]
    repeats = max((s.repeat + 1 for s in mine), default=0)
    cells = table(workload, samples)
    others = [p for p in PEER_NAMES if p != REFERENCE]
    header = ["metric", *(DISPLAY[p] for p in PEER_NAMES), *(f"{DISPLAY[p]} / Kafka" for p in others), "target"]
    lines = [f"### {workload.name}", "", workload.method, "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for metric in workload.metrics:
        better = "higher" if metric.higher_is_better else "lower"
        unit = f"{metric.unit}, " if metric.unit and metric.unit not in metric.key else ""
        row = [f"{metric.key} ({unit}{better} is better)"]
        row += [_cell_text(cells[metric.key, p], metric.decimals, repeats) for p in PEER_NAMES]
        row += [_number(ratio(cells[metric.key, p], cells[metric.key, REFERENCE]), 2) for p in others]
        row.append(_verdict(metric, ratio(cells[metric.key, SUBJECT], cells[metric.key, REFERENCE])))
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    notes = sorted({f"{DISPLAY[p]}: {c.reason}" for (_, p), c in cells.items() if c.n == 0 and c.reason})
    notes += [f"{DISPLAY[s.peer]} repeat {s.repeat + 1} failed: {s.error}" for s in mine if s.error]
    lines += [f"- {note}" for note in notes]
    if notes:
        lines.append("")
    return lines


def values(samples: Iterable[Sample], workload: str, peer: str, key: str) -> list[float]:
    """Every repeat's value of ``key`` for ``peer`` in ``workload`` (NaN and missing left out)."""
    return [s.values[key] for s in samples if s.workload == workload and s.peer == peer and key in s.values
            and not math.isnan(s.values[key])]


def pairings_met(metric: Metric, subject: Sequence[float], reference: Sequence[float]) -> tuple[int, int]:
    """How many (logwright repeat, Kafka repeat) pairs meet the target, of how many pairs.

    The median's verdict says which side a row's centre is on; the pairs say whether the two brokers' spreads
    overlap it. Every pair on one side settles the row for this run; a row with pairs on both sides can land on
    either side in the next run with the code unchanged (session 30: 20 of 92 rows did). Pairs, not same-repeat
    ratios, because the peers' order rotates between repeats and a repeat is no shared condition."""
    pairs = [(ours, theirs) for ours in subject for theirs in reference if theirs != 0]
    return sum(bool(meets(metric, ours / theirs)) for ours, theirs in pairs), len(pairs)


def _met_word(verdict: bool | None) -> str:
    return {True: "yes", False: "**no**", None: "n/a"}[verdict]


def targets_section(workloads: Sequence[Workload], samples: Sequence[Sample]) -> list[str]:
    """One row per metric that has a target: logwright's ratio to Kafka, whether it meets it, and in how many pairs
    of repeats; above them, how many are met and how many are settled either way."""
    rows = ["| workload | metric | target (logwright / Kafka) | ratio | met | repeat pairs met |",
            "|---|---|---|---|---|---|"]
    met = unmet = settled_met = settled_unmet = most_pairs = 0
    for workload, metric, value in ratios(workloads, samples, SUBJECT):
        if metric.target is None:
            continue
        verdict = meets(metric, value)
        ok = _met_word(verdict)
        good, pairs = pairings_met(metric, values(samples, workload.name, SUBJECT, metric.key),
                                   values(samples, workload.name, REFERENCE, metric.key))
        most_pairs = max(most_pairs, pairs)
        met += verdict is True
        unmet += verdict is False
        settled_met += verdict is True and good == pairs > 0
        settled_unmet += verdict is False and good == 0 and pairs > 0
        rows.append(f"| {workload.name} | {metric.key} | {_target_text(metric)} | {_number(value, 2)} | {ok} | "
                    + (f"{good}/{pairs}" if pairs else "n/a") + " |")
    summary = f"{met} of {met + unmet} targets met by the medians"
    if most_pairs <= 1:
        summary += " (one repeat of each broker: its one pair of repeats says nothing about the spread)."
    else:
        left_open = met + unmet - settled_met - settled_unmet
        summary += (f". In every pair of a logwright repeat with a Kafka repeat: {settled_met} met, "
                    f"{settled_unmet} not met; the other {left_open} have pairs on both sides of their target (the "
                    "two brokers' spreads overlap it), so another run may put them on the other side.")
    return [summary, "", *rows]


def own_ratios_section(own_ratios: Sequence[OwnRatio], samples: Sequence[Sample]) -> list[str]:
    """One row per `OwnRatio` whose two workloads logwright was measured in: its ratio of medians against the target,
    in how many pairs of its repeats (one of each workload) it is met, and the other peers' ratios beside it; no
    lines when there is no such row."""
    rows = ["| workload / workload | metric | target | logwright | met | repeat pairs met | Apache Kafka | Tansu |",
            "|---|---|---|---|---|---|---|---|"]
    met = 0
    for own in own_ratios:
        ratio_of: dict[str, float] = {}
        for peer in PEER_NAMES:
            of, to = values(samples, own.of, peer, own.metric), values(samples, own.to, peer, own.metric)
            if of and to and statistics.median(to) != 0:
                ratio_of[peer] = statistics.median(of) / statistics.median(to)
        if SUBJECT not in ratio_of:
            continue
        metric = Metric(own.metric, target=own.target)
        verdict = meets(metric, ratio_of[SUBJECT])
        met += verdict is True
        good, pairs = pairings_met(metric, values(samples, own.of, SUBJECT, own.metric),
                                   values(samples, own.to, SUBJECT, own.metric))
        others = [_number(ratio_of[peer], 2) if peer in ratio_of else "–" for peer in (REFERENCE, "tansu")]
        cells = [f"{own.of} / {own.to}", own.metric, _target_text(metric), _number(ratio_of[SUBJECT], 2),
                 _met_word(verdict), f"{good}/{pairs}", *others]
        rows.append("| " + " | ".join(cells) + " |")
    if len(rows) == 2:
        return []
    return [f"A broker against itself: {met} of {len(rows) - 2} met by logwright's medians (each broker's ratio of "
            "its own medians; the pairs are of logwright's repeats, one of each workload).", "", *rows]


def markdown(workloads: Sequence[Workload], samples: Sequence[Sample], machine: Mapping[str, str],
             plot: str | None, title: str, own_ratios: Sequence[OwnRatio] = ()) -> str:
    """The whole report: machine and session, targets (against Kafka, then against itself), one section per
    workload, the plot."""
    own = own_ratios_section(own_ratios, samples)
    lines = [f"# {title}", "", "| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in machine.items()), "",
             "Each cell: median (min–max) over the repeats, [n/N] when only n of N repeats gave a value; "
             "– not measured in this run, n/a not applicable, failed: every repeat failed (why: under the table). "
             "Ratios are medians divided by Apache Kafka's median in the same session.", "",
             "## Targets", "", *targets_section(workloads, samples), "", *own, *([""] if own else [])]
    if plot:
        lines += [f"![ratios to Apache Kafka]({plot})", ""]
    lines += ["## Workloads", ""]
    for workload in workloads:
        lines += workload_section(workload, samples)
    return "\n".join(lines).rstrip() + "\n"
