"""Receipt handles: what a pop hands out with each record, and what ack, nack and change-invisible-time take.

A handle names the group, the topic by its id (a deleted and recreated topic of the same name has another id,
so an old handle can never settle a new record), the partition, the offset and the handle epoch. Every
checkpoint, change of invisible time and nack gives the record a new epoch, so a superseded handle is
recognised and refused as stale, never silently taken as success (RocketMQ #9583, #4953).

Text form (version 1): ``"1 <epoch> <partition> <offset> <topic id hex> <group>"``; the group comes last and
may hold spaces.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import lru_cache

from logwright.core.errors import InvalidRecordState, InvalidRequest, quoted

VERSION = "1"
MAX_HANDLE_LENGTH = 512
"""Longest handle text accepted (a group id is bounded by the request anyway); longer is not ours."""


class InvalidReceiptHandle(InvalidRequest):
    """The text is not a receipt handle this broker wrote."""

    KIND = "invalid"


class ForeignReceiptHandle(InvalidRequest):
    """The handle belongs to another group than the request names."""

    KIND = "foreign"


class UnknownReceiptHandle(InvalidRecordState):
    """No such pop is in flight: already acknowledged, dead-lettered, or never popped (or the topic is gone)."""

    KIND = "unknown"


class StaleReceiptHandle(InvalidRecordState):
    """The record is in flight under a newer handle (changed invisible time, a nack, or revived and popped again)."""

    KIND = "stale"


HANDLE_ERRORS = (InvalidReceiptHandle, ForeignReceiptHandle, UnknownReceiptHandle, StaleReceiptHandle)
"""Every refusal of a handle; each class's ``KIND`` is what the wire answer's ``handle_error`` says."""


@dataclass(frozen=True, slots=True)
class ReceiptHandle:
    group: str
    topic_id: uuid.UUID
    partition: int
    offset: int
    epoch: int

    def text(self) -> str:
        return f"{VERSION} {self.epoch} {self.partition} {self.offset} {self.topic_id.hex} {self.group}"

    @classmethod
    def parse(cls, text: object) -> ReceiptHandle:
        """The handle ``text`` names; `InvalidReceiptHandle` for anything this broker did not write."""
        if not isinstance(text, str) or not 0 < len(text) <= MAX_HANDLE_LENGTH:
            raise InvalidReceiptHandle(f"a receipt handle is a string of 1 to {MAX_HANDLE_LENGTH} characters, "
                                       f"got {_shown(text)}")
        fields = text.split(" ", 5)
        if len(fields) != 6 or fields[0] != VERSION or not all(f.isdigit() for f in fields[1:4]) or not fields[5]:
            raise InvalidReceiptHandle(f"{_shown(text)} is not a receipt handle of this broker")
        topic_id = _topic_id(fields[4])
        if topic_id is None:
            raise InvalidReceiptHandle(f"{_shown(text)} is not a receipt handle of this broker")
        return cls(fields[5], topic_id, int(fields[2]), int(fields[3]), int(fields[1]))

    def owned_by(self, group: str) -> ReceiptHandle:
        """This handle, if it is ``group``'s; `ForeignReceiptHandle` otherwise."""
        if self.group != group:
            raise ForeignReceiptHandle(f"receipt handle of group {quoted(self.group)} used by group "
                                       f"{quoted(group)}: a group "
                                       "settles only what it popped")
        return self


@lru_cache(maxsize=1024)
def _topic_id(text: str) -> uuid.UUID | None:
    """The topic id a handle names (cached: a consumer's handles name few topics); ``None`` if not one."""
    try:
        return uuid.UUID(hex=text)
    except ValueError:
        return None


def _shown(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."
