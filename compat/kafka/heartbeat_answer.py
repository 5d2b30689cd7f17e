"""What ConsumerGroupHeartbeat (KIP-848) and ShareGroupHeartbeat (KIP-932) answers share: the same fields, and
the group's heartbeat interval read when the answer is built, so a join that just created the group gets
that group's interval (0 when the request named no group, and in the answer to a leave, which has no next
heartbeat). A refusal carries its error alone, as Kafka 4.4's does: no member id, epoch 0, interval 0 (`refusal`).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any, Protocol

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import make

HeartbeatAnswer = Callable[[ErrorCode, str | None, str | None, int, Any], Any]
"""``answer(code, message, member_id, member_epoch, assignment)``: the response entity to send."""

REFUSED_EPOCH = 0
"""The member epoch of a refusal: Kafka leaves the field at its default (0) and names no member."""


class HeartbeatIntervals(Protocol):
    def heartbeat_interval_ms(self, group_id: str) -> int: ...


def heartbeat_answer(response_type: type[Any], coordinator: HeartbeatIntervals, group_id: str) -> HeartbeatAnswer:
    """Builds ``response_type`` answers for a heartbeat to ``group_id``, whatever its outcome."""

    def answer(code: ErrorCode, message: str | None, member_id: str | None, epoch: int, assignment: Any) -> Any:
        member = code == ErrorCode.NONE and epoch >= 0  # not a refusal, not a leave
        interval = coordinator.heartbeat_interval_ms(group_id) if group_id and member else 0
        return make(response_type, throttle_time=datetime.timedelta(0), error_code=code, error_message=message,
                    member_id=member_id, member_epoch=epoch,
                    heartbeat_interval=datetime.timedelta(milliseconds=interval), assignment=assignment)

    return answer


def refusal(answer: HeartbeatAnswer, code: ErrorCode, message: str) -> Any:
    """A refused heartbeat's answer: the error and its message, nothing else (the client keeps its own member id)."""
    return answer(code, message, None, REFUSED_EPOCH, None)
