"""Where the signed OAUTHBEARER validator's keys come from (`compat.jwks_endpoint`): a file read again when it
changes, an HTTP endpoint fetched, refreshed on the broker clock, asked again for a missing key id at most once a
minute, and kept when the endpoint fails or answers something that is not a key set."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from logwright.compat.jwks_endpoint import LARGEST_KEY_SET_BYTES, JwksEndpoint
from logwright.core.errors import InvalidConfig


def key(kid: str) -> dict[str, Any]:
    return {"kty": "oct", "kid": kid, "k": "a2V5LWtleS1rZXkta2V5LWtleS1rZXkta2V5LWtleS0"}


def kids(endpoint: JwksEndpoint) -> list[str | None]:
    return [jwk.kid for jwk in endpoint.keys().keys]


def test_a_file_is_read_at_start_and_again_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [key("a")]}))
    endpoint = JwksEndpoint(path.as_uri(), 3_600_000, 100, 10_000, lambda: 0)
    assert kids(endpoint) == ["a"]
    path.write_text(json.dumps({"keys": [key("a"), key("bb")]}))
    assert kids(endpoint) == ["a", "bb"]
    path.write_text("not a key set, and longer")  # a broken change keeps the keys, with one warning
    assert kids(endpoint) == ["a", "bb"]
    path.write_text(json.dumps({"keys": [key("c")]}))
    assert kids(endpoint) == ["c"]
    path.unlink()
    assert kids(endpoint) == ["c"]
    with pytest.raises(InvalidConfig, match="cannot be read as a key set"):
        JwksEndpoint((tmp_path / "missing.json").as_uri(), 1, 1, 1, lambda: 0)
    (tmp_path / "huge.json").write_bytes(b" " * (LARGEST_KEY_SET_BYTES + 1))
    with pytest.raises(InvalidConfig, match="larger than"):
        JwksEndpoint((tmp_path / "huge.json").as_uri(), 1, 1, 1, lambda: 0)


class Served:
    def __init__(self) -> None:
        self.body = json.dumps({"keys": [key("a")]}).encode()
        self.status = 200
        self.asked = 0


@pytest.fixture
def served() -> Iterator[tuple[Served, str]]:
    state = Served()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            state.asked += 1
            self.send_response(state.status)
            self.send_header("Content-Length", str(len(state.body)))
            self.end_headers()
            self.wfile.write(state.body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}/jwks"
    finally:
        server.shutdown()


def test_an_http_key_set_is_refreshed_on_the_broker_clock_and_kept_through_failures(
        served: tuple[Served, str]) -> None:
    state, url = served

    async def scenario() -> None:
        clock = [0]
        wakes: list[asyncio.Future[None]] = []

        async def sleep_until(time_ms: int) -> None:
            while clock[0] < time_ms:
                wake: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                wakes.append(wake)
                await wake

        async def advance(to_ms: int) -> None:
            clock[0] = to_ms
            for wake in wakes:
                if not wake.done():
                    wake.set_result(None)
            wakes.clear()
            for _ in range(1000):  # let the refresher fetch (in its thread) and sleep again (10 s at most)
                await asyncio.sleep(0.01)
                if wakes:
                    break

        endpoint = JwksEndpoint(url, 60_000, 100, 400, lambda: clock[0])
        refresher = asyncio.create_task(endpoint.run(sleep_until))
        await advance(0)
        assert kids(endpoint) == ["a"] and state.asked == 1
        state.body = json.dumps({"keys": [key("a"), key("b")]}).encode()
        await advance(59_999)
        assert state.asked == 1, "not before the refresh interval"
        await advance(60_000)
        assert kids(endpoint) == ["a", "b"] and state.asked == 2
        state.body, state.status = b"<html>down</html>", 503
        await advance(120_000)
        assert kids(endpoint) == ["a", "b"] and state.asked == 3, "a failed fetch keeps the keys"
        await advance(120_100)  # retried after the backoff, doubling up to its maximum
        await advance(120_300)
        await advance(120_700)
        await advance(121_100)
        assert state.asked == 7
        state.body, state.status = b"[" * (LARGEST_KEY_SET_BYTES + 10), 200
        await advance(121_500)
        assert kids(endpoint) == ["a", "b"] and state.asked == 8, "an oversized answer keeps the keys"
        state.body = json.dumps({"keys": [key("c")]}).encode()
        await advance(121_900)
        assert kids(endpoint) == ["c"]
        asked = state.asked
        endpoint.missing("d")  # a token named a key id the set lacks: fetched at once
        for _ in range(1000):
            await asyncio.sleep(0.01)
            if state.asked > asked:
                break
        assert state.asked == asked + 1
        await asyncio.sleep(0.1)
        endpoint.missing("d")  # the same id again within a minute: no fetch
        endpoint.missing("x" * 1001)  # an id too long to remember: no fetch
        await asyncio.sleep(0.2)
        assert state.asked == asked + 1
        refresher.cancel()

    asyncio.run(scenario())
