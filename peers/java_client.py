"""The Java client scenario (kafka-clients 4.4.0 from Maven Central, compiled with javac) against one broker.

peers/java/src/.../ClientScenario.java has twelve steps (producer; consumer group, classic and KIP-848;
KafkaShareConsumer with explicit acknowledgement; share group offsets through the Admin client; KIP-1191
dead-letter copies of a REJECT and of the delivery limit; a transactional consume-transform-produce loop with an
abort and a fenced zombie; a Kafka Streams 4.4.0 word count, exactly once, restored from its changelog; a producer
over the byte-rate quota the Admin client set, throttled; SCRAM credentials through the Admin client, then SASL
SCRAM-SHA-512 and PLAIN clients on the broker's SASL_PLAINTEXT listener; SSL and SASL_SSL listeners; consumers
resuming from offsets committed with a leader epoch, validated with OffsetForLeaderEpoch), each run as its own JVM
that prints ``OK <step>`` or ``FAIL <why>``. tests/peers/test_java_client.py runs them under pytest against
logwright and Apache Kafka (``make compat-java``); this script runs them against one broker (``--against
logwright|kafka|tansu``) for peers/compat_table.py. Needs java, javac and mvn.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from peers.scenario_steps import Command, run_scenario  # noqa: E402
from peers.suite import add_arguments  # noqa: E402

JAVA = ROOT / "peers" / "java"
STEPS = ("producer", "group", "consumer-protocol", "share", "share-offsets", "share-dlq", "transactions", "streams",
         "quotas", "sasl", "tls", "leader-epoch")
SUITE = "Java kafka-clients 4.4.0"
STEP_TIMEOUT_S = 240


def build() -> str:
    """Resolve kafka-clients and compile the scenario; returns the class path to run it with.

    Compiled once per change of the sources or the pom, under a lock: pytest-xdist workers run scenarios side by
    side, and javac rewriting class files under a running JVM (which loads them lazily) could hand it half a file.
    """
    from kafka_peer import resolve  # noqa: PLC0415 - bench/ is on sys.path once peers.suite is imported

    if shutil.which("javac") is None:
        raise RuntimeError("javac is missing: install a JDK 17+ (default-jdk-headless)")
    lib = JAVA / "target" / "lib"
    resolve(pom=JAVA / "pom.xml", lib=lib)
    classes = JAVA / "target" / "classes"
    sources = sorted((JAVA / "src").rglob("*.java"))
    digest = hashlib.sha256((JAVA / "pom.xml").read_bytes())
    for source in sources:
        digest.update(str(source).encode() + b"\0" + source.read_bytes())
    stamp = JAVA / "target" / ".classes-stamp"
    with (JAVA / "target" / ".classes.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (stamp.exists() and stamp.read_text() == digest.hexdigest()):
            stamp.unlink(missing_ok=True)
            subprocess.run(["javac", "-d", str(classes), "-cp", f"{lib}/*", *map(str, sources)], check=True)
            stamp.write_text(digest.hexdigest())
    return f"{classes}:{lib}/*"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args()

    def build_command(work: Path) -> Command:
        from kafka_peer import java  # noqa: PLC0415 - bench/ is on sys.path once peers.suite is imported

        classpath, binary = build(), java()
        return lambda bootstrap, step: [binary, "-cp", classpath, "logwright.peers.ClientScenario", bootstrap, step]

    # share.version=2: Kafka writes dead-letter copies (share-dlq) only on a cluster formatted with it; the sasl
    # step needs a SASL_PLAINTEXT listener with PLAIN user alice, the tls step SSL and SASL_SSL ones (certificates
    # made in a directory of their own)
    options = {"sasl": "alice:alice-secret", "tls": tempfile.mkdtemp(prefix="java-tls-"),
               **({"share_version": "2"} if args.against == "kafka" else {})}
    return run_scenario(args, SUITE, STEPS, build_command, STEP_TIMEOUT_S, options)


if __name__ == "__main__":
    sys.exit(main())
