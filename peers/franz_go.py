"""Run franz-go's own ``pkg/kgo`` tests against a logwright broker process.

franz-go's authors run these tests against Apache Kafka, Redpanda and their kfake broker
(``KGO_SEEDS``, ``KGO_TEST_RF=1``); here they run unchanged against logwright. Nothing of franz-go is
committed: ``go mod download`` fetches the pinned release through the Go module proxy into
``peers/.cache/go`` (git-ignored), the go command checks it against the checksum database, and we check
its ``h1:`` hash against the one pinned below before copying the module to a temporary tree.

The tests adapt to the broker's ApiVersions: KIP-848 (ConsumerGroupHeartbeat v1), share groups
(ShareFetch/ShareAcknowledge v2) and static membership are skipped by franz-go itself when not offered,
and SCRAM tests skip without ``KGO_TEST_SCRAM``. Transactions have no such switch: ``skip`` lines in
``peers/franz_go_expected_failures.txt`` name tests we do not start (``go test -skip``), because they hang
or flood the log rather than fail. Other lines name tests expected to fail, each with its reason.
Exit status: 0 when every failing test is listed; 1 on an unlisted failure, a test with no result
(timeout or panic) or a dead broker; listed tests that pass are reported (and fail the run with
``--strict``) so the list shrinks as logwright grows.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from peers.go_toolchain import go_command  # noqa: E402
from tests.integration.broker_process import BrokerProcess  # noqa: E402

MODULE = "github.com/twmb/franz-go"
VERSION = "v1.22.2"
MODULE_SUM = "h1:EdwIHGzD/4mgCpl/sNS0C74JYn6cL/r2KYS+8UC96Ww="
"""The go.sum hash of franz-go v1.22.2 (also what sum.golang.org records for it)."""
CACHE = ROOT / "peers" / ".cache"
EXPECTED = ROOT / "peers" / "franz_go_expected_failures.txt"
TEST_ENV = {"KGO_TEST_RF": "1", "KGO_LOG_LEVEL": "none"}
"""One broker, so replication factor 1 (as franz-go's own CI does for single-node Kafka)."""


def fetch_module(go: list[str], env: dict[str, str]) -> Path:
    """The pinned module in the cache (downloaded on first use), verified against MODULE_SUM."""
    result = subprocess.run([*go, "mod", "download", "-json", f"{MODULE}@{VERSION}"], env=env,
                            capture_output=True, text=True, check=False, cwd=CACHE)
    info = json.loads(result.stdout or "{}")
    if result.returncode or info.get("Error"):
        raise SystemExit(f"go mod download {MODULE}@{VERSION} failed: {info.get('Error') or result.stderr}")
    if info.get("Sum") != MODULE_SUM:
        raise SystemExit(f"{MODULE}@{VERSION}: sum {info.get('Sum')} is not the pinned {MODULE_SUM}")
    return Path(info["Dir"])


def source_tree(module: Path) -> Path:
    """A writable copy of the module at a stable path, so the go build cache serves later runs."""
    tree = CACHE / f"franz-go-{VERSION}"
    if not (tree / "go.mod").exists():
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(module, tree)
        for path in tree.rglob("*"):
            path.chmod(path.stat().st_mode | 0o200)
    return tree


def read_expected(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """``Test[/Sub]  # reason`` lines expected to fail and ``skip Test  # reason`` lines not run."""
    failing: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, _, reason = line.partition("#")
        words = name.split()
        if words[0] == "skip":
            skipped[words[1]] = reason.strip()
        else:
            failing[words[0]] = reason.strip()
    return failing, skipped


def run_tests(tree: Path, go: list[str], env: dict[str, str], args: argparse.Namespace,
              skipped: dict[str, str], events_path: Path) -> dict[str, tuple[str, float]]:
    """``go test -json`` on pkg/kgo; every test's (status, seconds), "noresult" when it never ended."""
    command = [*go, "test", "-json", "-count=1", f"-timeout={args.timeout}", "-p=1",
               f"-parallel={args.parallel}", "./pkg/kgo"]
    if skipped:
        command.append("-skip=^(" + "|".join(re.escape(name) for name in sorted(skipped)) + ")$")
    if args.run:
        command.append(f"-run={args.run}")
    outcomes: dict[str, tuple[str, float]] = {}
    with events_path.open("w") as sink:
        process = subprocess.Popen(command, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=sink, text=True)
        assert process.stdout is not None
        for line in process.stdout:
            sink.write(line)
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            test, action = event.get("Test"), event.get("Action")
            if not test:
                continue
            if action == "run":
                outcomes[test] = ("noresult", 0.0)
            elif action in ("pass", "fail", "skip"):
                outcomes[test] = (action, float(event.get("Elapsed", 0.0)))
        process.wait()
    return outcomes


def report(outcomes: dict[str, tuple[str, float]], failing: dict[str, str], skipped: dict[str, str],
           strict: bool, seconds: float) -> int:
    """Per-test lines, then the counts. A parent that fails only through its subtests is not counted twice."""
    def listed(name: str) -> bool:
        parts = name.split("/")
        return any("/".join(parts[:index]) in failing for index in range(1, len(parts) + 1))

    failed = {name for name, (status, _) in outcomes.items() if status in ("fail", "noresult")}
    leaves = {name for name in failed if not any(other.startswith(name + "/") for other in failed)}
    unexpected = sorted(name for name in leaves if not listed(name))
    xpassed = sorted(name for name in failing if outcomes.get(name, ("", 0))[0] == "pass")
    top = {name: outcome for name, outcome in outcomes.items() if "/" not in name}
    for name, (status, elapsed) in sorted(top.items()):
        note = f"  # expected: {failing[name]}" if status == "fail" and name in failing else ""
        print(f"  {status.upper():8} {name} ({elapsed:.2f}s){note}")
    for name in sorted(skipped):
        print(f"  NOT RUN  {name}  # {skipped[name]}")
    for name in unexpected:
        print(f"  UNEXPECTED {'FAILURE' if outcomes[name][0] == 'fail' else 'NO RESULT'}: {name}")
    for name in xpassed:
        print(f"  UNEXPECTED PASS (remove it from {EXPECTED.name}): {name}")

    def count(pool: dict[str, tuple[str, float]], status: str) -> int:
        return sum(1 for outcome in pool.values() if outcome[0] == status)

    subtests = {name: outcome for name, outcome in outcomes.items() if "/" in name}
    print(f"franz-go {VERSION} pkg/kgo against logwright: ran {len(top)} tests, passed {count(top, 'pass')}, "
          f"failed {count(top, 'fail') + count(top, 'noresult')} ({sum(1 for n in top if n in failing)} listed "
          f"in {EXPECTED.name}), skipped {count(top, 'skip')}, not run {len(skipped)}; subtests: "
          f"{len(subtests)} ran, {count(subtests, 'pass')} passed, {count(subtests, 'fail')} failed, "
          f"{count(subtests, 'skip')} skipped; {seconds:.1f}s")
    if unexpected:
        return 1
    if xpassed and strict:
        print("--strict: unexpected passes count as failures")
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", help="go test -run pattern (default: every test)")
    parser.add_argument("--timeout", default="25m", help="go test -timeout (default 25m)")
    parser.add_argument("--parallel", type=int, default=4, help="go test -parallel (default 4)")
    parser.add_argument("--strict", action="store_true", help="also fail on unexpected passes")
    parser.add_argument("--keep", action="store_true", help="keep the temporary tree and broker log")
    args = parser.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    go, env = go_command(CACHE / "go")
    module = fetch_module(go, env)
    failing, skipped = read_expected(EXPECTED)
    work = Path(tempfile.mkdtemp(prefix="franz-go-peers-"))
    broker = BrokerProcess(work / "data")
    events = CACHE / "franz-go-last-run.jsonl"
    try:
        tree = source_tree(module)
        broker.start()
        started = time.monotonic()
        test_env = {**env, **TEST_ENV, "KGO_SEEDS": broker.bootstrap}
        outcomes = run_tests(tree, go, test_env, args, skipped, events)
        seconds = time.monotonic() - started
        alive = broker.alive()
        if not outcomes:
            print(events.read_text(errors="replace")[-5000:])
            print("FAILED: go test reported no tests")
            return 1
        status = report(outcomes, failing, skipped, args.strict, seconds)
        if status:
            print(f"go test's events are in {events}")
        if not alive:
            print(f"FAILED: the broker died during the run:\n{broker.log_tail()}")
            return 1
        return status
    finally:
        broker.kill() if not broker.alive() else broker.stop()
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
