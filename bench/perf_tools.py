"""Kafka's own perf tools as a second client for bench/compare.py (issue 18): figures no Python loop bounds.

``ProducerPerformance`` and ``ConsumerPerformance`` come from kafka-tools 4.3.0 on Maven Central (4.4.0 is
not published there): ``bench/kafka/tools/pom.xml``, resolved on first use into
``bench/kafka/target/tools-lib`` (git-ignored; Maven caches the jars in ~/.m2). Per repeat: a fresh
one-partition topic, ``ProducerPerformance`` sends N records of 512 B as fast as it can (acks=all, the
tool's defaults otherwise), then ``ConsumerPerformance`` reads them in a fresh group. The figures are the
tools' own (records/s over the producer's run; ``fetch.nMsg.sec``, which leaves out the group join, for the
consumer), turned into MB/s of values (10^6 bytes); beside them the producer's p99 latency and the broker's
CPU seconds per GB of values over each tool's whole run, from the broker's own cgroup (bench/cgroup_cpu.py).

    .venv/bin/python bench/compare.py --only perf_tools --peers kafka,logwright [--quick] [--repeats 3]
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from compare_api import Context, Metric, Workload
from kafka_peer import java, resolve
from wire_workload import create_topic, delete_topic

HERE = Path(__file__).resolve().parent
POM = HERE / "kafka" / "tools" / "pom.xml"
LIB = HERE / "kafka" / "target" / "tools-lib"
RECORD_BYTES = 512
RECORDS = (1_000_000, 200_000)
"""Records per repeat: full run, quick run (the issue's measurement was 1 M x 512 B)."""

_PRODUCED = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                       r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th")


def _tool(main: str, *args: str, timeout_s: float = 600.0) -> str:
    """Run one tool's main class on the resolved jars and return its standard output; fail on a non-zero exit."""
    resolve(pom=POM, lib=LIB)
    command = [java(), "-Xmx512m", "-XX:+UseG1GC", "-cp", str(LIB / "*"), main, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"{main.rsplit('.', 1)[1]} exited {done.returncode}: {(done.stderr or done.stdout)[-600:]}")
    return done.stdout


def produce(bootstrap: str, topic: str, records: int) -> tuple[float, float]:
    """``ProducerPerformance`` at full speed: records/s and p99 latency in ms, as the tool prints them."""
    out = _tool("org.apache.kafka.tools.ProducerPerformance", "--bootstrap-server", bootstrap, "--topic", topic,
                "--num-records", str(records), "--record-size", str(RECORD_BYTES), "--throughput", "-1",
                "--command-property", "acks=all")
    found = _PRODUCED.findall(out)
    if not found or int(found[-1][0]) != records:
        raise RuntimeError(f"ProducerPerformance: no summary for {records} records: {out[-1500:]}")
    return float(found[-1][1]), float(found[-1][7])


def consume(bootstrap: str, topic: str, records: int) -> float:
    """``ConsumerPerformance`` in a fresh group: records/s while fetching (``fetch.nMsg.sec``)."""
    out = _tool("org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", bootstrap, "--topic", topic,
                "--num-records", str(records), "--group", f"perf-{topic}", "--timeout", "60000")
    lines = [line for line in out.splitlines() if line.strip()]
    header = next((i for i, line in enumerate(lines) if "fetch.nMsg.sec" in line), None)
    if header is None or header + 1 >= len(lines):
        raise RuntimeError(f"ConsumerPerformance: no summary: {out[-400:]}")
    row = dict(zip([c.strip() for c in lines[header].split(",")],
                   [v.strip() for v in lines[header + 1].split(",")], strict=False))
    if int(float(row["data.consumed.in.nMsg"])) < records:
        raise RuntimeError(f"ConsumerPerformance read {row['data.consumed.in.nMsg']} of {records} records")
    return float(row["fetch.nMsg.sec"])


def measure_on(partitions: int) -> Callable[[Context, str], dict[str, float]]:
    def measure(ctx: Context, peer: str) -> dict[str, float]:
        broker = ctx.broker(peer)
        records = ctx.size(*RECORDS)
        gigabytes = records * RECORD_BYTES / 1e9
        topic = create_topic(broker.bootstrap, "perf-tools", partitions)
        try:
            cpu_0 = broker.cpu_seconds()
            produced, p99 = produce(broker.bootstrap, topic, records)
            cpu_1 = broker.cpu_seconds()
            consumed = consume(broker.bootstrap, topic, records)  # after every record is acknowledged
            cpu_2 = broker.cpu_seconds()
        finally:
            delete_topic(broker.bootstrap, topic)
        return {"produce MB/s": produced * RECORD_BYTES / 1e6, "consume MB/s": consumed * RECORD_BYTES / 1e6,
                "produce p99 ms": p99,
                "produce CPU s/GB": (cpu_1 - cpu_0) / gigabytes, "consume CPU s/GB": (cpu_2 - cpu_1) / gigabytes}
    return measure


def _metrics() -> tuple[Metric, ...]:
    return (Metric("produce MB/s", "MB/s", target=1.0), Metric("consume MB/s", "MB/s", target=1.0),
            Metric("produce p99 ms", "ms", higher_is_better=False, target=1.0),
            Metric("produce CPU s/GB", "s/GB", higher_is_better=False, target=0.5, decimals=2),
            Metric("consume CPU s/GB", "s/GB", higher_is_better=False, target=0.5, decimals=2))


def _workload(partitions: int, smoke: bool) -> Workload:
    return Workload(
        f"Kafka perf tools: 512 B, {partitions:,} partition{'s' if partitions > 1 else ''}", _metrics(),
        measure_on(partitions),
        method=(f"kafka-tools 4.3.0's ProducerPerformance ({RECORDS[0]:,} x {RECORD_BYTES} B, "
                f"{RECORDS[1]:,} in a quick run; --throughput -1, acks=all, the tool's other defaults) into a "
                f"fresh topic of {partitions:,} partition{'s' if partitions > 1 else ''}, then ConsumerPerformance "
                "in a fresh group (fetch.nMsg.sec: the group join left out); one JVM per tool (-Xmx512m). "
                + ("The Java consumer fetches in an incremental fetch session (KIP-227) on both brokers: after the "
                   "first Fetch it names only the partitions whose position moved. " if partitions > 1 else "")
                + "Broker CPU seconds (user + system, all its threads: see the broker CPU line above) over each "
                "tool's run per GB of values."),
        warmup=True, warmup_scale=0.1, smoke=smoke)


WORKLOADS = [_workload(1, smoke=True), _workload(1_000, smoke=False)]
