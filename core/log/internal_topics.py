"""Kafka's internal topics as logwright presents them: ``__consumer_offsets``.

Kafka keeps committed offsets as records of ``__consumer_offsets`` and reports the topic in Metadata
with ``is_internal=true``; clients rely on that flag (a regex subscription skips internal topics, an
admin client hides them). logwright keeps offsets as events (`OffsetCommitted`), so its
``__consumer_offsets`` is a real topic with Kafka's partition count and configs whose partitions stay
empty: it exists for what clients see, and refuses appends (Produce, DeleteRecords) with
INVALID_TOPIC_EXCEPTION, as Kafka does. Like Kafka, the broker creates it when a group coordinator is
first looked up, or when Metadata asks for it with auto-creation allowed; it may be deleted.
"""

from __future__ import annotations

from logwright.core.errors import InvalidTopicName
from logwright.core.events import ConfigEntries

CONSUMER_OFFSETS = "__consumer_offsets"
INTERNAL_TOPICS = frozenset({CONSUMER_OFFSETS})
CONSUMER_OFFSETS_CONFIGS: ConfigEntries = (
    ("cleanup.policy", "compact"), ("compression.type", "producer"), ("segment.bytes", "104857600"),
)
"""The topic configs Kafka 4.x sets when it creates ``__consumer_offsets`` (DescribeConfigs shows them)."""


def is_internal_topic(name: str | None) -> bool:
    """Kafka's ``Topic.isInternal`` for the internal topics logwright presents."""
    return name in INTERNAL_TOPICS


def refuse_append(name: str) -> None:
    """Raise `InvalidTopicName` (INVALID_TOPIC_EXCEPTION) for records written to an internal topic."""
    if is_internal_topic(name):
        raise InvalidTopicName(f"cannot append to internal topic {name!r}: logwright keeps committed offsets "
                               "as events (OffsetCommit/OffsetFetch), not as records of this topic")
