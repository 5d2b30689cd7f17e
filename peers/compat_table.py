"""Every peer suite against logwright, Apache Kafka and Tansu in one session, summed up in peers/results.md.

``make compat-table`` (opt-in, heavy: a Kafka JVM, the franz-go tests three times). The suites run one at a
time, each against a broker started fresh for it (peers/suite.py), and write their results as JSON; this
script turns them into a Markdown table: per suite and broker, how many tests ran, passed, failed and were
skipped; every logwright failure with its reason from the expected-failures file (or NOT LISTED) and what
the same test did on Kafka (one that passes there is a logwright bug or a missing feature); the logwright
failures of the previous table that pass now (*fixed*); the failures on Kafka and Tansu by name, since they
show which tests depend on the broker. The console output and results of each run are kept in
peers/.cache/compat-table/; ``--from-json`` writes the table again from them without running anything.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from peers.suite import BROKERS, SuiteResult  # noqa: E402

OUTPUT = ROOT / "peers" / "results.md"
LOGS = ROOT / "peers" / ".cache" / "compat-table"
BROKER_NAMES = {"logwright": "logwright", "kafka": "Apache Kafka 4.4.0 (KRaft, one node)",
                "tansu": "Tansu {version} (memory storage)"}


@dataclass(frozen=True, slots=True)
class Suite:
    name: str
    script: str
    expected: str | None
    """The logwright expected-failures file, where each listed failure's reason is kept."""


SUITES = (
    Suite("kafka-python 3.0.12 test/integration", "peers/kafka_python.py", "peers/kafka_python_expected_failures.txt"),
    Suite("franz-go v1.22.2 pkg/kgo", "peers/franz_go.py", "peers/franz_go_expected_failures.txt"),
    Suite("Java kafka-clients 4.4.0 scenario", "peers/java_client.py", None),
    Suite("KafkaJS 2.2.4 scenario", "peers/kafkajs_client.py", None),
    Suite("Sarama v1.62.0 scenario", "peers/sarama_client.py", None),
)


def run(suite: Suite, broker: str) -> SuiteResult:
    """One suite on one broker in a child process; a run that wrote no results becomes an error row."""
    LOGS.mkdir(parents=True, exist_ok=True)
    stem = f"{Path(suite.script).stem}-{broker}"
    results, log = LOGS / f"{stem}.json", LOGS / f"{stem}.log"
    results.unlink(missing_ok=True)
    started = time.monotonic()
    print(f"{suite.name} against {broker} ...", flush=True)
    with log.open("w") as sink:
        status = subprocess.run([sys.executable, suite.script, "--against", broker, "--results", str(results)],
                                cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT).returncode
    summary = log.read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
    print(f"  exit {status} after {time.monotonic() - started:.0f} s: {summary[0][:200]}", flush=True)
    if results.exists():
        return SuiteResult.read(results)
    return SuiteResult(suite.name, broker, error=f"no results (exit {status}); see {log.relative_to(ROOT)}")


def tansu_version() -> str:
    from bench.brokers import tansu_binary  # noqa: PLC0415 - peers.suite put bench's scripts on the path

    output = subprocess.run([str(tansu_binary()), "--version"], capture_output=True, text=True).stdout.split()
    return output[-1] if output else "?"


def logwright_version() -> str:
    described = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True)
    return f"logwright {described.stdout.strip() or '(no git)'}"


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def previous_failures(path: Path) -> dict[tuple[str, str], str]:
    """The logwright failures an earlier table listed, (suite, test) to reason; rows already marked fixed aside."""
    if not path.exists():
        return {}
    text = path.read_text()
    section = text[text.find("## logwright failures"):]
    section = section[:section.find("\n## ", 1)] if "\n## " in section[1:] else section
    row = re.compile(r"^\| (?P<suite>[^|]+) \| `(?P<test>[^`]+)` \| (?P<reason>.*?) \| (?P<status>[^|]+) \|[^|]*\|$")
    found = {}
    for line in section.splitlines():
        match = row.match(line)
        if match and not match["status"].startswith("fixed"):
            found[(match["suite"], match["test"])] = match["reason"]
    return found


