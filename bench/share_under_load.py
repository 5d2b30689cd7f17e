"""A share consumer's rate alone and beside other clients: how fairly the broker shares itself out.

Each repeat fills a fresh one-partition topic with ``--records`` records and reads it through a new share
group that ACCEPTs every record (bench/share_consume.py's reader), twice: once with the broker to itself, once
while a load runs in two other processes, one librdkafka producer pumping 1 KiB records (``acks=all``) into a
second topic as fast as it can and one librdkafka consumer reading that topic from its start. The figure
that matters is the share rate under load as a fraction of the rate alone, for logwright and Apache Kafka in
the same run: a broker whose event loop is taken by long synchronous work (large reads, commits) or that
serves connections unevenly keeps a smaller fraction. The load's own rates are reported beside it, so a
broker that keeps its share client fast by starving the others is seen too.

    .venv/bin/python bench/share_under_load.py [--peers logwright,kafka] [--records 100000] [--repeats 3]
        [--profile out.txt|out.svg] [--spy-loaded out.txt] [--markdown report.md] [--python other/.venv/bin/python]

``--spy-loaded`` attaches py-spy (``--idle``, so time the event loop sits in epoll is sampled too, and
``--nonblocking``) to the logwright broker for the loaded read only and writes its collapsed stacks there.
"""

from __future__ import annotations

import argparse
import multiprocessing
import multiprocessing.synchronize
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import brokers  # noqa: E402 - bench/ is a folder of scripts, not a package
from compare_api import Context, Metric, Workload  # noqa: E402
from share_consume import share_consume  # noqa: E402
from wire_workload import CONSUMER_CONFIG, create_topic, delete_topic, produce  # noqa: E402

LOAD_RECORD_BYTES = 1024


def _pump(bootstrap: str, topic: str, stop: multiprocessing.synchronize.Event, count: object) -> None:
    """Produce 1 KiB records (acks=all) until ``stop``; ``count`` (a shared int) counts acknowledged records."""
    from confluent_kafka import Producer  # noqa: PLC0415

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "log_level": 3})
    value = bytes(LOAD_RECORD_BYTES)

    def delivered(error: object, _message: object) -> None:
        if error is None:
            count.value += 1  # type: ignore[attr-defined]

    while not stop.is_set():
        try:
            producer.produce(topic, value, on_delivery=delivered)
        except BufferError:
            producer.poll(0.01)
            continue
        producer.poll(0)
    producer.flush(30)


def _drain(bootstrap: str, topic: str, stop: multiprocessing.synchronize.Event, count: object) -> None:
    """Read ``topic`` from its start until ``stop``; ``count`` counts records read."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition  # noqa: PLC0415

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"load-{os.getpid()}", "log_level": 3,
                         **CONSUMER_CONFIG})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    while not stop.is_set():
        count.value += len(consumer.consume(10_000, 0.2))  # type: ignore[attr-defined]
    consumer.close()


def main_thread_schedstat(peer: brokers.RunningPeer) -> tuple[float, float]:
    """Seconds the broker's main thread (logwright's event loop; the JVM's launcher, idle) has run on a CPU
    and has waited for one while runnable, from /proc/<pid>/schedstat."""
    running_ns, waiting_ns, _ = Path(f"/proc/{peer.process.pid}/schedstat").read_text().split()
    return int(running_ns) / 1e9, int(waiting_ns) / 1e9


@dataclass(frozen=True, slots=True)
class Run:
    peer: str
    repeat: int
    alone_msg_s: float
    loaded_msg_s: float
    load_produce_msg_s: float
    load_consume_msg_s: float
    broker_cpu: float
    """Broker CPU seconds per second during the loaded share read (all threads)."""
    loop_waiting: float
    """Share of the loaded read's wall time the main thread was runnable but waiting for a CPU."""
    client_cpu_alone: float = float("nan")
    client_cpu_loaded: float = float("nan")
    """CPU the share reader's process used over each read, in cores (`ShareMeasurement.client_cpu_share`)."""
    load_producer_cpu: float = float("nan")
    load_consumer_cpu: float = float("nan")
    """CPU the load's producer and consumer processes used over the loaded read, in cores: where the two cores went."""

    @property
    def kept(self) -> float:
        return self.loaded_msg_s / self.alone_msg_s


def share_rate(bootstrap: str, records: int, record_bytes: int) -> tuple[float, float]:
    """The share read's msg/s and the CPU its process used meanwhile, in cores."""
    topic = create_topic(bootstrap, "share-load")
    try:
        produce(bootstrap, topic, records, record_bytes)
        read = share_consume(bootstrap, topic, records, record_bytes)
        return read.measurement.msg_per_s, read.client_cpu_share
    finally:
        delete_topic(bootstrap, topic)


