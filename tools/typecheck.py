"""Run ``mypy --strict`` on the ``logwright`` package as it is installed, not on loose folders.

The repository maps folders to sub-packages (``core/`` is ``logwright.core``, see pyproject.toml).
mypy cannot follow that mapping, and the editable install's import hook hides the modules from it,
so checking the folders directly leaves every ``logwright.*`` import as ``Any``. This script builds a
throw-away tree of symlinks shaped like the installed package (``.typecheck/logwright/core -> core``)
and checks that, so cross-package types are really checked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUB_PACKAGES = ("core", "eventstore", "compat", "client", "plugins", "spark", "testing")
TOP_LEVEL_MODULES = ("pyspark_logwright",)
"""Packages the wheel installs beside ``logwright`` (PySpark finds its data source by this name)."""


def build_tree() -> Path:
    tree = ROOT / ".typecheck"
    shutil.rmtree(tree, ignore_errors=True)
    package = tree / "logwright"
    package.mkdir(parents=True)
    for module in (ROOT / "logwright").glob("*.py"):
        (package / module.name).symlink_to(module)
    for name in SUB_PACKAGES:
        (package / name).symlink_to(ROOT / name, target_is_directory=True)
    for name in TOP_LEVEL_MODULES:
        (tree / name).symlink_to(ROOT / name, target_is_directory=True)
    return tree


def main() -> int:
    tree = build_tree()
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "-p", "logwright"]
    for name in TOP_LEVEL_MODULES:
        command += ["-p", name]
    return subprocess.call(command, cwd=tree, env={**os.environ, "MYPYPATH": str(tree)})


if __name__ == "__main__":
    raise SystemExit(main())
