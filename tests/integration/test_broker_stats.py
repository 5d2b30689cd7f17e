"""LogwrightBrokerStats (32007) over TCP: connections and tasks follow the clients that come and go."""

from __future__ import annotations

import asyncio
from typing import Any

import msgpack
from logwright.client.connection import Connection

from .broker_process import BrokerProcess

STATS_KEY = 32007


async def stats(connection: Connection) -> dict[str, Any]:
    return await connection.extension(STATS_KEY, {}, "broker stats")


async def settled_at(connection: Connection, connections: int, open_fds: int) -> dict[str, Any]:
    """The stats once the broker has seen closed connections go: closing is asynchronous on its side (the
    socket is closed a loop turn or two after the last answer it owed is sent)."""
    for _ in range(500):
        answer = await stats(connection)
        if answer["connections"] == connections and answer["open_fds"] == open_fds:
            return answer
        await asyncio.sleep(0.01)
    return answer


def test_connections_and_tasks_come_back_after_clients_leave(broker: BrokerProcess) -> None:
    async def scenario() -> None:
        own = await Connection.open(broker.bootstrap, "stats")
        before = await stats(own)
        assert before["error_code"] == 0 and before["connections"] == 1
        assert before["tasks"] >= 1  # this request's handler at least (connections run no task of their own)
        assert before["rss_bytes"] > 10 * 2**20 and before["open_fds"] > 3 and before["python_blocks"] > 1000

        others = [await Connection.open(broker.bootstrap, f"c{i}") for i in range(5)]
        for other in others:
            await stats(other)  # every connection accepted and serving
        during = await stats(own)
        assert during["connections"] == 6
        assert during["open_fds"] >= before["open_fds"] + 5

        for other in others:
            await other.close()
        after = await settled_at(own, 1, before["open_fds"])
        assert after["connections"] == 1
        assert after["tasks"] == before["tasks"], (before["tasks_by_coroutine"], after["tasks_by_coroutine"])
        assert after["open_fds"] == before["open_fds"]
        assert msgpack.unpackb(await own.raw(STATS_KEY, b"\x93\x01\x02\x03"))["error_code"] == 42
        await own.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))