def _spy(peer: brokers.RunningPeer, out: Path | None) -> subprocess.Popen[bytes] | None:
    """py-spy attached to the logwright broker, sampling idle time too; ``None`` for another peer or no ``out``."""
    if out is None or peer.name != "logwright":
        return None
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or "py-spy"
    return subprocess.Popen([spy, "record", "--pid", str(peer.process.pid), "--idle", "--nonblocking", "--rate",
                             "200", "--format", "raw", "--output", str(out)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def measure_peer(peer: brokers.RunningPeer, repeat: int, records: int, record_bytes: int,
                 spy_out: Path | None = None) -> Run:
    """The share rate alone, then under load (the load runs 2 s before the share read starts)."""
    alone, client_alone = share_rate(peer.bootstrap, records, record_bytes)
    load_topic = create_topic(peer.bootstrap, "load")
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    produced, consumed = context.Value("q", 0), context.Value("q", 0)
    workers = [context.Process(target=_pump, args=(peer.bootstrap, load_topic, stop, produced)),
               context.Process(target=_drain, args=(peer.bootstrap, load_topic, stop, consumed))]
    for worker in workers:
        worker.start()
    try:
        time.sleep(2.0)
        begin, produced_0, consumed_0 = time.perf_counter(), produced.value, consumed.value
        cpu_0, (_, waiting_0) = peer.cpu_seconds(), main_thread_schedstat(peer)
        load_cpu_0 = [brokers.process_cpu_seconds(worker.pid or 0) for worker in workers]
        spy = _spy(peer, spy_out)
        try:
            loaded, client_loaded = share_rate(peer.bootstrap, records, record_bytes)
        finally:
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(30)
        seconds = time.perf_counter() - begin
        cpu = (peer.cpu_seconds() - cpu_0) / seconds
        load_cpu = [(brokers.process_cpu_seconds(worker.pid or 0) - before) / seconds
                    for worker, before in zip(workers, load_cpu_0, strict=True)]
        waiting = (main_thread_schedstat(peer)[1] - waiting_0) / seconds
        load_produce = (produced.value - produced_0) / seconds
        load_consume = (consumed.value - consumed_0) / seconds
    finally:
        stop.set()
        for worker in workers:
            worker.join(60)
            if worker.is_alive():
                worker.kill()
        delete_topic(peer.bootstrap, load_topic)
    producer_cpu, consumer_cpu = load_cpu  # in the order of ``workers``
    return Run(peer.name, repeat, alone, loaded, load_produce, load_consume, cpu, waiting, client_alone, client_loaded,
               producer_cpu, consumer_cpu)


def markdown(runs: list[Run], records: int, record_bytes: int) -> str:
    lines = [f"Share consumer ({records:,} x {record_bytes} B, ACCEPT per record) alone and beside a 1 KiB acks=all "
             "producer and a consumer on another topic; medians over the repeats.", "",
             "| peer | alone msg/s | under load msg/s | kept | load produce msg/s | load consume msg/s "
             "| broker CPU under load | main thread waiting for a CPU |",
             "|---|---|---|---|---|---|---|---|"]
    for peer in dict.fromkeys(run.peer for run in runs):
        mine = [run for run in runs if run.peer == peer]

        def median(values: list[float]) -> float:
            return statistics.median(values)

        lines.append(f"| {peer} | {median([r.alone_msg_s for r in mine]):,.0f} | "
                     f"{median([r.loaded_msg_s for r in mine]):,.0f} | {median([r.kept for r in mine]):.0%} "
                     f"({min(r.kept for r in mine):.0%}–{max(r.kept for r in mine):.0%}) | "
                     f"{median([r.load_produce_msg_s for r in mine]):,.0f} | "
                     f"{median([r.load_consume_msg_s for r in mine]):,.0f} | "
                     f"{median([r.broker_cpu for r in mine]):.0%} | {median([r.loop_waiting for r in mine]):.0%} |")
    return "\n".join(lines) + "\n"


COMPARE_RECORDS = (100_000, 100_000)
"""Records of each share read in bench/compare.py's full and quick runs (100 B each). A quick run read 20,000 until
session 48: logwright hands them out in 3 to 6 ShareFetch answers of thousands of records, so the read took 30-150
ms and one slow round trip under load halved the figure (the kept fraction of quick runs: 0.15 to 1.13)."""

_repeats: dict[str, int] = {}


def compare_measure(ctx: Context, peer: str) -> dict[str, float]:
    """bench/compare.py's repeat: :func:`measure_peer` on the session's shared broker."""
    repeat = _repeats[peer] = _repeats.get(peer, -1) + 1
    run = measure_peer(ctx.broker(peer), repeat, ctx.size(*COMPARE_RECORDS), 100)
    return {"share msg/s alone": run.alone_msg_s, "share msg/s under load": run.loaded_msg_s,
            "rate kept under load": run.kept, "load produce msg/s": run.load_produce_msg_s,
            "load consume msg/s": run.load_consume_msg_s, "broker CPU % under load": 100 * run.broker_cpu,
            "share client CPU % alone": 100 * run.client_cpu_alone,
            "share client CPU % under load": 100 * run.client_cpu_loaded,
            "load producer CPU %": 100 * run.load_producer_cpu, "load consumer CPU %": 100 * run.load_consumer_cpu}


WORKLOADS = [
    Workload("share-group consumption beside a producer and a consumer, 100 B",
             (Metric("share msg/s alone", "msg/s", plot=False, decimals=0),
              Metric("share msg/s under load", "msg/s", target=1.0, decimals=0),
              Metric("rate kept under load", target=1.0, decimals=2),
              Metric("load produce msg/s", "msg/s", target=1.0, plot=False, decimals=0),
              Metric("load consume msg/s", "msg/s", target=1.0, plot=False, decimals=0),
              Metric("broker CPU % under load", "%", higher_is_better=False, plot=False, decimals=0),
              Metric("share client CPU % alone", "%", higher_is_better=False, plot=False, decimals=0),
              Metric("share client CPU % under load", "%", higher_is_better=False, plot=False, decimals=0),
              Metric("load producer CPU %", "%", higher_is_better=False, plot=False, decimals=0),
              Metric("load consumer CPU %", "%", higher_is_better=False, plot=False, decimals=0)),
             compare_measure,
             method=(f"A fresh one-partition topic of {COMPARE_RECORDS[0]:,} records of 100 B "
                     "(as many in a quick run) is read in full by a confluent-kafka ShareConsumer "
                     "in a new share group that ACCEPTs every record (bench/share_consume.py's reader), twice: "
                     "with the broker to itself, then while two other processes load it, one librdkafka producer "
                     "pumping 1 KiB records (acks=all, linger.ms=5) into a second topic as fast as it can and one "
                     "librdkafka consumer reading that topic from its start (the load runs 2 s before the read "
                     "starts). Rate kept under load is the loaded rate over the alone rate of the same repeat: "
                     "the issue's target is that the share consumer keeps at least the fraction it keeps on "
                     "Kafka. The load's own rates over the loaded read have targets too, so a broker that keeps "
                     "its share client fast by starving the others does not pass. Broker CPU is all its threads "
                     "over the loaded read; share client CPU is the reading process's (its Python loop and "
                     "librdkafka's threads) over each read: near 100% the client, not the broker, sets the share rate; "
                     "the load's producer and consumer CPU is each process's over the loaded read. "
                     "bench/share_under_load.py runs it alone."),
             not_applicable={"tansu": "Tansu serves no share groups (KIP-932)"}, smoke=True),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peers", default="logwright,kafka")
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", help="logwright under py-spy (.txt, .svg) or cProfile (other suffixes)")
    parser.add_argument("--spy-loaded", type=Path, help="py-spy collapsed stacks of logwright's loaded read")
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--python", help="the interpreter logwright runs under (another worktree's venv: its code)")
    args = parser.parse_args(argv)
    runs: list[Run] = []
    options = {"logwright": {key: value for key, value in (("profile", args.profile), ("python", args.python))
                             if value}}
    with tempfile.TemporaryDirectory(prefix="share-load-") as tmp, \
            brokers.running_all(args.peers.split(","), Path(tmp), options, print) as started:
        for repeat in range(args.repeats):
            for peer in brokers.in_turn(started, repeat):
                run = measure_peer(peer, repeat, args.records, args.record_bytes,
                                   args.spy_loaded.with_suffix(f".{repeat + 1}.txt") if args.spy_loaded else None)
                runs.append(run)
                print(f"#{repeat + 1} {peer.name:10} alone {run.alone_msg_s:9,.0f} msg/s  loaded "
                      f"{run.loaded_msg_s:9,.0f} msg/s ({run.kept:.0%})  load produce {run.load_produce_msg_s:,.0f} "
                      f"consume {run.load_consume_msg_s:,.0f} msg/s  broker CPU {run.broker_cpu:.0%}, main thread "
                      f"waiting for a CPU {run.loop_waiting:.0%}, share client CPU {run.client_cpu_alone:.0%} alone, "
                      f"{run.client_cpu_loaded:.0%} loaded  (load avg {os.getloadavg()[0]:.1f})", flush=True)
    report = markdown(runs, args.records, args.record_bytes)
    print(report)
    if args.markdown:
        args.markdown.write_text(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
