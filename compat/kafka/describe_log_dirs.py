"""DescribeLogDirs (key 35), versions 1-4: the data directory is this broker's one log dir.

Every partition lives in the one RocksDB database under ``--data-dir``, so there is a single log dir,
its absolute path, holding every partition; a partition's size is the bytes of its stored batches, its
offset lag 0 and it is never a future replica. v4 adds the file system's total and usable bytes. A null
topic list describes every partition; named partitions that do not exist are left out, as Kafka does, and the
named ones are a set, as Kafka takes them (one named again is answered once). The request gives way every
`turns.ANSWERS_PER_TURN` partitions: every partition of 100,000 in one stretch held every client 160 ms.
"""

from __future__ import annotations

import datetime
import os
import shutil
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.broker import Broker
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.turns import Slices
from logwright.core.log.catalog import TopicState

if TYPE_CHECKING:
    from kio.schema.describe_log_dirs import v1, v2, v3, v4, v5

    DescribeLogDirsRequest: TypeAlias = (
        v1.DescribeLogDirsRequest | v2.DescribeLogDirsRequest | v3.DescribeLogDirsRequest | v4.DescribeLogDirsRequest
        | v5.DescribeLogDirsRequest
    )
    """Every version served: mypy checks each field read against all of them."""


def log_dir(broker: Broker) -> str:
    """The one log dir: the data directory's absolute path, what AlterReplicaLogDirs must name too."""
    return os.path.abspath(broker.store.path)


@handler(35, "DescribeLogDirs", 1, 5)
async def handle(context: RequestContext, request: DescribeLogDirsRequest) -> Any:
    broker = context.broker
    module = response_module("describe_log_dirs", context.api_version)
    wanted: dict[str, tuple[TopicState, Iterable[int]]] = {}
    if request.topics is None:
        wanted = {state.name: (state, range(len(state.partition_ids))) for state in broker.topics()}
    else:  # a set of partitions, as Kafka takes them: a topic or a partition named again is answered once
        for entry in request.topics:
            state = broker.topic(entry.topic)
            if state is not None:
                named = wanted.setdefault(state.name, (state, {}))[1]
                assert isinstance(named, dict)
                named.update(dict.fromkeys(int(index) for index in entry.partitions))
    slices = Slices()
    topics = []
    for state, indexes in wanted.values():
        current = broker.topic(state.name)
        if current is None or current.topic_id != state.topic_id:
            continue  # deleted (or created again) while the request gave way
        partitions = []
        for index in indexes:
            if 0 <= index < len(state.partition_ids):
                partitions.append(make(module.DescribeLogDirsPartition, partition_index=index, offset_lag=0,
                                       is_future_key=False,
                                       partition_size=broker.partition(state.partition_ids[index]).byte_size))
            await slices.done()
        if partitions:
            topics.append(make(module.DescribeLogDirsTopic, name=state.name, partitions=tuple(partitions)))
    path = log_dir(broker)
    usage = shutil.disk_usage(path)
    result = make(module.DescribeLogDirsResult, error_code=ErrorCode.NONE, log_dir=path, topics=tuple(topics),
                  total_bytes=usage.total, usable_bytes=usage.free)
    return make(module.DescribeLogDirsResponse, throttle_time=datetime.timedelta(0), error_code=ErrorCode.NONE,
                results=(result,))
