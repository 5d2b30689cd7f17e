"""Run kafka-python 3.0.12's own ``test/integration`` suite against a logwright broker process (or a peer).

The peer suite is the strongest compatibility evidence we have: tests written by the client's authors
for Apache Kafka, run unchanged. Its code is never committed: the sdist is downloaded from PyPI at run
time into ``peers/.cache`` (git-ignored) and checked against a pinned SHA-256.

The sdist ships ``test/integration`` but not ``test/__init__.py`` nor ``test/service.py`` (kafka-python's
packaging drops the top of its test tree). We add a package marker and a ``test/service.py`` of our own
holding the two names the fixtures import: ``ExternalService`` (all the suite needs with ``KAFKA_URI``)
and a ``SpawnedService`` that refuses to start, since we never let the suite launch Apache Kafka.

Each test's outcome is compared with ``peers/kafka_python_expected_failures.txt`` (one test id per line,
``id  # reason``). Exit status: 0 when every failure is listed; 1 when a test fails that is not listed
(a regression); unexpected passes are reported (and fail the run with ``--strict``) so the list is
pruned as logwright grows. A test listed ``flaky`` (a race in kafka-python itself, reproduced on Apache Kafka)
is run once more when it fails, and its second outcome stands. SASL and SSL tests need a broker with
security, which logwright does not have yet: their files are not collected, and the summary says so.

``--against kafka|tansu`` runs the same tests on Apache Kafka or Tansu (peers/suite.py): Kafka gets the rest of
the suite's own broker template (an ACL authorizer among others), and failures there are reported by name only.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from peers.suite import (  # noqa: E402
    Failure,
    SuiteResult,
    accepts_config,
    add_arguments,
    broker,
    read_expected,
    run_recorded,
)

VERSION = "3.0.12"
SDIST = f"kafka_python-{VERSION}.tar.gz"
SDIST_SHA256 = "4ccda3616b9aa5c353d74a97f2770d6cd1b950890d77ab0e8890e09a48eeed65"
KAFKA_VERSION = "4.3.0"
"""The broker version the suite is told it runs against: kafka-python 3.0.12 infers 4.3 from the API set logwright
advertises (DescribeLogDirs v5 is 4.3's)."""
KAFKA_VERSIONS = {"kafka": "4.4.0", "tansu": "4.2.0"}
"""Apache Kafka declares its own release (kafka-python 3.0.12 knows up to 4.3 and infers that from 4.4's
ApiVersions); Tansu has no Kafka release of its own and is told 4.2.0, the API set it serves."""
CACHE = ROOT / "peers" / ".cache"
EXPECTED = ROOT / "peers" / "kafka_python_expected_failures.txt"
SECURITY_FILES = ("test_sasl_integration.py", "test_ssl_integration.py")
BROKER_CONFIG = {"node.id": "0", "num.partitions": "4", "group.min.session.timeout.ms": "1000",
                 "group.initial.rebalance.delay.ms": "0"}
"""What the suite's own Kafka fixture configures (its servers/4.0.0 kafka.properties template): broker id 0,
four partitions per topic, session timeouts down to one second, no initial rebalance delay."""
AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "allow.everyone.if.no.acl.found": "true"}
PEER_CONFIG = {"kafka": {**AUTHORIZER, "default.replication.factor": "1", "offsets.topic.num.partitions": "2",
                         "offsets.commit.timeout.ms": "500"},
               "logwright": AUTHORIZER}
"""The rest of that template: its ACL tests need an authorizer (without one both brokers refuse the ACL keys with
SECURITY_DISABLED); the other keys are Kafka's internal topics', which logwright has no use for."""

SERVICE_SHIM = '''"""Written by logwright's peers/kafka_python.py: the sdist lacks test/service.py."""


class ExternalService:
    """A broker someone else runs (KAFKA_URI): nothing to start, stop or wait for."""

    def __init__(self, host, port):
        self.host = host
        self.port = port

    def start(self):
        pass

    def stop(self):
        pass

    def wait_for(self, pattern, timeout=30):
        return True

    def dump_logs(self):
        pass


class SpawnedService:
    """Launching Apache Kafka is not what this run is for."""

    def __init__(self, args=None, env=None):
        raise RuntimeError("the logwright peer run never spawns Apache Kafka; set KAFKA_URI")
'''


@dataclass(frozen=True, slots=True)
class Outcome:
    test_id: str
    status: str  # passed, failed, error, skipped
    message: str


