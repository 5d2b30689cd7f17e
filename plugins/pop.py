"""Pop consumption (RocketMQ 5's Pop) for logwright: the in-flight projection and the group configs.

The pops themselves are the broker's (`logwright.compat.coordinators.pop_coordinator`, extension keys
32009-32012); this plugin registers what they need through the same hooks a third party uses: the in-flight
projection folded from the pop events, and the settings a group may change. Disabling the plugin
(``plugins.disabled=pop``) leaves the keys answering UNSUPPORTED_FEATURE; events already logged stay readable.
"""

from __future__ import annotations

import re

from logwright.core.events.pop import POP_EVENT_TYPES
from logwright.core.pop.inflight import POP_INFLIGHT, POP_STATE_TYPES
from logwright.core.pop.pop_commands import (
    DEAD_LETTER_TOPIC_KEY,
    DEFAULT_MAX_RECONSUME_TIMES,
    INIT_MODE_KEY,
    MAX_RECONSUME_TIMES_KEY,
)

from .api import ConfigKey, ConfigKeyRegister, ProjectionRegister, hookimpl, long_at_least, one_of

_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def dead_letter_topic(value: str) -> str | None:
    """Empty (``DLQ.<group>``, RocketMQ's ``%DLQ%<group>`` in a legal name) or a legal, non-internal topic name."""
    if value == "":
        return None
    if value.startswith("__") or not _TOPIC_NAME.fullmatch(value) or value in (".", ".."):
        return (f"{DEAD_LETTER_TOPIC_KEY} must be a legal topic name (1-249 of a-z A-Z 0-9 . _ -, not starting "
                f"with '__'), got {value!r}")
    return None


@hookimpl
def logwright_register_projections(register: ProjectionRegister) -> None:
    register.add(POP_INFLIGHT, POP_EVENT_TYPES, POP_STATE_TYPES)


@hookimpl
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    register.add(ConfigKey(MAX_RECONSUME_TIMES_KEY, "group", str(DEFAULT_MAX_RECONSUME_TIMES), long_at_least(0),
                           "RocketMQ's maxReconsumeTimes for pop consumers: a record that failed (nack or invisible "
                           "time ran out) more often goes to the dead-letter topic instead of coming back.", "LONG"))
    register.add(ConfigKey(DEAD_LETTER_TOPIC_KEY, "group", "", dead_letter_topic,
                           "Where popped records past the max reconsume times are copied; empty: DLQ.<group> "
                           "(RocketMQ's %DLQ%<group>), created with one partition if auto.create.topics.enable."))
    register.add(ConfigKey(INIT_MODE_KEY, "group", "latest", one_of("latest", "earliest"),
                           "Where a group's first pop of a partition starts: the log end (RocketMQ's MAX) or the "
                           "log start (MIN)."))
