"""Dead-letter topics: KIP-1191's configs and headers for share groups, Pulsar's for logwright subscriptions.

A group with ``errors.deadletterqueue.topic.name`` set gets a copy of every record it archives (a
consumer's REJECT, or the delivery limit reached on release, lock expiry or a session timeout) on that
topic, written in the same WriteBatch as the archive: a user moving from Kafka 4.4 changes nothing, and
gets the copy exactly once where Kafka gives it at least once, after the archive. The target topic must
have ``errors.deadletterqueue.group.enable=true``, as in Kafka; with share.version finalized below 2 no copy is
written, as Kafka 4.4 writes none there (`ArchivedRecords.feature_levels`). Without
``errors.deadletterqueue.copy.record.enable`` the copy carries only the ``__dlq.errors.*`` headers. With the broker's
``errors.deadletterqueue.auto.create.topics.enable`` a missing target is created as Kafka creates it.

Pulsar's DeadLetterPolicy, for logwright subscriptions: ``logwright.dead.letter.max.redeliver.count`` is Pulsar's
``maxRedeliverCount`` (the application sees redelivery counts 0 to it; the release after that archives the record),
``logwright.dead.letter.max.deliveries`` the same limit counted in deliveries, as Kafka's
``share.delivery.count.limit`` counts (3 deliveries: counts 0, 1, 2); a group sets at most one of them (0: off). Every
record archived then is copied whole to
``logwright.dead.letter.topic`` (default ``<topic>-<subscription>-DLQ``, created on first use with the
source topic's partition count when the broker's ``auto.create.topics.enable`` is true; a named topic
must exist) with ``REAL_TOPIC``, ``ORIGIN_MESSAGE_ID`` and ``RECONSUMETIMES`` set once (a record that
already carries them keeps its own); ``logwright.dead.letter.initial.subscription`` is Pulsar's
``initialSubscriptionName`` (`DeadLetter.initial_subscription`). KIP-1191's topic wins when both are set.

Records whose copy cannot be written are kept, not archived, for ``logwright.dead.letter.deferred.retry.ms``
(default 30 s), then offered again; the broker reads that group config whichever plugin chose the topic.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from logwright.core.cursors.plugin_decisions import (
    DEAD_LETTER_DEFERRED_RETRY_KEY,
    DEFAULT_DEAD_LETTER_DEFERRED_RETRY_MS,
)
from logwright.core.log.features import SHARE_DEAD_LETTER_LEVEL, SHARE_GROUPS

from .api import (
    DEAD_LETTER_MAX_DELIVERIES_KEY,
    DEAD_LETTER_MAX_REDELIVER_COUNT_KEY,
    ArchivedRecords,
    ConfigKey,
    ConfigKeyRegister,
    DeadLetter,
    GroupConfigChange,
    InvalidConfig,
    Reject,
    ReleasedDelivery,
    any_value,
    boolean,
    hookimpl,
    long_at_least,
    long_between,
)

TOPIC_KEY = "errors.deadletterqueue.topic.name"
COPY_RECORD_KEY = "errors.deadletterqueue.copy.record.enable"
GROUP_ENABLE_KEY = "errors.deadletterqueue.group.enable"
PREFIX_KEY = "errors.deadletterqueue.topic.name.prefix"
AUTO_CREATE_KEY = "errors.deadletterqueue.auto.create.topics.enable"
KIP_1191_TOPIC_CONFIGS = ((GROUP_ENABLE_KEY, "true"), ("message.timestamp.type", "CreateTime"))
"""What Kafka 4.4 creates a missing dead-letter topic with when ``errors.deadletterqueue.auto.create.topics.enable``
is true: a CreateTopics of the broker's default partitions and replication and these configs (its
ShareGroupDLQStateManager)."""
MAX_DELIVERIES_KEY = DEAD_LETTER_MAX_DELIVERIES_KEY
MAX_REDELIVER_COUNT_KEY = DEAD_LETTER_MAX_REDELIVER_COUNT_KEY
PULSAR_TOPIC_KEY = "logwright.dead.letter.topic"
INITIAL_SUBSCRIPTION_KEY = "logwright.dead.letter.initial.subscription"
DEFERRED_RETRY_KEY = DEAD_LETTER_DEFERRED_RETRY_KEY
DEFERRED_RETRY_RANGE_MS = (100, 86_400_000)
"""At least 100 ms (not to spin on a broken topic: each retry archives again), at most a day."""

MAX_DELIVERIES_REASON = "dead letter max deliveries reached"

HEADERS = (
    ("__dlq.errors.topic", "{topic}"),
    ("__dlq.errors.partition", "{partition}"),
    ("__dlq.errors.offset", "{offset}"),
    ("__dlq.errors.group", "{group}"),
    ("__dlq.errors.delivery.count", "{delivery_count}"),
    ("__dlq.errors.message", "{reason}"),
)
"""KIP-1191's headers, values as UTF-8 text."""

