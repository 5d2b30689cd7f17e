"""The Java client scenario (kafka-clients 4.4.0 from Maven Central, compiled with javac) against one broker.

peers/java/src/.../ClientScenario.java has seven steps (producer; consumer group, classic and KIP-848;
KafkaShareConsumer with explicit acknowledgement; share group offsets through the Admin client; KIP-1191
dead-letter copies of a REJECT and of the delivery limit; a transactional consume-transform-produce loop with an
abort and a fenced zombie; a Kafka Streams 4.4.0 word count, exactly once, restored from its changelog), each run as
its own JVM that
prints ``OK <step>`` or ``FAIL <why>``. tests/peers/test_java_client.py runs them under pytest against
logwright and Apache Kafka (``make compat-java``); this script runs them against one broker (``--against
logwright|kafka|tansu``) for peers/compat_table.py. Needs java, javac and mvn.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from peers.suite import Failure, SuiteResult, add_arguments, broker, run_recorded  # noqa: E402

JAVA = ROOT / "peers" / "java"
STEPS = ("producer", "group", "consumer-protocol", "share", "share-offsets", "share-dlq", "transactions", "streams")
SUITE = "Java kafka-clients 4.4.0"
STEP_TIMEOUT_S = 240


def build() -> str:
    """Resolve kafka-clients and compile the scenario; returns the class path to run it with."""
    from kafka_peer import resolve  # noqa: PLC0415 - bench/ is on sys.path once peers.suite is imported

    if shutil.which("javac") is None:
        raise RuntimeError("javac is missing: install a JDK 17+ (default-jdk-headless)")
    lib = JAVA / "target" / "lib"
    resolve(pom=JAVA / "pom.xml", lib=lib)
    classes = JAVA / "target" / "classes"
    sources = sorted(str(path) for path in (JAVA / "src").rglob("*.java"))
    subprocess.run(["javac", "-d", str(classes), "-cp", f"{lib}/*", *sources], check=True)
    return f"{classes}:{lib}/*"


def run_step(classpath: str, bootstrap: str, step: str) -> tuple[bool, str]:
    """Run one step in its own JVM: whether it printed ``OK <step>``, and its output otherwise."""
    from kafka_peer import java  # noqa: PLC0415

    try:
        run = subprocess.run([java(), "-cp", classpath, "logwright.peers.ClientScenario", bootstrap, step],
                             capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return False, f"no answer in {STEP_TIMEOUT_S} s"
    ok = run.returncode == 0 and f"OK {step}" in run.stdout
    return ok, "" if ok else f"{run.stdout}\n{run.stderr[-3000:]}"


def why(output: str) -> str:
    """The line that says why a step failed: its FAIL line, else the last exception the JVM printed."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    fail = next((line for line in lines if line.startswith("FAIL ")), None)
    exception = next((line for line in reversed(lines) if "Exception" in line and not line.startswith("at ")), None)
    return (fail or exception or (lines[-1] if lines else "no output"))[:300]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args()

    def body(work: Path, result: SuiteResult) -> int:
        classpath = build()
        # share.version=2: Kafka writes dead-letter copies (share-dlq) only on a cluster formatted with it
        options = {"share_version": "2"} if args.against == "kafka" else {}
        with broker(args.against, work / args.against, {}, **options) as peer:
            started = time.monotonic()
            for step in STEPS:
                ok, output = run_step(classpath, peer.bootstrap, step)
                result.ran += 1
                if ok:
                    result.passed += 1
                    result.passes.append(step)
                    print(f"  PASS {step}")
                else:
                    result.failures.append(Failure(step, why(output)))
                    print(f"  FAIL {step}: {output[-2000:]}")
            result.seconds = time.monotonic() - started
        result.failed = len(result.failures)
        print(f"{SUITE} scenario against {args.against}: ran {result.ran}, passed {result.passed}, "
              f"failed {result.failed}; {result.seconds:.1f}s")
        return 1 if result.failures and args.against == "logwright" else 0

    return run_recorded(args, SUITE, body)


if __name__ == "__main__":
    sys.exit(main())