def fetch_sdist() -> Path:
    """The pinned sdist, from the cache or downloaded with pip (PyPI) on first use."""
    CACHE.mkdir(parents=True, exist_ok=True)
    archive = CACHE / SDIST
    if not archive.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
             f"kafka-python=={VERSION}", "--dest", str(CACHE)],
            check=True,
        )
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        archive.unlink()
        raise SystemExit(f"{SDIST}: SHA-256 {digest} is not the pinned {SDIST_SHA256}; removed it, run again")
    return archive


def unpack(archive: Path, into: Path) -> Path:
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later
            tar.extractall(into, filter="data")
        else:  # Debian's 3.11.2 (`make` may build .venv on it): no filters, so check what the "data" filter would
            root = into.resolve()
            for member in tar.getmembers():
                if not (member.isfile() or member.isdir()) or not (into / member.name).resolve().is_relative_to(root):
                    raise SystemExit(f"{archive.name}: {member.name} is not a plain file or folder inside the tree")
            tar.extractall(into)  # noqa: S202 - every member checked above, and the archive's SHA-256 is pinned
    tree = into / f"kafka_python-{VERSION}"
    (tree / "test" / "__init__.py").write_text("")
    (tree / "test" / "service.py").write_text(SERVICE_SHIM)
    return tree


def kafka_version(broker: str) -> str:
    return KAFKA_VERSIONS.get(broker, KAFKA_VERSION)


def run_suite(tree: Path, bootstrap: str, version: str, junit: Path, output: Path, extra: list[str],
              targets: Sequence[str] = ("test/integration",)) -> int:
    """pytest on the sdist's test/integration (or the ``targets`` node ids), the installed kafka-python shadowed
    by the sdist's own.

    Its console output goes to ``output``: the closing line of this run is ours, which counts the
    listed failures as xfailed (as pytest itself would), not pytest's raw "N failed".
    """
    env = {**os.environ, "KAFKA_VERSION": version, "KAFKA_URI": f"PLAINTEXT://{bootstrap}",
           "KAFKA_ROOT": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "pytest", *targets, "-p", "no:cacheprovider", "-q", "--timeout=300",
               "--junitxml", str(junit), "-o", "log_level=WARNING", "-o", "junit_family=xunit1",
               *(f"--ignore=test/integration/{name}" for name in SECURITY_FILES), *extra]
    with output.open("wb") as sink:
        return subprocess.run(command, cwd=tree, env=env, stdout=sink, stderr=subprocess.STDOUT).returncode


def read_outcomes(junit: Path) -> list[Outcome]:
    outcomes = []
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        module = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        test_id = f"{Path(module).name}::{case.get('name')}"
        status, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                status = {"failure": "failed"}.get(child.tag, child.tag)
                message = (child.get("message") or "").splitlines()[0][:160] if child.get("message") else ""
                break
        outcomes.append(Outcome(test_id, status, message))
    return outcomes


def rerun_flaky(outcomes: list[Outcome], flaky: dict[str, str], rerun: Callable[[list[str]], list[Outcome]],
                result: SuiteResult) -> list[Outcome]:
    """Each failed test listed as flaky, run once more; its second outcome stands and a note says so.

    Only tests whose failure is a race in kafka-python itself, reproduced on Apache Kafka, are listed: a broker
    fault that fails such a test twice in a row still fails the run.
    """
    again = [outcome for outcome in outcomes if outcome.status in ("failed", "error") and outcome.test_id in flaky]
    if not again:
        return outcomes
    second = {outcome.test_id: outcome for outcome in rerun([outcome.test_id for outcome in again])}
    for first in again:
        then = second.get(first.test_id)
        result.notes.append(f"{first.test_id} failed ({first.message}), listed as flaky ({flaky[first.test_id]}), "
                            f"run again: {then.status if then else 'no result'}")
        print(f"  run again (flaky): {first.test_id}: first {first.status}: {first.message}; "
              f"then {then.status if then else 'no result'}")
    run_again = {outcome.test_id for outcome in again}
    return [second.get(outcome.test_id, outcome) if outcome.test_id in run_again else outcome for outcome in outcomes]


