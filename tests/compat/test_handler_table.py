"""The one table of served keys (compat/handlers.py), what the modules register, and ApiVersions agree.

Checked in a fresh interpreter: other tests register plugin extension keys in the process-wide table.
"""

from __future__ import annotations

import json
import subprocess
import sys

from logwright.compat.handlers import EXTENSION_APIS, KAFKA_APIS
from logwright.compat.wire.messages import KNOWN_VERSIONS, PRODUCE_KEY

PROBE = """
import asyncio, json
from logwright.compat.extensions import clock_control
from logwright.compat.handlers import load_handlers
from logwright.compat.kafka import api_versions
from logwright.compat.registry import RequestContext
from logwright.compat.wire.messages import decode_response, encode_response_frame

clock_control.enable()
table = load_handlers()
handled = asyncio.run(api_versions.handle(RequestContext(None, 18, 3, 1, None, 1, "-"), None))
_, answer = decode_response(18, 3, b"".join(encode_response_frame(18, 3, 1, handled))[4:])  # entries kept encoded
print(json.dumps({
    "registered": {key: [entry.name, entry.advertised_min, entry.max_version, entry.handle.__module__]
                   for key, entry in table.items()},
    "advertised": [[int(k.api_key), int(k.min_version), int(k.max_version)] for k in answer.api_keys],
}))
"""


def probe() -> dict[str, dict[str, list[str | int]] | list[list[int]]]:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120)
    found: dict[str, dict[str, list[str | int]] | list[list[int]]] = json.loads(done.stdout)
    return found


def test_every_listed_key_is_registered_by_its_module_and_nothing_else_is() -> None:
    found = probe()
    registered = found["registered"]
    assert isinstance(registered, dict)
    listed = KAFKA_APIS | EXTENSION_APIS
    assert sorted(int(key) for key in registered) == sorted(listed)
    for key, (_name, _low, _high, module) in registered.items():
        assert module == listed[int(key)].__name__


def test_api_versions_advertises_exactly_the_table_within_what_kio_reads() -> None:
    found = probe()
    registered, advertised = found["registered"], found["advertised"]
    assert isinstance(registered, dict) and isinstance(advertised, list)
    assert advertised == sorted([int(key), low, high] for key, (_name, low, high, _module) in registered.items())
    for key, low, high in advertised:
        if key == PRODUCE_KEY:  # named from 0 though served from 3, as Kafka 4.x names it (KAFKA-18659)
            assert (low, min(KNOWN_VERSIONS[key])) == (0, 3)
        elif key in KAFKA_APIS:
            assert low in KNOWN_VERSIONS[key] and high in KNOWN_VERSIONS[key], key
