"""What ConsumerGroupHeartbeat (KIP-848) and ShareGroupHeartbeat (KIP-932) answers share: the same fields, and
the group's heartbeat interval read when the answer is built, so a join that just created the group gets
that group's interval (0 when the request named no group).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any, Protocol

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import make

HeartbeatAnswer = Callable[[ErrorCode, str | None, str | None, int, Any], Any]
"""``answer(code, message, member_id, member_epoch, assignment)``: the response entity to send."""


class HeartbeatIntervals(Protocol):
    def heartbeat_interval_ms(self, group_id: str) -> int: ...


def heartbeat_answer(response_type: type[Any], coordinator: HeartbeatIntervals, group_id: str) -> HeartbeatAnswer:
    """Builds ``response_type`` answers for a heartbeat to ``group_id``, whatever its outcome."""

    def answer(code: ErrorCode, message: str | None, member_id: str | None, epoch: int, assignment: Any) -> Any:
        interval = coordinator.heartbeat_interval_ms(group_id) if group_id else 0
        return make(response_type, throttle_time=datetime.timedelta(0), error_code=code, error_message=message,
                    member_id=member_id, member_epoch=epoch,
                    heartbeat_interval=datetime.timedelta(milliseconds=interval), assignment=assignment)

    return answer
