"""One local[2] SparkSession for every Spark test (starting one takes 10-50 s on this machine), with Spark's Kafka
connector on its class path (`kafka_connector`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark", reason="the spark extra is not installed")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from logwright.spark.session import spark_session

    from .kafka_connector import connector_jars

    try:
        jars = ",".join(str(jar) for jar in connector_jars())
    except RuntimeError:  # a failed fetch fails the connector's tests (their fixture fetches again), not all
        jars = ""
    session = spark_session("local[2]", "logwright-tests", **{"spark.sql.shuffle.partitions": "4",
                                                                      "spark.ui.showConsoleProgress": "false",
                                                                      **({"spark.jars": jars} if jars else {})})
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
