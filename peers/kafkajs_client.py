"""The KafkaJS client scenario (kafkajs 2.2.4 from the npm registry, run by Node) against one broker.

peers/node/scenario.js has four steps (an idempotent producer's gzip batches with keys and headers read back in order;
a consumer group shared by two members, committed and resumed; consume-transform-produce transactions with an abort
and a fenced zombie; the admin client's configs, record deletion, partitions, group offsets and deletions), each run
as its own Node process that prints ``OK <step>`` or ``FAIL <why>``. tests/peers/test_js_go_clients.py runs them
under pytest against logwright and Apache Kafka (``make compat-clients``); this script runs them against one broker
(``--against logwright|kafka|tansu``) for peers/compat_table.py. Needs node and npm; ``npm ci`` installs the
version pinned in peers/node/package-lock.json into peers/node/node_modules (ignored by git).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from peers.scenario_steps import Command, run_scenario  # noqa: E402
from peers.suite import add_arguments  # noqa: E402

NODE = ROOT / "peers" / "node"
STEPS = ("producer", "group", "transactions", "admin", "sasl")
SUITE = "KafkaJS 2.2.4"
STEP_TIMEOUT_S = 180


def build(_: Path) -> Command:
    """Install the pinned kafkajs (``npm ci``, three tries: it is a network step) and return the step command."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        raise RuntimeError("node or npm is missing: install Node.js 18+ with npm (apt-get install nodejs npm)")
    if not (NODE / "node_modules" / "kafkajs" / "package.json").exists():
        for attempt in range(1, 4):
            run = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=NODE, capture_output=True, text=True)
            if run.returncode == 0:
                break
            if attempt == 3:
                raise RuntimeError(f"npm ci failed: {run.stderr[-1000:]}")
    script = str(NODE / "scenario.js")
    return lambda bootstrap, step: [node, script, bootstrap, step]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args()
    env = {**os.environ, "KAFKAJS_NO_PARTITIONER_WARNING": "1"}
    # the sasl step needs a SASL_PLAINTEXT listener with PLAIN user alice (and OAUTHBEARER: bench/brokers.py)
    return run_scenario(args, SUITE, STEPS, build, STEP_TIMEOUT_S, {"sasl": "alice:alice-secret"}, env=env)


if __name__ == "__main__":
    sys.exit(main())
