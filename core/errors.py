"""Domain errors: what a command may be refused for, with a message a user can act on.

The wire layer maps each class to a Kafka error code (`compat/errors.py`); the core never knows codes.
"""

from __future__ import annotations


class DomainError(Exception):
    """A command was refused; nothing was changed."""


class UnknownTopic(DomainError):
    pass


class TopicAlreadyExists(DomainError):
    pass


class InvalidTopicName(DomainError):
    pass


class InvalidPartitions(DomainError):
    pass


class UnknownPartition(DomainError):
    pass


class InvalidConfig(DomainError):
    pass


class OffsetOutOfRange(DomainError):
    pass


class UnknownGroup(DomainError):
    pass


class CorruptState(DomainError):
    """Stored bytes could not be decoded; the message names where they are."""


class OutOfOrderSequence(DomainError):
    pass


class InvalidProducerEpoch(DomainError):
    pass
