"""Spark's Kafka source reading the same topic from logwright and from Apache Kafka, in one run.

Starts a logwright broker process and an Apache Kafka node (bench/kafka_peer.py), produces ``--records``
records of ``--size`` bytes to a topic of ``--partitions`` partitions on each with confluent-kafka, then
times ``spark.read.format("kafka")`` reading all of it (count and summed value length, so every record is
fetched and decoded) in one local Spark session, alternating the brokers ``--rounds`` times so neither
always runs on a warmer JVM. Prints records/s of each and logwright's speed relative to Kafka's.

    .venv/bin/python bench/spark_kafka.py [--records 1000000] [--size 100] [--partitions 4] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from kafka_peer import KafkaPeer  # noqa: E402
from logwright.testing.broker_process import BrokerProcess  # noqa: E402

from tests.spark.kafka_connector import connector_jars  # noqa: E402

TOPIC = "spark-read"


def fill(bootstrap: str, records: int, size: int, partitions: int) -> float:
    """The topic with ``records`` records; returns produce seconds."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1 << 20,
                         "queue.buffering.max.messages": 1_000_000, "compression.type": "lz4"})
    value = b"v" * size
    started = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(TOPIC, key=str(i).encode(), value=value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0
    return time.perf_counter() - started


def read_all(spark: Any, bootstrap: str) -> tuple[float, int]:
    from pyspark.sql import functions as F

    started = time.perf_counter()
    row = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", TOPIC)
           .load().agg(F.count("*").alias("records"), F.sum(F.length("value")).alias("bytes")).first())
    return time.perf_counter() - started, int(row["records"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--spark", default="local[2]")
    args = parser.parse_args()
    console = Console()
    jars = connector_jars()
    if not jars:
        raise SystemExit("Spark's Kafka connector is missing and there is no mvn to fetch it (make spark-kafka)")
    work = Path(tempfile.mkdtemp(prefix="logwright-bench-spark-kafka-"))
    logwright = BrokerProcess(work / "logwright" / "data")
    (work / "logwright").mkdir()
    with KafkaPeer(work / "kafka") as kafka:
        logwright.start()
        try:
            brokers = {"logwright": logwright.bootstrap, "kafka": kafka.bootstrap}
            for name, bootstrap in brokers.items():
                console.print(f"{name}: produced {args.records:,} records in "
                              f"{fill(bootstrap, args.records, args.size, args.partitions):.1f} s")
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            from pyspark.sql import SparkSession

            spark = (SparkSession.builder.master(args.spark).config("spark.ui.enabled", "false")
                     .config("spark.ui.showConsoleProgress", "false")
                     .config("spark.jars", ",".join(str(jar) for jar in jars)).getOrCreate())
            spark.sparkContext.setLogLevel("ERROR")
            read_all(spark, brokers["kafka"])  # warms the JVM and the connector's classes, not counted
            times: dict[str, list[float]] = {name: [] for name in brokers}
            for _ in range(args.rounds):
                for name, bootstrap in brokers.items():
                    seconds, count = read_all(spark, bootstrap)
                    assert count == args.records, f"{name} returned {count} records"
                    times[name].append(seconds)
            spark.stop()
        finally:
            logwright.stop()
    table = Table("broker", "seconds (median)", "records/s", "runs")
    for name, runs in times.items():
        median = statistics.median(runs)
        table.add_row(name, f"{median:.2f}", f"{args.records / median:,.0f}", " ".join(f"{t:.2f}" for t in runs))
    console.print(table)
    ratio = statistics.median(times["kafka"]) / statistics.median(times["logwright"])
    console.print(f"logwright / Kafka read speed: {ratio:.2f}")


if __name__ == "__main__":
    main()
