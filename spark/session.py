"""A SparkSession that can run logwright's Python code, with the data source registered."""

from __future__ import annotations

import os
import sys
from typing import Any


def spark_session(master: str = "local[2]", app_name: str = "logwright", **configs: str) -> Any:
    """Get or create a session for ``master`` (``local[*]``, ``spark://...``) and register ``logwright``.

    Workers must run a Python that has logwright installed: in local mode that is this interpreter
    (``PYSPARK_PYTHON``), on a cluster set ``PYSPARK_PYTHON`` to the executors' one before calling.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "8", **configs}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    register(session)
    return session


def register(session: Any) -> None:
    """Register ``format("logwright")`` in ``session`` unless PySpark found it by itself (`pyspark_logwright`).

    Registering over the found one works too, but Spark then logs a warning that it replaced it.
    """
    from .datasource import LogwrightDataSource

    if not _registered(session, LogwrightDataSource.name()):
        session.dataSource.register(LogwrightDataSource)


def _registered(session: Any, name: str) -> bool:
    try:
        return bool(session._jsparkSession.sessionState().dataSourceManager().dataSourceExists(name))
    except Exception:  # no JVM handle (Spark Connect) or another Spark's internals: register anyway
        return False
