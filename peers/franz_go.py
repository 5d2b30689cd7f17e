"""Run franz-go's own ``pkg/kgo`` tests against a logwright broker process.

franz-go's authors run these tests against Apache Kafka, Redpanda and their kfake broker
(``KGO_SEEDS``, ``KGO_TEST_RF=1``); here they run unchanged against logwright. Nothing of franz-go is
committed: ``go mod download`` fetches the pinned release through the Go module proxy into
``peers/.cache/go`` (git-ignored), the go command checks it against the checksum database, and we check
its ``h1:`` hash against the one pinned below before copying the module to a temporary tree.

The tests adapt to the broker's ApiVersions: KIP-848 (ConsumerGroupHeartbeat v1), share groups
(ShareFetch/ShareAcknowledge v2) and static membership are skipped by franz-go itself when not offered,
and SCRAM tests skip without ``KGO_TEST_SCRAM``: logwright and Kafka are started with a SASL_PLAINTEXT listener
and a SCRAM-SHA-256 user, so TestSCRAMAuth and TestSCRAMAuthBadCredentials run. Transactions have no such
switch: ``skip`` lines in ``peers/franz_go_expected_failures.txt`` name tests we do not start (``go test
-skip``), because they hang or flood the log rather than fail. Other lines name tests expected to fail, each
with its reason. Exit status: 0 when every failing test is listed; 1 on an unlisted failure, a test with no result
(timeout or panic) or a dead broker; listed tests that pass are reported (and fail the run with
``--strict``) so the list shrinks as logwright grows.

``--against kafka|tansu`` runs the same tests on Apache Kafka or Tansu (peers/suite.py), every test started
(the ``skip`` lines are logwright's), failures reported by name with their first error line.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from peers.go_toolchain import go_command, mod_download  # noqa: E402
from peers.suite import (  # noqa: E402
    Expected,
    Failure,
    SuiteResult,
    add_arguments,
    broker,
    read_expected,
    run_recorded,
)

MODULE = "github.com/twmb/franz-go"
VERSION = "v1.22.2"
MODULE_SUM = "h1:EdwIHGzD/4mgCpl/sNS0C74JYn6cL/r2KYS+8UC96Ww="
"""The go.sum hash of franz-go v1.22.2 (also what sum.golang.org records for it)."""
CACHE = ROOT / "peers" / ".cache"
EXPECTED = ROOT / "peers" / "franz_go_expected_failures.txt"
TEST_ENV = {"KGO_TEST_RF": "1", "KGO_LOG_LEVEL": "none"}
"""One broker, so replication factor 1 (as franz-go's own CI does for single-node Kafka)."""
SCRAM_USER = ("franz", "franz-secret")
"""The SCRAM-SHA-256 user TestSCRAMAuth logs in as (``KGO_TEST_SCRAM``), on the broker's SASL listener."""


def add_scram_user(bootstrap: str, user: str, password: str, timeout_s: float = 30.0) -> None:
    """Store a SCRAM-SHA-256 credential as Kafka's Admin client does (the password salted here), and wait until
    the broker describes it (Kafka's broker sees its controller's change a moment later)."""
    import hashlib  # noqa: PLC0415 - only the SCRAM set-up needs these
    import os  # noqa: PLC0415

    from kio.schema.alter_user_scram_credentials.v0 import request as alter  # noqa: PLC0415
    from kio.schema.describe_user_scram_credentials.v0 import request as describe  # noqa: PLC0415
    from logwright.compat.registry import make  # noqa: PLC0415
    from logwright.testing.clients import one_request  # noqa: PLC0415

    salt = os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 4096)
    answer = one_request(bootstrap, make(alter.AlterUserScramCredentialsRequest, deletions=(), upsertions=(
        make(alter.ScramCredentialUpsertion, name=user, mechanism=1, iterations=4096, salt=salt,
             salted_password=salted),)))
    if [int(result.error_code) for result in answer.results] != [0]:
        raise SystemExit(f"storing the SCRAM user {user} failed: {answer}")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        described = one_request(bootstrap, make(describe.DescribeUserScramCredentialsRequest,
                                                users=(make(describe.UserName, name=user),)))
        if int(described.results[0].error_code) == 0:
            return
        time.sleep(0.2)
    raise SystemExit(f"the broker never described the SCRAM user {user}")


