"""The Sarama client scenario (IBM/sarama v1.62.0 from the Go module proxy) against one broker.

peers/sarama/scenario.go has four steps (an idempotent producer's batches in gzip, snappy, lz4 and zstd with keys
and headers, read back in order; a consumer group shared by two members, committed and resumed; consume-transform-
produce transactions with an abort and a fenced zombie; the admin client's configs, record deletion, partitions,
group offsets and deletions); the producer and group steps speak Sarama's default protocol version (2.8), the others
its newest. The program is built once with the Go toolchain `peers/go_toolchain.py` provides (modules cached in
peers/.cache/go) and each step runs as its own process that prints ``OK <step>`` or ``FAIL <why>``.
tests/peers/test_js_go_clients.py runs them under pytest against logwright and Apache Kafka (``make
compat-clients``); this script runs them against one broker (``--against logwright|kafka|tansu``) for
peers/compat_table.py.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from peers.go_toolchain import go_command, mod_download  # noqa: E402
from peers.scenario_steps import Command, run_scenario  # noqa: E402
from peers.suite import add_arguments  # noqa: E402

SARAMA = ROOT / "peers" / "sarama"
CACHE = ROOT / "peers" / ".cache"
STEPS = ("producer", "group", "transactions", "admin", "sasl")
SUITE = "Sarama v1.62.0"
STEP_TIMEOUT_S = 180


def build(work: Path) -> Command:
    """Download the pinned modules (go.sum checks them; three tries) and build the scenario into ``work``."""
    go, env = go_command(CACHE / "go")
    downloaded = mod_download(go, [], env, SARAMA)
    if downloaded.returncode:
        raise RuntimeError(f"go mod download failed: {downloaded.stderr[-1000:]}")
    binary = work / "sarama-scenario"
    subprocess.run([*go, "build", "-mod=readonly", "-o", str(binary), "."], cwd=SARAMA, env=env, check=True)
    return lambda bootstrap, step: [str(binary), bootstrap, step]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args()
    # the sasl step needs a SASL_PLAINTEXT listener with PLAIN user alice (and OAUTHBEARER: bench/brokers.py)
    return run_scenario(args, SUITE, STEPS, build, STEP_TIMEOUT_S, {"sasl": "alice:alice-secret"})


if __name__ == "__main__":
    sys.exit(main())
