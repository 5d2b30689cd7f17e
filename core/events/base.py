"""The base of every event and the value shapes several domains' events share; imports no other event module.

Each event class has a stable ``TAG`` (its identity in the log, never reused) and a ``VERSION``; the
codec in `eventstore` writes both, so logs written by older versions stay readable. Payloads of
records are not in events: `RecordsAppended` describes a stored batch, the batch itself lives in the
``records`` column family.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

ConfigEntries = tuple[tuple[str, str], ...]
ConfigChanges = tuple[tuple[str, str | None], ...]

PLUGIN_EVENT_TAGS = range(10_000, 20_000)
"""Tags reserved for plugins' events; every core event's tag is below them, core state types use 1000+."""


@dataclass(frozen=True, slots=True)
class Event:
    """A state change the broker remembers, written to the log as ``[time, TAG, VERSION, fields...]``.

    Tags are the log's only notion of type, so one never changes or is reused: core events use small
    numbers (one decade per domain, below 1000), core state types 1000-1999, plugin state types 2000 up,
    and plugin events `PLUGIN_EVENT_TAGS` (10 000-19 999). The codec refuses, when the store opens, a tag
    two classes claim, a plugin event outside that range and a core event inside it.
    """

    TAG: ClassVar[int] = 0
    VERSION: ClassVar[int] = 1