def fetch_module(go: list[str], env: dict[str, str]) -> Path:
    """The pinned module in the cache (downloaded on first use), verified against MODULE_SUM."""
    result = mod_download(go, ["-json", f"{MODULE}@{VERSION}"], env, CACHE)
    info = json.loads(result.stdout or "{}")
    if result.returncode or info.get("Error"):
        raise SystemExit(f"go mod download {MODULE}@{VERSION} failed: {info.get('Error') or result.stderr}")
    if info.get("Sum") != MODULE_SUM:
        raise SystemExit(f"{MODULE}@{VERSION}: sum {info.get('Sum')} is not the pinned {MODULE_SUM}")
    return Path(info["Dir"])


def source_tree(module: Path, go: list[str], env: dict[str, str]) -> Path:
    """A writable copy of the module at a stable path, so the go build cache serves later runs, with the
    modules it requires downloaded (retried) before ``go test`` would fetch them without a second try."""
    tree = CACHE / f"franz-go-{VERSION}"
    if not (tree / "go.mod").exists():
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(module, tree)
        for path in tree.rglob("*"):
            path.chmod(path.stat().st_mode | 0o200)
    result = mod_download(go, [], env, tree)
    if result.returncode:
        raise SystemExit(f"go mod download in {tree} failed: {result.stderr.strip()[-2000:]}")
    return tree


@dataclass(slots=True)
class TestOutcome:
    status: str  # pass, fail, skip, or noresult when the test never ended (timeout, panic)
    seconds: float = 0.0
    output: list[str] = field(default_factory=list)

    def first_error(self) -> str:
        """The first ``file_test.go:N: message`` line the test logged: usually why it failed."""
        for line in self.output:
            if re.match(r"\s*\w+_test\.go:\d+: ", line):
                return line.strip()[:300]
        return "no result (the go test timeout or a panic ended it)" if self.status == "noresult" else ""


RUN_ALONE = ("TestShareGroupETL",)
"""Run after the others, by themselves: TestShareGroupETL's 500k-record share pipeline must finish in its own
4-minute context and gates on one consumer reading 100k records first; beside TestGroupETL and TestTxnEtl on
two loaded cores that consumer kept flowing (about 400 records/s, measured from the broker's events) yet
missed the deadline. Alone it takes about 25 s."""


def run_tests(tree: Path, go: list[str], env: dict[str, str], args: argparse.Namespace,
              not_run: dict[str, str], events_path: Path) -> dict[str, TestOutcome]:
    """``go test -json`` on pkg/kgo; every test's outcome, "noresult" when it never ended. Without ``--run``,
    the `RUN_ALONE` tests get a second ``go test`` of their own after the rest."""
    alone = [] if args.run else [name for name in RUN_ALONE if name not in not_run]
    passes = [(args.run, sorted({*not_run, *alone}))] + [(f"^{re.escape(name)}$", []) for name in alone]
    outcomes: dict[str, TestOutcome] = {}
    with events_path.open("w") as sink:
        for run, skip in passes:
            command = [*go, "test", "-json", "-count=1", f"-timeout={args.timeout}", "-p=1",
                       f"-parallel={args.parallel}", "./pkg/kgo"]
            if skip:
                command.append("-skip=^(" + "|".join(re.escape(name) for name in skip) + ")$")
            if run:
                command.append(f"-run={run}")
            process = subprocess.Popen(command, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=sink, text=True)
            assert process.stdout is not None
            outcomes.update(read_events(process.stdout, sink))
            process.wait()
    return outcomes


