"""What keeping every state change as an event costs as the log grows: restart time, RSS, ``logwright check``.

Builds a store of ``--events`` events fast, through the real store API (``RocksEventStore.append`` of the
``RecordsAppended`` events a broker would decide for small produce requests, with the projections and types of
a default broker's plugin host, so every projection's covered sequence is stored as a broker leaves it: one
1-record batch of 100 B each, round-robin over ``--partitions`` partitions of one topic, ``--per-commit``
appends per commit, as bench/eventstore.py does), then, ``--repeats`` times, starts a real broker process
(``logwright serve``) on it and times the launch until the broker answers ApiVersions on its socket, reads the
resident memory of its process group right then, and stops it (SIGINT). Last, ``logwright check`` on the same
store, timed. With ``--profile`` one more start runs under cProfile and the report lists where the start-up's
time goes (the cumulative top; cProfile inflates Python-heavy parts, so read it for shares, not seconds).

    .venv/bin/python bench/event_log_growth.py --events 10000000 [--repeats 3] [--profile]
        [--keep DIR] [--store DIR (reuse a built store)] [--markdown bench/results/event_log_growth.md]
"""

from __future__ import annotations

import argparse
import os
import pstats
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from brokers import free_port  # noqa: E402
from logwright.core.config.configs import default_registry as default_configs  # noqa: E402
from logwright.core.log.catalog import COUNTER_KEY, create_topic, topic_key  # noqa: E402
from logwright.core.log.partition_log import PartitionState, append_batch  # noqa: E402
from logwright.eventstore.interface import Durability, StoredBatch  # noqa: E402
from logwright.eventstore.rocksdb import RocksEventStore  # noqa: E402
from logwright.plugins.host import PluginHost  # noqa: E402

from eventstore import _HEADER, RECORD_OVERHEAD  # noqa: E402

RECORD_BYTES = 100


def one_record_batch() -> bytes:
    """A RecordBatch v2 header and one record of ``RECORD_BYTES`` (bench/eventstore.py's layout)."""
    body = os.urandom(RECORD_BYTES + RECORD_OVERHEAD)
    return _HEADER.pack(0, _HEADER.size - 12 + len(body), 0, 2, 0, 0, 0, 0, 0, -1, -1, -1, 1) + body


def build(path: Path, events: int, partitions: int, per_commit: int) -> float:
    """Store ``events`` events (one topic creation, then appends); return the seconds it took."""
    started = time.perf_counter()
    host = PluginHost.for_broker({})
    store = RocksEventStore(str(path), durability=Durability.WAL, projections=host.projections(),
                            types=host.type_registry())
    created = create_topic(store.state("catalog", topic_key("growth")), store.state("catalog", COUNTER_KEY),
                           "growth", partitions, (), b"\x00" * 16, default_configs())
    store.append([created])
    store.commit()
    data = one_record_batch()
    ids = created.partition_ids
    state = {pid: PartitionState(pid) for pid in ids}
    for number in range(events - 1):
        pid = ids[number % partitions]
        event = append_batch(state[pid], 1, len(data), 0)
        state[pid] = PartitionState(pid, 0, event.base_offset + 1)
        store.append([event], [StoredBatch(pid, event.base_offset, data)])
        if number % per_commit == per_commit - 1:
            store.commit()
            if number % (per_commit * 500) == per_commit * 500 - 1:
                print(f"  {number + 1:,} events, {time.perf_counter() - started:.0f} s", flush=True)
    store.commit()
    store.close()
    return time.perf_counter() - started


