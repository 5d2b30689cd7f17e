"""Apache Kafka as a reference peer: a single KRaft node assembled from Maven Central, on loopback.

Every compatibility claim and benchmark figure of logwright is measured against the real broker, so this
module starts one on this machine without a release tarball: ``bench/kafka/pom.xml`` names the broker
artifacts, Maven copies them and their run-time dependencies into ``bench/kafka/target/lib`` (git-ignored),
the storage tool's main class formats a fresh log directory, and ``kafka.Kafka`` runs with a generated
``server.properties`` on free ports of 127.0.0.1. Share groups are switched on through the ``share.version``
feature at format time, which is how Kafka 4.x enables KIP-932.

The broker runs in its own process group and is killed with the whole group on :meth:`KafkaPeer.stop` and at
interpreter exit, so no JVM outlives the run that started it.

    with KafkaPeer() as kafka:
        print(kafka.bootstrap)

``python bench/kafka_peer.py`` resolves the jars, starts a broker, prints the timings and stops it.
"""

from __future__ import annotations

import atexit
import base64
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from types import TracebackType

HERE = Path(__file__).resolve().parent
POM = HERE / "kafka" / "pom.xml"
LIB = HERE / "kafka" / "target" / "lib"
STAMP = LIB / ".resolved"
READY_LINE = "Kafka Server started"
DEFAULT_HEAP = "-Xmx512m"

_LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = {level}
rootLogger.appenderRef.out.ref = out
logger.kafka.name = kafka
logger.kafka.level = {level}
logger.server.name = org.apache.kafka.server.BrokerServer
logger.server.level = info
logger.raft.name = kafka.server.KafkaRaftServer
logger.raft.level = info
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def java() -> str:
    """The ``java`` to run: JAVA_HOME's when set (CI may point it at a JDK 17), else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise RuntimeError("no java on PATH: Apache Kafka 4.x needs a JDK or JRE 17 or later")
    return found


def resolve(force: bool = False, pom: Path = POM, lib: Path = LIB) -> float:
    """Copy the jars ``pom`` names into ``lib`` unless they are already there for the current pom.

    Returns the seconds spent (0.0 when nothing had to be done). A stamp file records which pom the
    directory was built from, so editing a version in the pom re-resolves on the next start. The Java
    client scenario (peers/java) resolves its kafka-clients through this too. An exclusive lock beside ``lib``
    serialises processes (pytest-xdist workers each starting a node): one copies while the others wait, then
    find the stamp, and none deletes the directory under a JVM already reading it.
    """
    lib.parent.mkdir(parents=True, exist_ok=True)
    with (lib.parent / f".{lib.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _resolve_locked(force, pom, lib)


def _resolve_locked(force: bool, pom: Path, lib: Path) -> float:
    stamp = lib / STAMP.name
    pom_text = pom.read_text()
    if not force and stamp.exists() and stamp.read_text() == pom_text:
        return 0.0
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("no mvn on PATH: install Maven to assemble Apache Kafka from Maven Central")
    if lib.exists():
        shutil.rmtree(lib)
    started = time.monotonic()
    command = [mvn, "-q", "-B", "-Dstyle.color=never", "-f", str(pom), "dependency:copy-dependencies",
               f"-DoutputDirectory={lib}"]
    for attempt in (1, 2, 3):  # Maven Central over the network: a dropped connection should not fail a CI run
        if subprocess.run(command).returncode == 0:
            break
        if attempt == 3:
            raise RuntimeError(f"{' '.join(command)} failed three times")
        time.sleep(10 * attempt)
    stamp.write_text(pom_text)
    return time.monotonic() - started


def cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes in URL-safe base64 without padding, as Kafka's Uuid prints.

    Never one that starts with "-" (1 in 64 do): the storage tool's argument parser takes it for an option
    and formatting fails, which is why Kafka's own ``Uuid.randomUuid`` draws again in that case too."""
    while (drawn := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"):
        pass
    return drawn


class KafkaPeer:
    """One Apache Kafka node (broker and controller in one JVM) on free loopback ports.

    ``config`` overrides or adds broker properties (a ``node.id`` there also names the controller voter);
    ``features`` are passed to the storage tool as
    ``--feature name=level`` (``share.version=1`` by default, so share groups work). ``sasl_users`` adds a
    SASL_PLAINTEXT listener (``sasl_bootstrap``) offering PLAIN for these users and SCRAM-SHA-256/512 for the
    credentials AlterUserScramCredentials stores. ``ssl`` adds an SSL listener (``ssl_bootstrap``), and with
    ``sasl_users`` a SASL_SSL one (``sasl_ssl_bootstrap``) with the same users; their stores are ``ssl.*`` keys of
    ``config``. ``system_properties`` are given to the broker's JVM as ``-Dname=value`` (Kafka 4's
    ``org.apache.kafka.sasl.oauthbearer.allowed.urls``, which a JWKS URL must be listed in).
    """

    def __init__(self, work_dir: Path | None = None, config: dict[str, str] | None = None,
                 features: dict[str, int] | None = None, heap: str = DEFAULT_HEAP,
                 log_level: str = "warn", port: int | None = None, sasl_users: dict[str, str] | None = None,
                 ssl: bool = False, system_properties: dict[str, str] | None = None) -> None:
        self._own_dir = work_dir is None
        self.system_properties = dict(system_properties or {})
        self.work_dir = Path(tempfile.mkdtemp(prefix="kafka-peer-")) if work_dir is None else work_dir
        self.port = port or free_port()
        self.controller_port = free_port()
        while self.controller_port == self.port:  # each port was free alone; the two listeners need two
            self.controller_port = free_port()
        self.sasl_users = sasl_users
        self.sasl_port = 0
        while sasl_users is not None and self.sasl_port in (0, self.port, self.controller_port):
            self.sasl_port = free_port()
        self.ssl_port = self.sasl_ssl_port = 0
        while ssl and self.ssl_port in (0, self.port, self.controller_port, self.sasl_port):
            self.ssl_port = free_port()
        while ssl and sasl_users is not None and self.sasl_ssl_port in (
                0, self.port, self.controller_port, self.sasl_port, self.ssl_port):
            self.sasl_ssl_port = free_port()
        self.config = dict(config or {})
        self.features = {"share.version": 1} if features is None else dict(features)
        self.heap = heap
        self.log_level = log_level
        self.process: subprocess.Popen[bytes] | None = None
        self.resolve_s = 0.0
        self.format_s = 0.0
        self.startup_s = 0.0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    @property
    def ssl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.ssl_port}"

    @property
    def sasl_ssl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_ssl_port}"

    @property
    def log_path(self) -> Path:
        return self.work_dir / "kafka.log"

    def properties(self) -> dict[str, str]:
        """The server.properties of a one-node KRaft cluster on loopback, with every replication factor 1."""
        node = self.config.get("node.id", "1")
        props = {
            "process.roles": "broker,controller",
            "node.id": node,
            "controller.quorum.voters": f"{node}@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.work_dir / "data"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "4",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "share.coordinator.state.topic.num.partitions": "4",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "true",
            "delete.topic.enable": "true",
            # A deleted topic's files stay open for this long (default 60 s); the 10,000-partition curve deletes
            # one topic and creates the next within seconds, which ran Kafka into the 20,000 open-file limit
            # this machine cannot raise. Only the delay changes, not how Kafka serves.
            "file.delete.delay.ms": "1000",
        }
        if self.sasl_users is not None:
            users = " ".join(f'user_{name}="{password}"' for name, password in self.sasl_users.items())
            scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            props.update({
                "listeners": f"{props['listeners']},SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}",
                "advertised.listeners": f"{props['advertised.listeners']},SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}",
                "listener.security.protocol.map": f"{props['listener.security.protocol.map']},"
                                                  "SASL_PLAINTEXT:SASL_PLAINTEXT",
                "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config":
                    f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};",
                "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": scram,
                "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": scram,
            })
            if self.sasl_ssl_port:
                props.update({
                    "listeners": f"{props['listeners']},SASL_SSL://127.0.0.1:{self.sasl_ssl_port}",
                    "advertised.listeners": f"{props['advertised.listeners']},"
                                            f"SASL_SSL://127.0.0.1:{self.sasl_ssl_port}",
                    "listener.security.protocol.map": f"{props['listener.security.protocol.map']},SASL_SSL:SASL_SSL",
                    "listener.name.sasl_ssl.plain.sasl.jaas.config":
                        f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};",
                    "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": scram,
                    "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": scram,
                })
        if self.ssl_port:
            props.update({
                "listeners": f"{props['listeners']},SSL://127.0.0.1:{self.ssl_port}",
                "advertised.listeners": f"{props['advertised.listeners']},SSL://127.0.0.1:{self.ssl_port}",
                "listener.security.protocol.map": f"{props['listener.security.protocol.map']},SSL:SSL",
            })
        props.update(self.config)
        return props

    def _java(self, main: str, *args: str, heap: str, jvm: list[str] | None = None) -> list[str]:
        return [java(), heap, "-XX:+UseG1GC", "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={self.work_dir / 'log4j2.properties'}", *(jvm or ()),
                "-cp", str(LIB / "*"), main, *args]

    def prepare(self) -> list[str]:
        """Resolve the jars (if needed), write the configs, format the log directory; return the broker's command.

        A log directory formatted before (``meta.properties``) is kept as it is, with its cluster id and
        records, so a second broker on the same ``work_dir`` restarts on the first one's data (on new ports).
        bench/brokers.py launches the command itself; :meth:`start` does it here.
        """
        self.resolve_s = resolve()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        server_properties = self.work_dir / "server.properties"
        # a value's line breaks (PEM text given inline) written as Java's Properties reads them back: \n
        lines = (key + "=" + value.replace("\n", "\\n") for key, value in self.properties().items())
        server_properties.write_text("".join(line + "\n" for line in lines))
        (self.work_dir / "log4j2.properties").write_text(_LOG4J2.format(level=self.log_level))
        if not (self.work_dir / "data" / "meta.properties").exists():
            self._format(server_properties)
        properties = [f"-D{name}={value}" for name, value in self.system_properties.items()]
        return self._java("kafka.Kafka", str(server_properties), heap=self.heap, jvm=properties)

    def _format(self, server_properties: Path) -> None:
        started = time.monotonic()
        feature_args = [arg for name, level in self.features.items() for arg in ("--feature", f"{name}={level}")]
        formatted = subprocess.run(self._java("kafka.tools.StorageTool", "format", "--cluster-id", cluster_id(),
                                              "--config", str(server_properties), "--ignore-formatted",
                                              *feature_args, heap="-Xmx256m"),
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if formatted.returncode != 0:
            raise RuntimeError(f"formatting {self.work_dir / 'data'} failed ({formatted.returncode}): "
                               f"{formatted.stdout.decode(errors='replace')[-2000:]}")
        self.format_s = time.monotonic() - started

    def start(self, timeout_s: float = 120.0) -> KafkaPeer:
        """Prepare, launch, and wait until the broker says it started and accepts TCP."""
        command = self.prepare()
        started = time.monotonic()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout_s
        while not self._ready():
            if self.process.poll() is not None:
                raise RuntimeError(f"Apache Kafka exited with {self.process.returncode}: {self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"Apache Kafka did not start in {timeout_s} s: {self.log_tail()}")
            time.sleep(0.1)
        self.startup_s = time.monotonic() - started
        return self

    def _ready(self) -> bool:
        try:
            if READY_LINE not in self.log_path.read_text(errors="replace"):
                return False
            with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                return True
        except OSError:
            return False

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM the process group (Kafka shuts down cleanly), SIGKILL it if that takes too long."""
        atexit.unregister(self.stop)
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            self._signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self._signal_group(process.pid, signal.SIGKILL)
                process.wait(10)
        if process is not None:
            self._signal_group(process.pid, signal.SIGKILL)  # anything the JVM left in its group
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    @staticmethod
    def _signal_group(pgid: int, sig: signal.Signals) -> None:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def __enter__(self) -> KafkaPeer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()


def main() -> None:
    with KafkaPeer() as kafka:
        print(f"Apache Kafka at {kafka.bootstrap}: resolve {kafka.resolve_s:.1f} s, "
              f"format {kafka.format_s:.1f} s, start-up {kafka.startup_s:.1f} s")


if __name__ == "__main__":
    main()