def read_events(lines: Iterable[str], sink: IO[str] | None = None) -> dict[str, TestOutcome]:
    """Every test's outcome from ``go test -json`` lines (copied to ``sink`` as they come)."""
    outcomes: dict[str, TestOutcome] = {}
    for line in lines:
        if sink is not None:
            sink.write(line)
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        test, action = event.get("Test"), event.get("Action")
        if not test:
            continue
        if action == "run":
            outcomes[test] = TestOutcome("noresult")
        elif action == "output" and test in outcomes and len(outcomes[test].output) < 200:
            outcomes[test].output.append(event.get("Output", ""))
        elif action in ("pass", "fail", "skip") and test in outcomes:
            outcomes[test].status = action
            outcomes[test].seconds = float(event.get("Elapsed", 0.0))
    return outcomes


def summarize(result: SuiteResult, outcomes: dict[str, TestOutcome], expected: Expected) -> list[str]:
    """Counts of top-level tests and one failure per failing top-level test (with its first error line) into
    ``result``.

    Returns the failing leaves (subtests, or tests without failing subtests) that the list does not cover:
    on logwright, those fail the run. A listed test covers its subtests.
    """
    broker = result.broker
    failing = expected.failing if broker == "logwright" else {}

    def listed(name: str) -> str | None:
        parts = name.split("/")
        return next((failing[prefix] for prefix in ("/".join(parts[:i]) for i in range(1, len(parts) + 1))
                     if prefix in failing), None)

    failed = {name for name, outcome in outcomes.items() if outcome.status in ("fail", "noresult")}
    leaves = sorted(name for name in failed if not any(other.startswith(name + "/") for other in failed))
    top = {name: outcome for name, outcome in outcomes.items() if "/" not in name}
    result.ran = len(top)
    result.not_run = dict(expected.not_run) if broker == "logwright" else {}
    for name, outcome in sorted(top.items()):
        if outcome.status == "pass":
            result.passed += 1
            result.passes.append(name)
        elif outcome.status == "skip":
            result.skipped += 1
        else:
            own = [leaf for leaf in leaves if leaf == name or leaf.startswith(name + "/")] or [name]
            reasons = [listed(leaf) for leaf in own]
            message = next((outcomes[leaf].first_error() for leaf in own if outcomes[leaf].first_error()), "")
            if len(own) > 1 or own[0] != name:
                message = f"{', '.join(leaf.removeprefix(name + '/') for leaf in own)}: {message}"
            covered = None if None in reasons else "; ".join(dict.fromkeys(r for r in reasons if r))
            result.failures.append(Failure(name, message, covered))
    result.failed = len(result.failures)
    result.unexpected_passes = sorted(name for name in failing if name in outcomes and outcomes[name].status == "pass")
    subtests = [outcome.status for name, outcome in outcomes.items() if "/" in name]
    sub_failed = subtests.count("fail") + subtests.count("noresult")
    result.notes.append(f"subtests: {len(subtests)} ran, {subtests.count('pass')} passed, {sub_failed} failed, "
                        f"{subtests.count('skip')} skipped")
    skipped_because: dict[str, list[str]] = {}
    for name, outcome in sorted(outcomes.items()):
        if outcome.status == "skip":
            why = re.sub(r"^\w+_test\.go:\d+: ", "", outcome.first_error()) or "no reason given"
            skipped_because.setdefault(why, []).append(name)
    for why, names in skipped_because.items():
        result.notes.append(f"skipped ({why}): {', '.join(names)}")
    unexpected = [leaf for leaf in leaves if listed(leaf) is None] if broker == "logwright" else []
    return unexpected