def summarize(result: SuiteResult, outcomes: list[Outcome], expected: dict[str, str]) -> None:
    """The counts and failures into ``result``; the expected-failures list applies to logwright runs only."""
    listed = expected if result.broker == "logwright" else {}
    result.ran = len(outcomes)
    for outcome in outcomes:
        if outcome.status in ("failed", "error"):
            result.failures.append(Failure(outcome.test_id, outcome.message, listed.get(outcome.test_id)))
        elif outcome.status == "skipped":
            result.skipped += 1
        else:
            result.passed += 1
            result.passes.append(outcome.test_id)
            if outcome.test_id in listed:
                result.unexpected_passes.append(outcome.test_id)
    result.failed = len(result.failures)
    result.notes.append(f"KAFKA_VERSION={kafka_version(result.broker)}")
    result.notes.append(f"{', '.join(SECURITY_FILES)} not collected (no SASL/SSL listener in these runs)")


def report(result: SuiteResult, outcomes: list[Outcome], strict: bool) -> int:
    for failure in result.failures:
        if failure.listed is not None:
            print(f"  expected failure: {failure.test}: {failure.listed}")
        elif result.broker == "logwright":
            print(f"  UNEXPECTED FAILURE: {failure.test}: {failure.message}")
        else:
            print(f"  failed on {result.broker}: {failure.test}: {failure.message}")
    for test_id in result.unexpected_passes:
        print(f"  UNEXPECTED PASS (remove it from {EXPECTED.name}): {test_id}")
    for outcome in outcomes:
        if outcome.status == "skipped":
            print(f"  skipped: {outcome.test_id}: {outcome.message}")
    xfailed = sum(1 for failure in result.failures if failure.listed is not None)
    unexpected = result.failed - xfailed if result.broker == "logwright" else 0
    print(f"kafka-python {VERSION} test/integration against {result.broker}: ran "
          f"{result.ran}, passed {result.passed}, failed {result.failed} ({xfailed} listed in {EXPECTED.name}), "
          f"skipped {result.skipped}; {'; '.join(result.notes)}")
    xpassed = len(result.unexpected_passes)
    counts = [(unexpected, "failed"), (result.passed - xpassed, "passed"), (result.skipped, "skipped"),
              (xfailed, "xfailed"), (xpassed, "xpassed")]
    print(", ".join(f"{count} {word}" for count, word in counts if count or word == "passed")
          + f" in {result.seconds:.1f}s")
    if unexpected:
        return 1
    if xpassed and strict:
        print("--strict: unexpected passes count as failures")
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="also fail on unexpected passes")
    parser.add_argument("--keep", action="store_true", help="keep the temporary tree and broker log")
    add_arguments(parser)
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (e.g. -k test_group)")
    args = parser.parse_args()
    listed = read_expected(EXPECTED)
    expected = listed.failing
    archive = fetch_sdist()
    output = CACHE / "last-run.log"

    def body(work: Path, result: SuiteResult) -> int:
        tree = unpack(archive, work)
        with broker(args.against, work / args.against, {**BROKER_CONFIG, **PEER_CONFIG.get(args.against, {})}) as peer:
            version = kafka_version(args.against)

            def rerun(test_ids: list[str]) -> list[Outcome]:
                junit = work / "junit-again.xml"
                run_suite(tree, peer.bootstrap, version, junit, CACHE / "last-rerun.log", [],
                          [f"test/integration/{test_id}" for test_id in test_ids])
                return read_outcomes(junit) if junit.exists() else []

            started = time.monotonic()
            run_suite(tree, peer.bootstrap, version, work / "junit.xml", output, args.pytest_args)
            outcomes = read_outcomes(work / "junit.xml") if (work / "junit.xml").exists() else None
            if outcomes is not None:
                outcomes = rerun_flaky(outcomes, listed.flaky, rerun, result)
            result.seconds = time.monotonic() - started
            alive, log_tail = peer.alive(), peer.log_tail()
        if outcomes is None:
            print(output.read_text(errors="replace")[-5000:])
            return result.broke("pytest wrote no results")
        summarize(result, outcomes, expected)
        if not accepts_config(args.against):
            settings = ", ".join(f"{key}={value}" for key, value in BROKER_CONFIG.items())
            result.notes.append(f"{args.against} takes no broker settings: its defaults, not the suite's {settings}")
        status = report(result, outcomes, args.strict)
        if status:
            print(f"pytest's output is in {output}; its summary:")
            text = output.read_text(errors="replace")
            print(text[text.rfind("short test summary"):][-5000:])
        return status if alive else result.broke("the broker died during the run", log_tail)

    return run_recorded(args, f"kafka-python {VERSION}", body)


if __name__ == "__main__":
    sys.exit(main())