def _api_versions_answered(port: int) -> bool:
    """One ApiVersions v0 request; True once a whole response with the same correlation id comes back."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0) as sock:
            header = struct.pack(">hhih", 18, 0, 7, 5) + b"bench"
            sock.sendall(struct.pack(">i", len(header)) + header)
            raw = b""
            while len(raw) < 8:
                chunk = sock.recv(65536)
                if not chunk:
                    return False
                raw += chunk
            return bool(struct.unpack_from(">i", raw, 4)[0] == 7)
    except OSError:
        return False


def _group_rss(pgid: int) -> int:
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:
                total += int(fields[21])
        except (OSError, IndexError, ValueError):
            continue
    return total * os.sysconf("SC_PAGE_SIZE")


def start_timed(store: Path, profile: Path | None = None) -> tuple[float, int]:
    """Launch ``logwright serve`` on ``store``: seconds until ApiVersions is answered, RSS then; stop it."""
    port = free_port()
    serve = ["-m", "logwright", "serve", "--data-dir", str(store), "--listen", f"127.0.0.1:{port}"]
    command = [sys.executable, *(["-m", "cProfile", "-o", str(profile)] if profile else []), *serve]
    began = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        while not _api_versions_answered(port):
            if process.poll() is not None:
                raise RuntimeError(f"broker exited {process.returncode}: {process.stderr.read()[-800:]!r}")  # type: ignore[union-attr]
            if time.monotonic() - began > 600:
                raise RuntimeError("broker did not answer ApiVersions in 600 s")
            time.sleep(0.02)
        ready = time.monotonic() - began
        return ready, _group_rss(process.pid)
    finally:
        os.killpg(process.pid, 2)
        try:
            process.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()


def check_timed(store: Path) -> tuple[float, str]:
    """Seconds of ``logwright check``, its verdict line and its peak RSS (``wait4``: this child alone)."""
    with tempfile.TemporaryFile("w+") as output:
        began = time.monotonic()
        child = subprocess.Popen([sys.executable, "-m", "logwright", "check", "--data-dir", str(store)],
                                 stdout=output, stderr=subprocess.STDOUT, text=True)
        _pid, status, usage = os.wait4(child.pid, 0)
        seconds = time.monotonic() - began
        child.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        last = output.read().strip().splitlines()
    return seconds, f"exit {child.returncode}: {last[-1] if last else ''}, peak RSS {usage.ru_maxrss / 1024:,.0f} MiB"


def profile_top(path: Path, lines: int = 18) -> str:
    stats = pstats.Stats(str(path))
    stats.sort_stats("cumulative")
    out = []
    total = max(stats.total_tt, 1e-9)  # type: ignore[attr-defined]
    for (file, line, name), (_cc, _nc, _tt, cumulative, _callers) in sorted(
            stats.stats.items(), key=lambda item: -item[1][3])[:80]:  # type: ignore[attr-defined]
        if "logwright" in file or "rocksdict" in file or name.startswith("<built-in method rocksdict"):
            out.append(f"| {cumulative:.2f} | {cumulative / total:.0%} | `{Path(file).name}:{line} {name}` |")
        if len(out) >= lines:
            break
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--per-commit", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--skip-check", action="store_true", help="no `logwright check` (minutes at 50 M events)")
    parser.add_argument("--store", type=Path, help="a store built before (skips the build)")
    parser.add_argument("--keep", type=Path, help="build the store here and keep it")
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="event-log-growth-"))
    try:
        store = args.store or args.keep or tmp / "data"
        load_build = os.getloadavg()[0]
        built_s = float("nan") if args.store else build(store, args.events, args.partitions, args.per_commit)
        size = sum(f.stat().st_size for f in store.rglob("*") if f.is_file())
        print(f"store: {args.events:,} events, {size / 2**20:,.0f} MiB, built in {built_s:.0f} s "
              f"(load {load_build:.1f})")
        starts = []
        for repeat in range(args.repeats):
            load = os.getloadavg()[0]
            ready, rss = start_timed(store)
            starts.append((ready, rss, load))
            print(f"start #{repeat + 1}: ApiVersions answered after {ready:.2f} s, RSS {rss / 2**20:.0f} MiB "
                  f"(load {load:.1f})", flush=True)
        load_check = os.getloadavg()[0]
        check_s, check_out = (float("nan"), "skipped") if args.skip_check else check_timed(store)
        print(f"logwright check: {check_s:.1f} s, {check_out} (load {load_check:.1f})")
        top = ""
        if args.profile:
            prof = tmp / "start.prof"
            profiled, _ = start_timed(store, prof)
            top = profile_top(prof)
            print(f"profiled start (cProfile): {profiled:.2f} s\n{top}")
        if args.markdown:
            rows = "\n".join(f"| {i + 1} | {r:.2f} | {m / 2**20:.0f} | {ld:.1f} |"
                              for i, (r, m, ld) in enumerate(starts))
            text = (f"\n## {args.events:,} events ({args.partitions} partitions, 1-record 100 B appends)\n\n"
                    f"Store {size / 2**20:,.0f} MiB on disk, built in {built_s:.0f} s (load {load_build:.1f}). "
                    f"`logwright check`: {check_s:.1f} s, {check_out} (load {load_check:.1f}).\n\n"
                    "| start | launch to ApiVersions s | RSS MiB | load (1 min) |\n|---|---|---|---|\n" + rows + "\n")
            if top:
                text += ("\nWhere a start-up's time goes (cProfile, cumulative, logwright and rocksdict frames):\n\n"
                         "| cumulative s | share | function |\n|---|---|---|\n" + top + "\n")
            with args.markdown.open("a") as out:
                out.write(text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
