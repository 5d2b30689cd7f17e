"""A Go toolchain new enough for franz-go, and an environment that keeps its downloads in our cache.

franz-go v1.22.2's go.mod says ``go 1.26.0``. Debian bookworm's ``golang-go`` is 1.19, older than the
toolchain switching that Go 1.21 introduced, so an old ``go`` cannot fetch a newer one by itself. The Go
toolchains are published as ordinary modules on the Go module proxy (``golang.org/toolchain``, which is
what ``GOTOOLCHAIN=auto`` downloads), so any ``go`` can fetch one with ``go mod download``; we then set
the execute bits the module zip cannot carry, as the go command does when it switches by itself.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import time
from pathlib import Path

TOOLCHAIN = "go1.26.8"
MINIMUM = (1, 26)
ARCHES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def go_environment(cache: Path) -> dict[str, str]:
    """Module downloads in ``cache/mod`` (writable, so ``rm -rf`` works), nothing switched behind our back."""
    return {**os.environ, "GOMODCACHE": str(cache / "mod"), "GOFLAGS": "-modcacherw", "GOTOOLCHAIN": "local",
            "GO111MODULE": "on"}


def mod_download(go: list[str], args: list[str], env: dict[str, str], cwd: Path,
                 attempts: int = 3) -> subprocess.CompletedProcess[str]:
    """``go mod download ARGS`` in ``cwd``, tried ``attempts`` times: it is a network step (the module proxy),
    and one dropped connection should not fail a CI run. The last attempt's result, for the caller to judge."""
    for attempt in range(1, attempts + 1):
        result = subprocess.run([*go, "mod", "download", *args], env=env, cwd=cwd, capture_output=True, text=True,
                                check=False)
        if result.returncode == 0 or attempt == attempts:
            return result
        print(f"go mod download {' '.join(args)} failed (attempt {attempt} of {attempts}): "
              f"{result.stderr.strip()[-300:] or result.stdout.strip()[-300:]}", flush=True)
        time.sleep(10 * attempt)
    raise AssertionError("unreachable")


def version_of(go: str, env: dict[str, str]) -> tuple[int, int]:
    output = subprocess.run([go, "env", "GOVERSION"], env=env, capture_output=True, text=True, check=True).stdout
    match = re.match(r"go(\d+)\.(\d+)", output.strip())
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def go_command(cache: Path) -> tuple[list[str], dict[str, str]]:
    """The ``go`` to run and its environment; downloads TOOLCHAIN when the installed go is older than MINIMUM."""
    cache.mkdir(parents=True, exist_ok=True)
    env = go_environment(cache)
    installed = shutil.which("go") or next(
        (str(path) for path in (Path("/usr/local/go/bin/go"), Path("/usr/lib/go/bin/go")) if path.exists()), None)
    if installed is None:
        raise SystemExit("no go command: install Go (e.g. apt-get install golang-go); any version can "
                         f"bootstrap {TOOLCHAIN} from the module proxy")
    if version_of(installed, env) >= MINIMUM:
        return [installed], env
    arch = ARCHES.get(platform.machine().lower())
    if arch is None:
        raise SystemExit(f"go is older than {MINIMUM} and {platform.machine()} has no known toolchain module")
    module = f"golang.org/toolchain@v0.0.1-{TOOLCHAIN}.{platform.system().lower()}-{arch}"
    result = mod_download([installed], ["-json", module], env, cache)
    info = json.loads(result.stdout or "{}")
    if result.returncode or info.get("Error"):
        raise SystemExit(f"go mod download {module} failed: {info.get('Error') or result.stderr}")
    root = Path(info["Dir"])
    for folder in (root / "bin", *sorted((root / "pkg" / "tool").glob("*"))):
        for tool in folder.iterdir():
            if tool.is_file():
                tool.chmod(tool.stat().st_mode | 0o111)
    go = str(root / "bin" / "go")
    return [go], {**env, "GOROOT": str(root)}
