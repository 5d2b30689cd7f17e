"""ApiVersions keeps its encoded entries per table: what it answers must still follow the table."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kio.schema.api_versions.v0 import response as v0
from kio.schema.api_versions.v3 import response as v3
from logwright.compat.handlers import load_handlers
from logwright.compat.kafka import api_versions
from logwright.compat.registry import HANDLERS, HandlerEntry, RequestContext
from logwright.compat.wire.messages import decode_response, encode_response_frame


def advertised(version: int) -> list[tuple[int, int, int]]:
    """The (key, min, max) triples of an ApiVersions answer of ``version``, as a client decodes them."""
    handled = asyncio.run(api_versions.handle(RequestContext(None, 18, version, 1, None, 1, "-"), None))
    _, answer = decode_response(18, version, b"".join(encode_response_frame(18, version, 1, handled))[4:])
    return [(int(key.api_key), int(key.min_version), int(key.max_version)) for key in answer.api_keys]


def table() -> list[tuple[int, int, int]]:
    return sorted((entry.api_key, entry.advertised_min, entry.max_version) for entry in HANDLERS.values())


async def _unused(context: RequestContext, request: Any) -> Any:
    raise AssertionError("never called")


@pytest.mark.parametrize("version", [0, 3])
def test_the_answer_follows_a_table_that_changes_between_requests(version: int,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    load_handlers()
    before = advertised(version)
    assert before == table()
    assert advertised(version) == before  # kept: the same entries again
    monkeypatch.setitem(HANDLERS, 32700, HandlerEntry(32700, "Probe", 0, 2, _unused))
    assert advertised(version) == table() == sorted([*before, (32700, 0, 2)])
    monkeypatch.setitem(HANDLERS, 32700, HandlerEntry(32700, "Probe", 1, 3, _unused))  # same key, new range
    assert (32700, 1, 3) in advertised(version)
    monkeypatch.delitem(HANDLERS, 32700)
    assert advertised(version) == before


def test_each_version_keeps_its_own_encoding() -> None:
    load_handlers()
    assert api_versions.served_keys(v0.ApiVersion) != api_versions.served_keys(v3.ApiVersion)  # v3 is flexible
