"""Fixtures for scenarios against a real broker: logwright by default, Apache Kafka with ``--against kafka``.

The differential mode is how the suite's expectations are checked: a scenario that fails on Apache Kafka
encodes the wrong expectation, one that passes there and fails on logwright is a logwright bug. Scenarios
that need a private logwright process (restarts, SIGKILL, ``logwright check``) or assert logwright-specific
bytes are marked ``logwright_only``; the ``broker`` fixture skips on Kafka as a safety net too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from .broker_process import BrokerProcess, free_port
from .sasl_listeners import AUTHORIZING, OAUTHBEARER, PLAIN_USERS, TOKENS, Listeners

BENCH = Path(__file__).resolve().parents[2] / "bench"


class Server(Protocol):
    @property
    def bootstrap(self) -> str: ...

    def alive(self) -> bool: ...


def against(config: pytest.Config) -> str:
    return str(config.getoption("--against", default="logwright"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kafka = against(config) == "kafka"
    for item in items:
        if "tests/integration" not in str(item.fspath):
            continue
        item.add_marker(pytest.mark.integration)
        only = item.get_closest_marker("logwright_only")
        if kafka and only is not None:
            reason = only.kwargs.get("reason", "needs a private logwright process")
            item.add_marker(pytest.mark.skip(reason=f"logwright only: {reason}"))


@pytest.fixture(scope="session")
def shared_broker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One broker for the whole session; tests use their own topic names so they do not interfere.

    ``--against kafka`` makes it an Apache Kafka node; ``LOGWRIGHT_BOOTSTRAP`` points the suite at an
    already running broker instead.
    """
    if os.environ.get("LOGWRIGHT_BOOTSTRAP"):
        yield _External(os.environ["LOGWRIGHT_BOOTSTRAP"])
        return
    if against(request.config) == "kafka":
        sys.path.append(str(BENCH))
        from kafka_peer import KafkaPeer

        with KafkaPeer(tmp_path_factory.mktemp("kafka")) as kafka:
            yield kafka
            assert kafka.alive(), kafka.log_tail()
        return
    broker = BrokerProcess(tmp_path_factory.mktemp("shared") / "data").start()
    try:
        yield broker
    finally:
        if broker.alive():
            assert broker.stop() == 0, broker.log_tail()


@pytest.fixture
def broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker of the test's own, for restarts and kills."""
    if against(request.config) == "kafka":
        pytest.skip("needs a private logwright process")
    process = BrokerProcess(tmp_path / "data").start()
    try:
        yield process
    finally:
        process.kill()


@pytest.fixture
def clock_broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker of the test's own on a manual clock (``serve --manual-clock``): time moves only when the test
    advances it (LogwrightAdvanceClock)."""
    if against(request.config) == "kafka":
        pytest.skip("needs a private logwright process")
    process = BrokerProcess(tmp_path / "data", extra_args=("--manual-clock",)).start()
    try:
        yield process
    finally:
        process.kill()


@contextlib.contextmanager
def _own_broker(request: pytest.FixtureRequest, tmp_path: Path, config: dict[str, str],
                manual_clock: bool = False) -> Iterator[str]:
    """A broker of the test's own started with ``config``: logwright (on a manual clock if asked), or Apache Kafka
    under ``--against kafka``."""
    if against(request.config) == "kafka":
        sys.path.append(str(BENCH))
        from kafka_peer import KafkaPeer

        with KafkaPeer(tmp_path / "kafka", config=config) as kafka:
            yield kafka.bootstrap
        return
    process = BrokerProcess(tmp_path / "data", config=config, manual_clock=manual_clock).start()
    try:
        yield process.bootstrap
    finally:
        process.kill()


@pytest.fixture
def started_with(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A broker of the test's own started with the broker configs of the test's parameter (``indirect=True``):
    logwright, or Apache Kafka under ``--against kafka``."""
    with _own_broker(request, tmp_path, request.param) as bootstrap:
        yield bootstrap


