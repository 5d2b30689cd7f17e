"""What the client scenarios share (Java, KafkaJS, Sarama): each step a process of its own against one broker.

A scenario program takes the bootstrap address and a step name and prints ``OK <step>`` or ``FAIL <why>``; a step
passes only when it exits 0 having printed its OK line. `run_scenario` builds the program once, starts the broker
(`peers.suite.broker`), runs every step in order and records a `SuiteResult`, so ``make compat-table`` and the
pytest wrappers in tests/peers read every client's scenario the same way.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from peers.suite import Failure, SuiteResult, broker, run_recorded

Command = Callable[[str, str], list[str]]
"""The command line that runs one step against a bootstrap address: ``command(bootstrap, step)``."""


def run_step(command: Command, bootstrap: str, step: str, timeout_s: float,
             env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """Run one step: whether it printed ``OK <step>`` and exited 0, and its output otherwise."""
    try:
        run = subprocess.run(command(bootstrap, step), capture_output=True, text=True, timeout=timeout_s,
                             env=dict(env) if env is not None else None)
    except subprocess.TimeoutExpired:
        return False, f"no answer in {timeout_s:.0f} s"
    ok = run.returncode == 0 and f"OK {step}" in run.stdout
    return ok, "" if ok else f"{run.stdout}\n{run.stderr[-3000:]}"


def why(output: str) -> str:
    """The line that says why a step failed: its FAIL line, else the last exception printed."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    fail = next((line for line in lines if line.startswith("FAIL ")), None)
    exception = next((line for line in reversed(lines)
                      if ("Exception" in line or "Error" in line) and not line.startswith("at ")), None)
    return (fail or exception or (lines[-1] if lines else "no output"))[:300]


def run_scenario(args: argparse.Namespace, suite: str, steps: Sequence[str], build: Callable[[Path], Command],
                 timeout_s: float, broker_options: Mapping[str, str] | None = None,
                 env: Mapping[str, str] | None = None) -> int:
    """Build the scenario (``build(work)`` returns its `Command`), then run every step against ``args.against``.

    Exit status 1 when a step fails on logwright; on a peer broker failures are reported, not fatal."""

    def body(work: Path, result: SuiteResult) -> int:
        command = build(work)
        with broker(args.against, work / args.against, {}, **(broker_options or {})) as peer:
            started = time.monotonic()
            step_env = env if not peer.sasl_port else {**(env or os.environ), "SASL_BOOTSTRAP": peer.sasl_bootstrap}
            if peer.ssl_port:  # the certificates `bench/brokers.py` made in the ``tls`` option's directory
                certificates = Path((broker_options or {})["tls"])
                step_env = {**(step_env or os.environ), "TLS_BOOTSTRAP": f"127.0.0.1:{peer.ssl_port}",
                            "SASL_SSL_BOOTSTRAP": f"127.0.0.1:{peer.sasl_ssl_port}" if peer.sasl_ssl_port else "",
                            "TLS_CA": str(certificates / "ca.pem"),
                            "TLS_CLIENT_KEYSTORE": str(certificates / "client-keystore.pem")}
            for step in steps:
                ok, output = run_step(command, peer.bootstrap, step, timeout_s, step_env)
                result.ran += 1
                if ok:
                    result.passed += 1
                    result.passes.append(step)
                    print(f"  PASS {step}", flush=True)
                else:
                    result.failures.append(Failure(step, why(output)))
                    print(f"  FAIL {step}: {output[-2000:]}", flush=True)
            result.seconds = time.monotonic() - started
        result.failed = len(result.failures)
        print(f"{suite} scenario against {args.against}: ran {result.ran}, passed {result.passed}, "
              f"failed {result.failed}; {result.seconds:.1f}s")
        return 1 if result.failures and args.against == "logwright" else 0

    return run_recorded(args, suite, body)
