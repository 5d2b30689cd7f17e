"""Makes ``format("logwright")`` work in any SparkSession, with no registration call.

PySpark 4 imports every installed top-level module named ``pyspark_*`` at its first data-source lookup and
registers the module's ``DefaultSource`` under ``DefaultSource.name()``: the convention that lets
``spark-submit job.py``, a notebook or a cluster's executors find a Python data source. This module is that
entry point; the source itself is `logwright.spark.datasource.LogwrightDataSource` (needs the ``spark`` extra).
"""

from logwright.spark.datasource import LogwrightDataSource as DefaultSource

__all__ = ["DefaultSource"]