@dataclass(frozen=True)
class Clocked:
    """A broker of the test's own and how time passes on it: Apache Kafka's wall clock, or logwright's manual clock,
    which the scenario advances instead of waiting (the same steps on both brokers)."""

    bootstrap: str
    manual: bool

    async def elapse(self, milliseconds: int) -> None:
        if self.manual:
            from .test_share_groups import advance_clock

            advance_clock(self.bootstrap, milliseconds)
        else:
            await asyncio.sleep(milliseconds / 1000)


@pytest.fixture
def clocked_with(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Clocked]:
    """`started_with`, but logwright runs on a manual clock: a scenario that must let minutes pass on Kafka lets them
    pass at once on logwright (``indirect=True``, the broker configs as parameter)."""
    manual = against(request.config) != "kafka"
    with _own_broker(request, tmp_path, request.param, manual_clock=manual) as bootstrap:
        yield Clocked(bootstrap, manual)


@pytest.fixture
def target(request: pytest.FixtureRequest) -> str:
    """Which broker the scenarios run on, for the few places where Kafka and logwright differ on purpose."""
    return against(request.config)


@pytest.fixture
def bootstrap(shared_broker: Server) -> str:
    return shared_broker.bootstrap


class _External:
    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def alive(self) -> bool:
        return True


def _sasl_broker(request: pytest.FixtureRequest, work: Path, config: dict[str, str]) -> Iterator[Listeners]:
    """A broker with a SASL_PLAINTEXT listener beside its PLAINTEXT one (`sasl_listeners`), with ``config`` more."""
    if against(request.config) == "kafka":
        sys.path.append(str(BENCH))
        from kafka_peer import KafkaPeer

        with KafkaPeer(work / "kafka", sasl_users=PLAIN_USERS, config={**TOKENS, **config}) as kafka:
            yield Listeners(kafka.bootstrap, kafka.sasl_bootstrap)
        return
    yield from sasl_logwright(work, config)


def sasl_logwright(work: Path, config: dict[str, str], *extra_args: str) -> Iterator[Listeners]:
    """logwright with a SASL_PLAINTEXT listener (PLAIN users, SCRAM, tokens) and ``config`` more; ``extra_args``
    for its command line (``--manual-clock``)."""
    users = " ".join(f'user_{name}="{password}"' for name, password in PLAIN_USERS.items())
    port = free_port()
    process = BrokerProcess(work / "data", config={
        **TOKENS, "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};", **config,
    }, extra_args=("--sasl-listen", f"127.0.0.1:{port}", *extra_args)).start()
    try:
        yield Listeners(process.bootstrap, f"127.0.0.1:{port}")
    finally:
        assert process.alive(), process.log_tail()
        process.kill()


@pytest.fixture(scope="module")
def listeners(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Listeners]:
    """A SASL broker for one test module: sessions without expiry."""
    yield from _sasl_broker(request, tmp_path_factory.mktemp("sasl"), {})


@pytest.fixture(scope="module")
def authorizing_listeners(request: pytest.FixtureRequest,
                          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Listeners]:
    """A SASL broker for one test module enforcing ACLs (Kafka's StandardAuthorizer): the PLAINTEXT listener's
    ``User:ANONYMOUS`` is the super user, the SASL users are not."""
    yield from _sasl_broker(request, tmp_path_factory.mktemp("sasl-acls"), AUTHORIZING)


@pytest.fixture(scope="module")
def oauthbearer_listeners(request: pytest.FixtureRequest,
                          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Listeners]:
    """A SASL broker for one test module that also serves OAUTHBEARER with Kafka's unsecured validator
    (`sasl_listeners.OAUTHBEARER`)."""
    yield from _sasl_broker(request, tmp_path_factory.mktemp("sasl-oauthbearer"), OAUTHBEARER)


@pytest.fixture(scope="module")
def reauth_listeners(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Listeners]:
    """A SASL broker for one test module whose sessions last 3 s (``connections.max.reauth.ms``)."""
    yield from _sasl_broker(request, tmp_path_factory.mktemp("sasl-reauth"), {"connections.max.reauth.ms": "3000"})
