"""Spark's Kafka connector jars for the test session: fetched from Maven Central once, into an ignored folder.

`connector_jars` returns them for ``spark.jars`` (the JVM reads it only when the session starts, so the shared
session of tests/spark gets them from the beginning). Without ``mvn`` on the machine it returns nothing and
the connector's tests skip, saying why; a failed fetch is an error, not a skip.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIB = HERE / "target" / "lib"
CONNECTOR = "spark-sql-kafka-0-10_2.13-"


def connector_jars() -> list[Path]:
    """The connector and what pyspark's jars lack (kafka-clients, commons-pool2, the token provider)."""
    if not any(LIB.glob(f"{CONNECTOR}*.jar")):
        mvn = shutil.which("mvn")
        if mvn is None:
            return []
        fetched = subprocess.run([mvn, "-q", "-B", "-Dstyle.color=never", "-f", str(HERE / "pom.xml"),
                                  "dependency:copy-dependencies"], capture_output=True, text=True)
        if fetched.returncode != 0:
            raise RuntimeError(f"fetching Spark's Kafka connector failed:\n{fetched.stdout}\n{fetched.stderr}")
    return sorted(LIB.glob("*.jar"))
