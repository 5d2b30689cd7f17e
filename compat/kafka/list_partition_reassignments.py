"""ListPartitionReassignments (key 46), version 0: none is ever in progress on one broker.

AlterPartitionReassignments can only confirm the placement a partition already has, so there is
never an ongoing reassignment to list, for all partitions (null topics) or for the named ones.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module

if TYPE_CHECKING:
    from kio.schema.list_partition_reassignments import v0

    ListPartitionReassignmentsRequest: TypeAlias = v0.ListPartitionReassignmentsRequest
    """Every version served: mypy checks each field read against all of them."""


@handler(46, "ListPartitionReassignments", 0, 0)
async def handle(context: RequestContext, request: ListPartitionReassignmentsRequest) -> Any:
    module = response_module("list_partition_reassignments", context.api_version)
    return make(module.ListPartitionReassignmentsResponse, throttle_time=datetime.timedelta(0),
                error_code=ErrorCode.NONE, error_message=None, topics=())
