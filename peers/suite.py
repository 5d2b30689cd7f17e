"""What the peer suites share: the broker they run against, their expected-failure lists, their results.

Every suite runs against logwright by default (what CI runs) and, with ``--against kafka|tansu``, against
Apache Kafka 4.x or Tansu started by ``bench/brokers.py``, so a failure can be told apart: one that Kafka
shares is the test's or the environment's, one that only logwright has is a logwright bug. The expected
failures files describe logwright only; against a peer, failures are reported by name and do not fail the
run. ``--results PATH`` writes a :class:`SuiteResult` as JSON for ``peers/compat_table.py``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BROKERS = ("logwright", "kafka", "tansu")
if str(ROOT / "bench") not in sys.path:
    sys.path.append(str(ROOT / "bench"))  # bench/brokers.py imports kafka_peer as a script would

from bench import brokers  # noqa: E402 - bench/ is a folder of scripts beside this one

RunningPeer = brokers.RunningPeer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--against", choices=BROKERS, default="logwright",
                        help="the broker to run the suite on (default logwright; kafka and tansu are peers)")
    parser.add_argument("--results", type=Path, help="write the counts and failures here as JSON")


@contextmanager
def broker(name: str, workdir: Path, config: dict[str, str], **options: str) -> Iterator[RunningPeer]:
    """The broker ``name`` on a free loopback port, answering Metadata, stopped (whole group) on exit;
    ``options`` are the launcher's (`bench/brokers.py`, e.g. Kafka's ``share_version``)."""
    with brokers.running(name, workdir, config, **options) as peer:
        yield peer


def accepts_config(name: str) -> bool:
    return brokers.PEERS[name].accepts_config


@dataclass(frozen=True, slots=True)
class Expected:
    """A suite's expected-failures file: tests expected to fail, tests not started, and tests run again once
    when they fail (a race in the client itself, shown on Apache Kafka too), each with its reason."""

    failing: dict[str, str]
    not_run: dict[str, str]
    flaky: dict[str, str] = field(default_factory=dict)


def read_expected(path: Path) -> Expected:
    """``test  # reason``, ``skip test  # reason`` and ``flaky test  # reason`` lines; ``#`` lines and blank
    lines are comments.

    A line without a reason is refused: the list is only useful if it says why each test fails.
    """
    failing: dict[str, str] = {}
    not_run: dict[str, str] = {}
    flaky: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, _, reason = line.partition("#")
        words = name.split()
        if not reason.strip() or not words:
            raise SystemExit(f"{path.name}:{number}: every line needs a test and a '# reason': {line!r}")
        if words[0] in ("skip", "flaky") and len(words) < 2:
            raise SystemExit(f"{path.name}:{number}: '{words[0]}' needs a test: {line!r}")
        if words[0] == "skip":
            not_run[words[1]] = reason.strip()
        elif words[0] == "flaky":
            flaky[words[1]] = reason.strip()
        else:
            failing[words[0]] = reason.strip()
    return Expected(failing, not_run, flaky)


@dataclass(frozen=True, slots=True)
class Failure:
    test: str
    message: str
    listed: str | None = None
    """The reason in the expected-failures file, when the test is listed there (logwright runs only)."""


@dataclass(slots=True)
class SuiteResult:
    """One suite on one broker: counts of top-level tests, the failures, what was not started and why."""

    suite: str
    broker: str
    ran: int = 0
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    seconds: float = 0.0
    failures: list[Failure] = field(default_factory=list)
    passes: list[str] = field(default_factory=list)
    """The tests that passed, by name: which of logwright's failures another broker passes."""
    not_run: dict[str, str] = field(default_factory=dict)
    unexpected_passes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    """Why the suite produced no results on this broker (it could not start, or it broke down)."""

    def outcome(self, test: str) -> str:
        """``passes``, ``fails`` or ``not run`` (skipped, not started, or no results at all)."""
        if test in self.passes:
            return "passes"
        return "fails" if any(failure.test == test for failure in self.failures) else "not run"

    def broke(self, why: str, detail: str = "") -> int:
        """Record why the run produced no trustworthy results, say so, and return the exit status 1."""
        self.error = why
        print(f"FAILED: {why}" + (f":\n{detail}" if detail else ""))
        return 1

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1) + "\n")

    @staticmethod
    def read(path: Path) -> SuiteResult:
        data = json.loads(path.read_text())
        data["failures"] = [Failure(**failure) for failure in data["failures"]]
        return SuiteResult(**data)


def run_recorded(args: argparse.Namespace, suite: str, body: Callable[[Path, SuiteResult], int]) -> int:
    """``body(work, result)`` in a temporary directory, its exit status returned.

    A broker that does not start, or a build step that fails, becomes the result's error; the result is
    written to ``--results`` however the run ends; the directory is removed unless ``--keep`` was given.
    """
    result = SuiteResult(suite, args.against)
    work = Path(tempfile.mkdtemp(prefix=f"{suite.split()[0].lower()}-peers-"))
    try:
        return body(work, result)
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        first = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        return result.broke(first, "" if str(exc) == first else str(exc))
    finally:
        if args.results:
            result.write(args.results)
        if getattr(args, "keep", False):
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
