"""Retry letter topics (Pulsar's ``reconsumeLater``) for logwright subscriptions: the group configs.

The move itself is the broker's (`logwright.compat.coordinators.retry_letters`, extension key 32008:
copy to the retry topic, ack the original, one WriteBatch); this plugin registers the two settings it
reads, so they are refused or described like any other group config, and decides through
``logwright_decide_archive`` where a record reconsumed past ``logwright.retry.max.reconsume.times`` goes:
Pulsar's dead-letter topic (``logwright.dead.letter.topic``, default ``<REAL_TOPIC>-<subscription>-DLQ``,
created on first use if the broker auto-creates topics) with ``RECONSUMETIMES`` = that attempt and
``REAL_TOPIC``/``ORIGIN_MESSAGE_ID`` set once. A plugin answering first replaces the policy.
"""

from __future__ import annotations

import re

from .api import ArchivedRecords, ConfigKey, ConfigKeyRegister, DeadLetter, hookimpl, long_at_least

RETRY_TOPIC_KEY = "logwright.retry.letter.topic"
MAX_RECONSUME_TIMES_KEY = "logwright.retry.max.reconsume.times"
DEAD_LETTER_TOPIC_KEY = "logwright.dead.letter.topic"

ONCE_HEADERS = (("REAL_TOPIC", "{topic}"), ("ORIGIN_MESSAGE_ID", "{topic}-{partition}@{offset}"))
"""Pulsar's properties a retried record already carries (from its first move); set only where absent."""

_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def retry_topic(value: str) -> str | None:
    """Empty (the default name) or a legal topic name not starting with ``__`` (internal topics)."""
    if value == "":
        return None
    if value.startswith("__"):
        return f"{RETRY_TOPIC_KEY} must not name an internal topic (starting with '__'), got {value!r}"
    if not _TOPIC_NAME.fullmatch(value) or value in (".", ".."):
        return f"{RETRY_TOPIC_KEY} must be a legal topic name (1-249 of a-z A-Z 0-9 . _ -), got {value!r}"
    return None


@hookimpl
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    register.add(ConfigKey(RETRY_TOPIC_KEY, "group", "", retry_topic,
                           "Pulsar's retryLetterTopic: where reconsume_later moves a record (a named topic must "
                           "exist; the subscription consumes it too); empty: <topic>-<subscription>-RETRY, "
                           "created on first use if auto.create.topics.enable."))
    register.add(ConfigKey(MAX_RECONSUME_TIMES_KEY, "group", "16", long_at_least(0),
                           "Pulsar's maxRedeliverCount for retry letter topics: a record reconsumed more often "
                           "goes to the dead-letter topic (logwright.dead.letter.topic, default "
                           "<topic>-<subscription>-DLQ) instead.", "LONG"))


@hookimpl
def logwright_decide_archive(archived: ArchivedRecords) -> DeadLetter | None:
    """Pulsar's dead-letter topic for a record reconsumed too often; other archives are not this plugin's."""
    if archived.reconsume_times <= 0:
        return None
    named = archived.settings.get(DEAD_LETTER_TOPIC_KEY, "")
    topic = named or f"{archived.real_topic or archived.topic}-{archived.subscription}-DLQ"
    return DeadLetter(topic, copy_record=True, headers=(("RECONSUMETIMES", str(archived.reconsume_times)),),
                      headers_once=ONCE_HEADERS, auto_create=not named,
                      existing_topic="" if named else f"{archived.subscription}-DLQ")  # Pulsar's legacy name
