"""A classic group with a member, for scenarios about group ids: a confluent-kafka consumer that has joined."""

from __future__ import annotations

from confluent_kafka import Consumer


def classic_member(bootstrap: str, group: str, topic: str) -> Consumer:
    """A consumer that joined ``group`` subscribed to ``topic`` (its first poll waits for the join); close it."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3})
    consumer.subscribe([topic])
    consumer.poll(5.0)
    return consumer
