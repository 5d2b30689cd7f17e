"""Dead-letter topics for share groups, with KIP-1191's configs and headers (Kafka 4.4).

A group with ``errors.deadletterqueue.topic.name`` set gets a copy of every record it archives (a
consumer's REJECT, or the delivery limit reached on release, lock expiry or a session timeout) on that
topic, written in the same WriteBatch as the archive: a user moving from Kafka 4.4 changes nothing, and
gets the copy exactly once where Kafka gives it at least once, after the archive. The target topic must
have ``errors.deadletterqueue.group.enable=true``, as in Kafka. Without
``errors.deadletterqueue.copy.record.enable`` the copy carries only the ``__dlq.errors.*`` headers.
"""

from __future__ import annotations

import re

from .api import ArchivedRecords, ConfigKey, ConfigKeyRegister, DeadLetter, boolean, hookimpl

TOPIC_KEY = "errors.deadletterqueue.topic.name"
COPY_RECORD_KEY = "errors.deadletterqueue.copy.record.enable"
GROUP_ENABLE_KEY = "errors.deadletterqueue.group.enable"

HEADERS = (
    ("__dlq.errors.topic", "{topic}"),
    ("__dlq.errors.partition", "{partition}"),
    ("__dlq.errors.offset", "{offset}"),
    ("__dlq.errors.group", "{group}"),
    ("__dlq.errors.delivery.count", "{delivery_count}"),
    ("__dlq.errors.message", "{reason}"),
)
"""KIP-1191's headers, values as UTF-8 text."""

_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def dead_letter_topic(value: str) -> str | None:
    """Empty (no dead-letter topic) or a legal topic name not starting with ``__`` (internal topics)."""
    if value == "":
        return None
    if value.startswith("__"):
        return f"{TOPIC_KEY} must not name an internal topic (starting with '__'), got {value!r}"
    if not _TOPIC_NAME.fullmatch(value) or value in (".", ".."):
        return f"{TOPIC_KEY} must be a legal topic name (1-249 of a-z A-Z 0-9 . _ -), got {value!r}"
    return None


@hookimpl
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    register.add(ConfigKey(TOPIC_KEY, "group", "", dead_letter_topic,
                           "The topic that receives a copy of every record the share group archives (REJECT, "
                           "delivery limit), written atomically with the archive; empty: no dead-letter topic."))
    register.add(ConfigKey(COPY_RECORD_KEY, "group", "false", boolean,
                           "Whether the dead-letter copy keeps the original's key, value, headers and timestamp "
                           "(false: only the __dlq.errors.* headers).", "BOOLEAN"))
    register.add(ConfigKey(GROUP_ENABLE_KEY, "topic", "false", boolean,
                           "Whether share groups may use this topic as their dead-letter topic.", "BOOLEAN"))


@hookimpl(trylast=True)
def logwright_decide_archive(archived: ArchivedRecords) -> DeadLetter | None:
    topic = archived.settings.get(TOPIC_KEY, "")
    if not topic:
        return None
    return DeadLetter(topic, archived.settings.get(COPY_RECORD_KEY, "false") == "true", HEADERS, GROUP_ENABLE_KEY)
