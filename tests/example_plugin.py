"""Build and install ``examples/plugin-example`` as a user would, for the tests that load it.

pip builds the distribution offline (no index, no build isolation, the test extra's setuptools) and
installs it into a directory the caller puts on ``sys.path`` or a broker process's ``PYTHONPATH``, as a
user's ``pip install`` would put it in site-packages.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "plugin-example"


def install_example_plugin(work: Path) -> Path:
    """Install the example plugin under ``work``; returns the directory that holds it."""
    source = shutil.copytree(EXAMPLE, work / "source")  # the build writes egg-info next to the sources
    target = work / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--no-build-isolation", "--target", str(target), str(source)], check=True, timeout=300)
    return target
