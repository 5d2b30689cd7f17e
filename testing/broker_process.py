"""A real logwright broker process on a free loopback port and a data directory on disk, for tests.

Tests never mock the broker: they start this process (``logwright serve``), talk to it over TCP with
real clients, and may SIGKILL it and start it again on the same directory. On a manual clock
(``manual_clock=True``) time moves only through `BrokerProcess.advance_clock`, so tests never sleep.
logwright's own integration tests and a plugin author's tests (through `logwright.testing.pytest_plugin`)
use this one class.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from .clients import advance_clock


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class BrokerProcess:
    """``logwright serve`` on ``data_dir``: ``config`` are ``--config`` overrides, ``plugins`` modules registered
    beside the installed plugins (``--plugin``), ``disabled`` plugins turned off (``--disable-plugin``),
    ``python_path`` directories put on the process's ``PYTHONPATH`` (where those modules live)."""

    def __init__(self, data_dir: Path, port: int | None = None, durability: str = "wal",
                 config: Mapping[str, str] | None = None, extra_args: tuple[str, ...] = (),
                 manual_clock: bool = False, plugins: Iterable[str] = (), disabled: Iterable[str] = (),
                 python_path: Iterable[str | Path] = ()) -> None:
        self.data_dir = data_dir
        self.extra_args = (*extra_args, *(("--manual-clock",) if manual_clock else ()),
                           *(arg for module in plugins for arg in ("--plugin", module)),
                           *(arg for name in disabled for arg in ("--disable-plugin", name)))
        self.python_path = tuple(str(path) for path in python_path)
        self.port = port or free_port()
        self.durability = durability
        self.config = dict(config or {})
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir.parent / f"{data_dir.name}-broker.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> BrokerProcess:
        ready = self.data_dir.parent / f"{self.data_dir.name}.ready"
        ready.unlink(missing_ok=True)
        command = [sys.executable, "-m", "logwright", "serve", "--data-dir", str(self.data_dir),
                   "--listen", self.bootstrap, "--durability", self.durability, "--ready-file", str(ready)]
        for key, value in self.config.items():
            command += ["--config", f"{key}={value}"]
        command += list(self.extra_args)
        environment = {**os.environ}
        if self.python_path:
            environment["PYTHONPATH"] = os.pathsep.join(
                (*self.python_path, *filter(None, [environment.get("PYTHONPATH")])))
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment)
        deadline = time.monotonic() + timeout_s
        while not ready.exists():
            if self.process.poll() is not None:
                raise RuntimeError(f"the broker exited with {self.process.returncode}: {self.log_tail()}")
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"the broker did not start in {timeout_s} s: {self.log_tail()}")
            time.sleep(0.05)
        return self

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout_s: float = 20.0) -> int:
        """Ctrl-C: the broker flushes and exits cleanly."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def resident_bytes(self, field: str = "VmRSS") -> int:
        """The running broker's resident memory (VmRSS), for tests that bound what clients make it hold; ``VmHWM``:
        its peak since `reset_peak_resident`."""
        assert self.process is not None, "the broker was not started"
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
        raise AssertionError(f"no {field}")

    def reset_peak_resident(self) -> None:
        """Start the peak (``VmHWM``) over from the current size: a request whose memory is freed by the time it is
        answered shows only in the peak."""
        assert self.process is not None, "the broker was not started"
        Path(f"/proc/{self.process.pid}/clear_refs").write_text("5")

    def advance_clock(self, milliseconds: int) -> int:
        """Move a ``manual_clock`` broker's time on; returns the new time once everything due has run."""
        return advance_clock(self.bootstrap, milliseconds)
