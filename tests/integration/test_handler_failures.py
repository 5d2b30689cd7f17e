"""A handler that raises: its request gets an error answer (or only its connection closes), the log says
what went wrong, and the broker and every other connection carry on.

The failing handlers come from a real plugin: a module and its ``.dist-info`` (entry point in the group
``logwright.plugins``) on the broker process's ``PYTHONPATH``, found the way an installed plugin is.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import textwrap
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from logwright.client.connection import Connection
from logwright.compat.registry import make

from .broker_process import BrokerProcess
from .group_configs import set_group_configs

pytestmark = pytest.mark.logwright_only(reason="plugins that fail on purpose")

WITH_ANSWER = 31001
WITHOUT_ANSWER = 31002
UNKNOWN_SERVER_ERROR = -1

PLUGIN = '''
"""Extension keys that fail on the body b"fail" and a subscription mode whose join always fails."""
import struct
from dataclasses import dataclass

from logwright.plugins.spec import hookimpl


async def echo_or_fail(context, body):
    if body == b"fail":
        raise RuntimeError("the plugin failed on purpose")
    return b"echo:" + body


def error_answer(code, message):
    return struct.pack(">h", code) + message.encode()


@dataclass(frozen=True, slots=True)
class BrokenMode:
    name: str = "broken"
    allows_cumulative_ack: bool = False
    uses_key_hashes: bool = False

    def join(self, membership, consumer):
        raise RuntimeError("the broken mode cannot join anyone")

    def leave(self, membership, consumer_id):
        return membership.without_consumer(consumer_id)

    def assigned_partitions(self, membership, consumer_id, partition_count):
        return frozenset()

    def eligible(self, view, consumer_id, candidates, limit):
        return candidates


@hookimpl
def logwright_register_extension_handlers(register):
    register.add(31001, "FailsWithAnswer", 0, 0, echo_or_fail, error_answer=error_answer)
    register.add(31002, "FailsWithoutAnswer", 0, 0, echo_or_fail)


@hookimpl
def logwright_register_subscription_modes(register):
    register.add(BrokenMode())
'''


@pytest.fixture(scope="module")
def failing_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    site = tmp_path_factory.mktemp("site")
    (site / "failing_plugin.py").write_text(textwrap.dedent(PLUGIN))
    info = site / "failing_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: failing-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[logwright.plugins]\nfailing = failing_plugin\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(site))
        process = BrokerProcess(tmp_path_factory.mktemp("failing") / "data").start()
    try:
        yield process
    finally:
        process.kill()


def _frame(api_key: int, correlation_id: int, body: bytes) -> bytes:
    client = b"failure-test"
    payload = struct.pack(">hhih", api_key, 0, correlation_id, len(client)) + client + body
    return struct.pack(">i", len(payload)) + payload


def _answer(sock: socket.socket) -> tuple[int, bytes] | None:
    """(correlation id, body) of the next answer; ``None`` once the broker closed the connection."""
    size = sock.recv(4, socket.MSG_WAITALL)
    if len(size) < 4:
        return None
    payload = sock.recv(struct.unpack(">i", size)[0], socket.MSG_WAITALL)
    return struct.unpack_from(">i", payload)[0], payload[4:]


def _connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=20)


def test_an_extension_with_an_error_answer_answers_the_failed_request_and_keeps_the_connection(
        failing_broker: BrokerProcess) -> None:
    with _connect(failing_broker.bootstrap) as sock:
        sock.sendall(_frame(WITH_ANSWER, 1, b"fail") + _frame(WITH_ANSWER, 2, b"hi"))
        assert _answer(sock) == (1, struct.pack(">h", UNKNOWN_SERVER_ERROR)
                                 + b"RuntimeError: the plugin failed on purpose")
        assert _answer(sock) == (2, b"echo:hi")
    log = failing_broker.log_tail(400)
    assert "FailsWithAnswer v0 handler failed for correlation id 1" in log
    assert "RuntimeError: the plugin failed on purpose" in log


def test_an_extension_without_an_error_answer_closes_only_its_connection_after_the_answers_before(
        failing_broker: BrokerProcess) -> None:
    with _connect(failing_broker.bootstrap) as other, _connect(failing_broker.bootstrap) as sock:
        sock.sendall(_frame(WITHOUT_ANSWER, 1, b"a") + _frame(WITHOUT_ANSWER, 2, b"fail")
                     + _frame(WITHOUT_ANSWER, 3, b"b"))
        assert _answer(sock) == (1, b"echo:a")
        assert _answer(sock) is None
        other.sendall(_frame(WITHOUT_ANSWER, 9, b"still"))
        assert _answer(other) == (9, b"echo:still")
    log = failing_broker.log_tail(400)
    assert "FailsWithoutAnswer v0 handler failed for correlation id 2" in log
    assert "FailsWithoutAnswer (key 31002) failed and has no error answer" in log
    assert failing_broker.alive()


def test_a_kafka_handler_that_raises_answers_unknown_server_error_and_the_connection_goes_on(
        failing_broker: BrokerProcess) -> None:
    topic, group = f"broken-{uuid.uuid4().hex[:8]}", f"broken-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": failing_broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    set_group_configs(failing_broker.bootstrap, group, {"logwright.subscription.mode": "broken"})

    async def scenario() -> None:
        connection = await Connection.open(failing_broker.bootstrap, "failure-test")
        try:
            join = make(ShareGroupHeartbeatRequest, group_id=group, member_id=uuid.uuid4().hex, member_epoch=0,
                        rack_id=None, subscribed_topic_names=(topic,))
            response = await connection.request(join)
            assert response.error_code == UNKNOWN_SERVER_ERROR
            other = make(ShareGroupHeartbeatRequest, group_id=group + "-shared", member_id=uuid.uuid4().hex,
                         member_epoch=0, rack_id=None, subscribed_topic_names=(topic,))
            assert (await connection.request(other)).error_code == 0
        finally:
            await connection.close()

    asyncio.run(scenario())
    log = failing_broker.log_tail(400)
    assert "ShareGroupHeartbeat v1 handler failed" in log
    assert "RuntimeError: the broken mode cannot join anyone" in log
