"""Every API key the broker serves has its place in the authorization table: a whole-request rule, checks in its
handler, nothing to check; logwright's own keys each declare what they need (`compat.extensions.access`) or are
for super users. A new handler without a decision fails here rather than being open to every principal."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import logwright.compat.handlers  # noqa: F401 - registers every handler
from logwright.compat.authorization_rules import IN_HANDLER, OPEN, RULES
from logwright.compat.errors import ErrorCode
from logwright.compat.extensions.clock_control import API_KEY as ADVANCE_CLOCK_KEY
from logwright.compat.registry import HANDLERS, RequestContext
from logwright.compat.request_dispatch import RequestDispatch
from logwright.compat.wire.fallback import empty_entity
from logwright.compat.wire.messages import KNOWN_VERSIONS, PRODUCE_KEY, request_type


def test_every_kafka_key_served_is_placed() -> None:
    kafka_keys = {key for key in HANDLERS if key in KNOWN_VERSIONS}
    placed = set(RULES) | IN_HANDLER | OPEN
    assert kafka_keys - placed == set()
    assert OPEN.isdisjoint(RULES) and OPEN.isdisjoint(IN_HANDLER)


def test_extension_keys_declare_their_access() -> None:
    """logwright's own keys are outside Kafka's table; each built-in one asks for the ACLs of the Kafka work it
    does (tests/integration/test_authorization_extensions.py), LogwrightAdvanceClock stays for super users."""
    extension_keys = {key for key in HANDLERS if key not in KNOWN_VERSIONS}
    assert extension_keys
    assert extension_keys.isdisjoint(set(RULES) | IN_HANDLER | OPEN)
    assert {key for key in extension_keys if HANDLERS[key].authorize is None} <= {ADVANCE_CLOCK_KEY}


def test_every_whole_request_refusal_has_an_answer() -> None:
    """A refusal is the request's own error answer in every version served (its top-level error, the code on each
    entry, or one built for it), never a connection closed for want of one."""
    for api_key in sorted(RULES):
        entry = HANDLERS[api_key]
        for version in range(entry.min_version, entry.max_version + 1):
            request = empty_entity(request_type(api_key, version))
            if api_key == PRODUCE_KEY:
                request = dataclasses.replace(request, acks=-1)  # acks=0 is answered by closing, as Kafka
            context = RequestContext(cast(Any, None), api_key, version, 7, "test", 1, "127.0.0.1")
            answer = RequestDispatch._refused(entry, context, request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
            assert answer, (entry.name, version)
