"""A plain ``SparkSession.builder.getOrCreate()`` finds ``format("logwright")`` with logwright's wheel installed.

PySpark discovers the source through the wheel's top-level ``pyspark_logwright`` module (`pkgutil.iter_modules`
in ``lookup_data_sources.py``). setuptools' editable install serves modules through an import hook that
``iter_modules`` does not see, so the test builds the real wheel, unpacks it onto ``PYTHONPATH`` and runs a
job in a fresh interpreter that never calls ``register()``: Spark's defaults throughout (its workers run the
``python3`` of ``PATH``, the venv's, as for a user who activated it).
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .support import write_known_log

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]

JOB = """
import sys
from pyspark.sql import SparkSession

import pyspark_logwright

assert pyspark_logwright.__file__.startswith(sys.argv[2]), pyspark_logwright.__file__
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
print("batch", spark.read.format("logwright").load(sys.argv[1]).count(), flush=True)
for attempt in range(3):  # Spark 4.3 gives a streaming source's Python worker 10 s to connect back
    query = (spark.readStream.format("logwright").option("path", sys.argv[1]).load()
             .writeStream.format("memory").queryName(f"plain{attempt}").trigger(availableNow=True).start())
    try:
        query.awaitTermination()
    except Exception as error:
        if "Python worker failed to connect back" in str(error) and attempt < 2:
            continue
        raise
    print("stream", spark.sql(f"select count(*) from plain{attempt}").first()[0], flush=True)
    break
spark.stop()
"""


def test_a_plain_session_finds_the_source_through_the_wheel(tmp_path: Path) -> None:
    written = write_known_log(tmp_path / "data", batches_per_codec=1)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                            "-w", str(tmp_path / "wheel"), str(ROOT)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "wheel").glob("logwright-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        assert "pyspark_logwright/__init__.py" in archive.namelist()
        archive.extractall(site)
    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith(("PYSPARK_", "SPARK_", "PYTEST_"))}
    environment["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), environment.get("PATH", "")])
    environment["PYTHONPATH"] = str(site)
    job = subprocess.run([sys.executable, "-c", JOB, str(tmp_path / "data"), str(site)], cwd=tmp_path,
                         env=environment, capture_output=True, text=True, timeout=240)
    assert job.returncode == 0, job.stderr[-3000:]
    events = len(written.event_types)
    assert job.stdout.split() == ["batch", str(events), "stream", str(events)], job.stderr[-3000:]
