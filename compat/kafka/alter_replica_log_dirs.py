"""AlterReplicaLogDirs (key 34), versions 1-2: replicas can only stay in the one log dir.

DescribeLogDirs reports the data directory as the only log dir; moving a replica there is a no-op that
succeeds, as in Kafka. Any other path is LOG_DIR_NOT_FOUND; an unknown partition is
UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

import datetime
import os
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.errors import ErrorCode
from logwright.compat.kafka.describe_log_dirs import log_dir
from logwright.compat.registry import RequestContext, handler, make, response_module

if TYPE_CHECKING:
    from kio.schema.alter_replica_log_dirs import v1, v2

    AlterReplicaLogDirsRequest: TypeAlias = v1.AlterReplicaLogDirsRequest | v2.AlterReplicaLogDirsRequest
    """Every version served: mypy checks each field read against all of them."""


@handler(34, "AlterReplicaLogDirs", 1, 2)
async def handle(context: RequestContext, request: AlterReplicaLogDirsRequest) -> Any:
    broker = context.broker
    module = response_module("alter_replica_log_dirs", context.api_version)
    here = log_dir(broker)
    results = []
    for directory in request.dirs:
        known_dir = os.path.abspath(directory.path) == here
        for topic in directory.topics:
            state = broker.topic(topic.name)
            partitions = []
            for index in topic.partitions:
                if state is None or not 0 <= int(index) < len(state.partition_ids):
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    code = ErrorCode.NONE if known_dir else ErrorCode.LOG_DIR_NOT_FOUND
                partitions.append(make(module.AlterReplicaLogDirPartitionResult, partition_index=index,
                                       error_code=code))
            results.append(make(module.AlterReplicaLogDirTopicResult, topic_name=topic.name,
                                partitions=tuple(partitions)))
    return make(module.AlterReplicaLogDirsResponse, throttle_time=datetime.timedelta(0), results=tuple(results))
