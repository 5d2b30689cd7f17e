"""DescribeQuorum (key 55), versions 0-2: one node is the whole metadata quorum, its event log the metadata log.

A KRaft cluster keeps its metadata in ``__cluster_metadata`` partition 0, replicated by the controller quorum,
and admin tools ask this API who leads it and how far each voter has read. logwright is one node whose
source of truth is the event log, so the answer is that node: leader and only voter at epoch 1 (there is
never an election), the durable event count as high watermark and log end offset, no observers. v1 adds
the voters' fetch times (-1 for a leader) and caught-up time (now for a leader); v2 a directory id (none:
the zero uuid) and the voters' listeners, here the one listener clients use. Any other topic or partition
is answered UNKNOWN_TOPIC_OR_PARTITION, as a KRaft node answers a partition it has no raft log for.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.turns import Slices
from logwright.compat.wire.encoder import OnceAnswered

if TYPE_CHECKING:
    from kio.schema.describe_quorum import v0, v1, v2

    DescribeQuorumRequest: TypeAlias = v0.DescribeQuorumRequest | v1.DescribeQuorumRequest | v2.DescribeQuorumRequest
    """Every version served: mypy checks each field read against all of them."""

METADATA_TOPIC = "__cluster_metadata"
LEADER_EPOCH = 1
LISTENER = "PLAINTEXT"


@handler(55, "DescribeQuorum", 0, 2)
async def handle(context: RequestContext, request: DescribeQuorumRequest) -> Any:
    broker = context.broker
    module = response_module("describe_quorum", context.api_version)
    end_offset = broker.store.committed_sequence
    voter = make(module.ReplicaState, replica_id=broker.node_id, replica_directory_id=uuid.UUID(int=0),
                 log_end_offset=end_offset, last_fetch_timestamp=-1, last_caught_up_timestamp=broker.clock.now_ms())

    def partition(wanted: tuple[str, int]) -> Any:
        name, index = wanted
        if name == METADATA_TOPIC and index == 0:
            return make(module.PartitionData, partition_index=0, error_code=ErrorCode.NONE, error_message=None,
                        leader_id=broker.node_id, leader_epoch=LEADER_EPOCH, high_watermark=end_offset,
                        current_voters=(voter,), observers=())
        return make(module.PartitionData, partition_index=index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    error_message=f"only {METADATA_TOPIC} partition 0 has a quorum", leader_id=-1, leader_epoch=-1,
                    high_watermark=-1, current_voters=(), observers=())

    answer, slices = OnceAnswered(partition), Slices()  # a partition named again: the first answer's bytes
    topics = []
    for topic in request.topics:
        partitions = []
        for wanted in topic.partitions:
            partitions.append(answer((topic.topic_name, int(wanted.partition_index))))
            await slices.done()
        topics.append(make(module.TopicData, topic_name=topic.topic_name, partitions=tuple(partitions)))
    nodes: tuple[Any, ...] = ()
    if context.api_version >= 2:
        settings = broker.settings
        nodes = (make(module.Node, node_id=broker.node_id, listeners=(
            make(module.Listener, name=LISTENER, host=settings.public_host, port=settings.public_port),)),)
    return make(module.DescribeQuorumResponse, error_code=ErrorCode.NONE, error_message=None, topics=tuple(topics),
                nodes=nodes)