def table(results: dict[tuple[str, str], SuiteResult], expected_files: dict[str, str | None],
          broker_names: dict[str, str], started: datetime, minutes: float,
          previous: dict[tuple[str, str], str]) -> str:
    lines = [
        "# Peer test suites against logwright, Apache Kafka and Tansu",
        "",
        f"Written by `make compat-table` (peers/compat_table.py), {started:%Y-%m-%d %H:%M} UTC, {minutes:.0f} min: "
        "every suite against each broker in one session, one run at a time, each on a broker started fresh for it. "
        "Brokers: " + "; ".join(broker_names[b] for b in BROKERS) + ". Counts are top-level tests (franz-go "
        "subtests in the notes); *failed* includes errors and tests without a result.",
        "",
        "| suite | broker | ran | passed | failed | skipped | notes |",
        "|---|---|---|---|---|---|---|",
    ]
    for (suite, broker), result in results.items():
        notes = [f"not run: {', '.join(f'{name} ({why})' for name, why in result.not_run.items())}"] \
            if result.not_run else []
        notes += result.notes
        if result.unexpected_passes:
            notes.append(f"listed but passed: {', '.join(result.unexpected_passes)}")
        if result.error:
            notes.insert(0, f"**could not run: {result.error}**")
        elif result.ran and result.failed == result.ran - result.skipped:
            notes.insert(0, f"**every test fails**, the first with: {result.failures[0].message}")
        counts = [str(n) for n in (result.ran, result.passed, result.failed, result.skipped)]
        lines.append(f"| {suite} | {broker} | {' | '.join(counts)} | {cell('; '.join(notes))} |")

    lines += ["", "## logwright failures", "",
              "Each is listed, with its reason, in the suite's expected-failures file (*tracked*); one that is not is "
              "a regression. *On Kafka*: the same test on Apache Kafka in this session; one that passes there is a "
              "logwright bug or a missing feature.", "",
              "| suite | test | reason | status | on Kafka |", "|---|---|---|---|---|"]
    for (suite, broker), result in results.items():
        if broker != "logwright":
            continue
        kafka = results.get((suite, "kafka"))
        for failure in result.failures:
            status = f"tracked ({expected_files[suite]})" if failure.listed else "**NOT LISTED**"
            lines.append(f"| {suite} | `{failure.test}` | {cell(failure.listed or failure.message)} | {status} | "
                         f"{kafka.outcome(failure.test) if kafka else 'not run'} |")
        for test, reason in result.not_run.items():
            lines.append(f"| {suite} | `{test}` | {cell(reason)} | not started (`skip` line in "
                         f"{expected_files[suite]}) | {kafka.outcome(test) if kafka else 'not run'} |")
        for (earlier_suite, test), reason in previous.items():
            if earlier_suite == suite and test in result.passes:
                lines.append(f"| {suite} | `{test}` | {reason} | fixed: failed in the previous table, passes now | "
                             f"{kafka.outcome(test) if kafka else 'not run'} |")

    for broker in BROKERS[1:]:
        lines += ["", f"## {broker_names[broker]}: failures", ""]
        for (suite, name), result in results.items():
            if name == broker:
                lines.append(f"- {suite}: " + (", ".join(f"`{f.test}`" for f in result.failures) or "none"))
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", default=",".join(Path(s.script).stem for s in SUITES),
                        help="comma-separated script names (default: all)")
    parser.add_argument("--brokers", default=",".join(BROKERS), help="comma-separated broker names (default: all)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--from-json", action="store_true", help="write the table from the last session's results")
    args = parser.parse_args()
    chosen = [s for s in SUITES if Path(s.script).stem in args.suites.split(",")]
    brokers = [b for b in BROKERS if b in args.brokers.split(",")]
    session = LOGS / "session.json"
    if args.from_json:
        results = {(suite.name, broker): SuiteResult.read(LOGS / f"{Path(suite.script).stem}-{broker}.json")
                   for suite in chosen for broker in brokers}
        recorded = json.loads(session.read_text())
    else:
        started, clock = datetime.now(UTC), time.monotonic()
        names = {**BROKER_NAMES, "logwright": logwright_version(),
                 "tansu": BROKER_NAMES["tansu"].format(version=tansu_version())}
        results = {(suite.name, broker): run(suite, broker) for suite in chosen for broker in brokers}
        recorded = {"started": started.isoformat(), "minutes": (time.monotonic() - clock) / 60, "names": names}
        session.write_text(json.dumps(recorded, indent=1) + "\n")
    text = table(results, {s.name: s.expected for s in SUITES}, recorded["names"],
                 datetime.fromisoformat(recorded["started"]), recorded["minutes"], previous_failures(args.output))
    args.output.write_text(text)
    print(text)
    print(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
