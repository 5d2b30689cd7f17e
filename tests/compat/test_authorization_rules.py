"""Every API key the broker serves has its place in the authorization table: a whole-request rule, checks in its
handler, nothing to check, or (logwright's own keys) super users only. A new handler without a decision fails
here rather than being open to every principal."""

from __future__ import annotations

import logwright.compat.handlers  # noqa: F401 - registers every handler
from logwright.compat.authorization_rules import IN_HANDLER, OPEN, RULES
from logwright.compat.registry import HANDLERS
from logwright.compat.wire.messages import KNOWN_VERSIONS


def test_every_kafka_key_served_is_placed() -> None:
    kafka_keys = {key for key in HANDLERS if key in KNOWN_VERSIONS}
    placed = set(RULES) | IN_HANDLER | OPEN
    assert kafka_keys - placed == set()
    assert OPEN.isdisjoint(RULES) and OPEN.isdisjoint(IN_HANDLER)


def test_extension_keys_are_left_to_super_users() -> None:
    extension_keys = {key for key in HANDLERS if key not in KNOWN_VERSIONS}
    assert extension_keys
    assert extension_keys.isdisjoint(set(RULES) | IN_HANDLER | OPEN)