PULSAR_HEADERS = (
    ("REAL_TOPIC", "{topic}"),
    ("ORIGIN_MESSAGE_ID", "{topic}-{partition}@{offset}"),
    ("RECONSUMETIMES", "{delivery_count}"),
)
"""Pulsar's properties, set only where the record does not carry them yet."""

_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def _topic_name(key: str, value: str) -> str | None:
    if value == "":
        return None
    if value.startswith("__"):
        return f"{key} must not name an internal topic (starting with '__'), got {value!r}"
    if not _TOPIC_NAME.fullmatch(value) or value in (".", ".."):
        return f"{key} must be a legal topic name (1-249 of a-z A-Z 0-9 . _ -), got {value!r}"
    return None


def dead_letter_topic(value: str) -> str | None:
    """Empty (no dead-letter topic) or a legal topic name not starting with ``__`` (internal topics)."""
    return _topic_name(TOPIC_KEY, value)


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
    register.add(ConfigKey(PREFIX_KEY, "broker", "dlq.", any_value,
                           "The prefix every share group's errors.deadletterqueue.topic.name must start with."))
    register.add(ConfigKey(AUTO_CREATE_KEY, "broker", "false", boolean,
                           "Whether a share group's errors.deadletterqueue.topic.name that does not exist is "
                           "created when a record is first archived (the broker's num.partitions, "
                           "errors.deadletterqueue.group.enable=true, message.timestamp.type=CreateTime), in the "
                           "WriteBatch of the copy; false: the copy waits until the topic exists.", "BOOLEAN"))
    register.add(ConfigKey(MAX_DELIVERIES_KEY, "group", "0", long_at_least(0),
                           "Pulsar's dead-letter limit for logwright subscriptions, in deliveries (as "
                           "share.delivery.count.limit counts them): after that many a released record is archived "
                           "and copied to logwright.dead.letter.topic; 0: no Pulsar dead-lettering.", "LONG"))
    register.add(ConfigKey(MAX_REDELIVER_COUNT_KEY, "group", "0", long_between(0, 2**31 - 2),
                           "Pulsar's maxRedeliverCount for logwright subscriptions: the application sees redelivery "
                           "counts 0 to this, and the release after that archives the record and copies it to "
                           "logwright.dead.letter.topic; 0: off. Set this or logwright.dead.letter.max.deliveries, "
                           "not both.", "LONG"))
    register.add(ConfigKey(PULSAR_TOPIC_KEY, "group", "", lambda value: _topic_name(PULSAR_TOPIC_KEY, value),
                           "Pulsar's deadLetterTopic (used with logwright.dead.letter.max.redeliver.count or "
                           "max.deliveries); empty: "
                           "<topic>-<subscription>-DLQ, created on first use if auto.create.topics.enable. "
                           "A named topic must exist."))
    register.add(ConfigKey(INITIAL_SUBSCRIPTION_KEY, "group", "", any_value,  # a group id is any non-empty string
                           "Pulsar's initialSubscriptionName: a subscription (share group) created on every "
                           "partition of the dead-letter topic at its end when a record is first copied there, in "
                           "the copy's WriteBatch, so it holds every copy; empty: none."))
    register.add(ConfigKey(DEFERRED_RETRY_KEY, "group", str(DEFAULT_DEAD_LETTER_DEFERRED_RETRY_MS),
                           long_between(*DEFERRED_RETRY_RANGE_MS),
                           "How long records whose dead-letter copy could not be written (topic missing, without "
                           "errors.deadletterqueue.group.enable=true, append refused) are kept, not archived, "
                           "before they are offered again; archiving them then retries the copy.", "LONG"))


