"""What the client scenario tests share: run ``peers/<client>_client.py`` against one broker, every step must pass.

The script runs as a child process, as the compat table runs it, so its clients and brokers end with it; its
`SuiteResult` (``--results``) is read back, and every step of the script's ``STEPS`` must have run and passed.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def assert_every_step_passes(script: str, against: str, tmp_path: Path) -> None:
    """``script`` is the module name under peers/ (``java_client``, ``kafkajs_client``, ``sarama_client``)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    steps = importlib.import_module(f"peers.{script}").STEPS
    results = tmp_path / "results.json"
    run = subprocess.run([sys.executable, f"peers/{script}.py", "--against", against, "--results", str(results)],
                         cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert results.exists(), f"{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    result = json.loads(results.read_text())
    assert result["error"] is None, run.stdout[-3000:]
    failures = {failure["test"]: failure["message"] for failure in result["failures"]}
    assert not failures and result["passed"] == result["ran"] == len(steps), f"{failures}\n{run.stdout[-5000:]}"