def report(result: SuiteResult, outcomes: dict[str, TestOutcome], unexpected: list[str], strict: bool) -> int:
    """Per-test lines, then the counts. A parent that fails only through its subtests is not counted twice."""
    failures = {failure.test: failure for failure in result.failures}
    for name, outcome in sorted(outcomes.items()):
        if "/" in name:
            continue
        failure = failures.get(name)
        note = f"  # expected: {failure.listed}" if failure and failure.listed else ""
        note = note or (f"  # {failure.message}" if failure else "")
        print(f"  {outcome.status.upper():8} {name} ({outcome.seconds:.2f}s){note}")
    for name, reason in sorted(result.not_run.items()):
        print(f"  NOT RUN  {name}  # {reason}")
    for name in unexpected:
        print(f"  UNEXPECTED {'FAILURE' if outcomes[name].status == 'fail' else 'NO RESULT'}: {name}")
    for name in result.unexpected_passes:
        print(f"  UNEXPECTED PASS (remove it from {EXPECTED.name}): {name}")
    listed = sum(1 for failure in result.failures if failure.listed)
    print(f"franz-go {VERSION} pkg/kgo against {result.broker}: ran {result.ran} tests, passed {result.passed}, "
          f"failed {result.failed} ({listed} listed in {EXPECTED.name}), skipped {result.skipped}, not run "
          f"{len(result.not_run)}; {'; '.join(result.notes)}; {result.seconds:.1f}s")
    if unexpected:
        return 1
    if result.unexpected_passes and strict:
        print("--strict: unexpected passes count as failures")
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", help="go test -run pattern (default: every test)")
    parser.add_argument("--timeout", default="25m", help="go test -timeout (default 25m)")
    # One test at a time, as CI has always run them. Under -parallel 4 the share-group ETL once missed its own
    # 4-minute budget beside the other two ETL tests; session 25 measured the three together at 54-65 s on
    # logwright (TestShareGroupETL 46-53 s) and 80-89 s on Kafka 4.4, so -parallel 4 is safe to ask for.
    parser.add_argument("--parallel", type=int, default=1, help="go test -parallel (default 1)")
    parser.add_argument("--strict", action="store_true", help="also fail on unexpected passes")
    parser.add_argument("--keep", action="store_true", help="keep the temporary tree and broker log")
    add_arguments(parser)
    args = parser.parse_args()
    expected = read_expected(EXPECTED)
    if expected.flaky:  # a line this runner would silently ignore
        raise SystemExit(f"{EXPECTED.name}: 'flaky' lines are run again only by peers/kafka_python.py, not here: "
                         f"{', '.join(expected.flaky)}")
    CACHE.mkdir(parents=True, exist_ok=True)
    go, env = go_command(CACHE / "go")
    tree = source_tree(fetch_module(go, env), go, env)
    not_run = expected.not_run if args.against == "logwright" else {}
    events = CACHE / f"franz-go-{args.against}-last-run.jsonl"

    def body(work: Path, result: SuiteResult) -> int:
        sasl = {"sasl": "alice:alice-secret"} if args.against in ("logwright", "kafka") else {}
        with broker(args.against, work / args.against, {}, **sasl) as peer:
            started = time.monotonic()
            test_env = {**env, **TEST_ENV, "KGO_SEEDS": peer.bootstrap}
            if peer.sasl_port:  # franz-go's SCRAM tests: a SCRAM-SHA-256 user on the SASL listener
                add_scram_user(peer.bootstrap, *SCRAM_USER)
                test_env |= {"KGO_TEST_SCRAM": f"{SCRAM_USER[0]}:{SCRAM_USER[1]}:256",
                             "KGO_TEST_SCRAM_SEEDS": peer.sasl_bootstrap}
            outcomes = run_tests(tree, go, test_env, args, not_run, events)
            result.seconds = time.monotonic() - started
            alive, log_tail = peer.alive(), peer.log_tail()
        if not outcomes:
            print(events.read_text(errors="replace")[-5000:])
            return result.broke("go test reported no tests")
        unexpected = summarize(result, outcomes, expected)
        status = report(result, outcomes, unexpected, args.strict)
        if status:
            print(f"go test's events are in {events}")
        return status if alive else result.broke("the broker died during the run", log_tail)

    return run_recorded(args, f"franz-go {VERSION}", body)


if __name__ == "__main__":
    sys.exit(main())