@hookimpl
def logwright_check_group_config(change: GroupConfigChange) -> None:
    """KIP-1191's refusals that need more than the value: the broker's prefix, the group's own source topics,
    and a target topic that exists without ``errors.deadletterqueue.group.enable=true`` (a topic created
    later is checked when records are archived: no copy, logged). Pulsar's limit is set in deliveries or in
    redeliveries, not both."""
    if (MAX_DELIVERIES_KEY in change.changed or MAX_REDELIVER_COUNT_KEY in change.changed) and all(
            int(change.settings.get(key, "0") or 0) > 0 for key in (MAX_DELIVERIES_KEY, MAX_REDELIVER_COUNT_KEY)):
        raise InvalidConfig(f"{MAX_DELIVERIES_KEY} and {MAX_REDELIVER_COUNT_KEY} are one limit counted two ways: "
                            f"set one of them (the other to 0)")
    topic = change.settings.get(TOPIC_KEY, "")
    if TOPIC_KEY not in change.changed or not topic:
        return
    prefix = change.broker_config(PREFIX_KEY) or ""
    if not topic.startswith(prefix):
        raise InvalidConfig(f"{TOPIC_KEY} {topic!r} must start with {prefix!r} ({PREFIX_KEY})")
    if topic in change.subscribed_topics:
        raise InvalidConfig(f"{TOPIC_KEY} {topic!r} is a topic the share group {change.group_id!r} consumes")
    enabled = change.topic_config(topic, GROUP_ENABLE_KEY)
    if enabled is not None and enabled != "true":
        raise InvalidConfig(f"{TOPIC_KEY} {topic!r} names a topic without {GROUP_ENABLE_KEY}=true")


def deliveries_limit(settings: Mapping[str, str]) -> int:
    """The deliveries after which a release archives the record under Pulsar's policy; 0: no limit."""
    deliveries = int(settings.get(MAX_DELIVERIES_KEY, "0") or 0)
    redeliveries = int(settings.get(MAX_REDELIVER_COUNT_KEY, "0") or 0)
    return deliveries if deliveries > 0 else redeliveries + 1 if redeliveries > 0 else 0


@hookimpl
def logwright_decide_release(delivery: ReleasedDelivery) -> Reject | None:
    """Pulsar's limit: archive (and so dead-letter) once the record was delivered `deliveries_limit` times."""
    limit = deliveries_limit(delivery.settings)
    if limit > 0 and delivery.delivery_count >= limit:
        return Reject(MAX_DELIVERIES_REASON)
    return None


@hookimpl(trylast=True)
def logwright_decide_archive(archived: ArchivedRecords) -> DeadLetter | None:
    topic = archived.settings.get(TOPIC_KEY, "")
    share_version = archived.feature_levels.get(SHARE_GROUPS, SHARE_DEAD_LETTER_LEVEL)
    if topic and share_version >= SHARE_DEAD_LETTER_LEVEL:  # share.version 1: no copies, as on Kafka 4.4
        return DeadLetter(topic, archived.settings.get(COPY_RECORD_KEY, "false") == "true", HEADERS,
                          GROUP_ENABLE_KEY, auto_create=True, auto_create_enabled_by=AUTO_CREATE_KEY,
                          auto_create_partitions=-1, auto_create_configs=KIP_1191_TOPIC_CONFIGS)
    if deliveries_limit(archived.settings) > 0:
        named = archived.settings.get(PULSAR_TOPIC_KEY, "")
        pulsar_topic = named or f"{archived.topic}-{archived.subscription}-DLQ"
        return DeadLetter(pulsar_topic, copy_record=True, headers_once=PULSAR_HEADERS, auto_create=not named,
                          initial_subscription=archived.settings.get(INITIAL_SUBSCRIPTION_KEY, ""),
                          existing_topic="" if named else legacy_dead_letter_topic(archived.subscription))
    return None


def legacy_dead_letter_topic(subscription: str) -> str:
    """Pulsar's dead-letter name before its topic-qualified one, ``<namespace>/<subscription>-DLQ``: its client still
    writes there when that topic exists (a subscription's DLQ kept across the upgrade). Topics have no namespace
    here, so it is ``<subscription>-DLQ``."""
    return f"{subscription}-DLQ"
