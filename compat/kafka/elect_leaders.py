"""ElectLeaders (key 43), versions 0-2: on one broker no election is ever needed.

Every partition has a single replica, on this node, which is both its preferred leader and its leader,
so each named partition gets ELECTION_NOT_NEEDED (what Kafka answers for a partition already led by
its preferred replica) for both election types, preferred (0) and unclean (1, v1+). A request naming
no partitions (null) asks for every partition that needs an election: none. Unknown partitions get
UNKNOWN_TOPIC_OR_PARTITION. An election type that does not exist is INVALID_REQUEST, for the request and each
partition; a timeout of zero or less is REQUEST_TIMED_OUT, as Kafka's controller answers it (`controller_deadline`).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.controller_deadline import expired
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.compat.turns import Slices
from logwright.compat.wire.encoder import OnceAnswered
from logwright.core.errors import quoted

if TYPE_CHECKING:
    from kio.schema.elect_leaders import v0, v1, v2
    from typing_extensions import TypeIs

    ElectLeadersRequest: TypeAlias = v0.ElectLeadersRequest | v1.ElectLeadersRequest | v2.ElectLeadersRequest
    """Every version served: mypy checks each field read against all of them."""

ELECTION_TYPES = {0: "preferred", 1: "unclean"}


@handler(43, "ElectLeaders", 0, 2)
async def handle(context: RequestContext, request: ElectLeadersRequest) -> Any:
    broker = context.broker
    module = response_module("elect_leaders", context.api_version)
    election_type = int(request.election_type) if _names_election_type(request) else 0
    fixed: tuple[ErrorCode, str | None] | None
    if expired(request.timeout):
        top, fixed = ErrorCode.REQUEST_TIMED_OUT, (ErrorCode.REQUEST_TIMED_OUT, None)
    elif election_type not in ELECTION_TYPES:
        top, fixed = ErrorCode.INVALID_REQUEST, (ErrorCode.INVALID_REQUEST, f"Unknown election type {election_type}")
    else:
        top, fixed = ErrorCode.NONE, None

    def result(wanted: tuple[str, int]) -> Any:
        topic, index = wanted
        state = broker.topic(topic)
        if fixed is not None:
            code, message = fixed
        elif state is None or not 0 <= index < len(state.partition_ids):
            code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {quoted(topic)} has no partition {index}"
        else:
            code, message = ErrorCode.ELECTION_NOT_NEEDED, \
                f"partition {index} has one replica, node {broker.node_id}, which already leads it"
        return make(module.PartitionResult, partition_id=index, error_code=code, error_message=message)

    answer, slices = OnceAnswered(result), Slices()  # a partition named again: the first answer's bytes
    results = []
    for entry in request.topic_partitions or ():
        partitions = []
        for index in entry.partitions:
            partitions.append(answer((entry.topic, int(index))))
            await slices.done()
        results.append(make(module.ReplicaElectionResult, topic=entry.topic, partition_result=tuple(partitions)))
    return make(module.ElectLeadersResponse, throttle_time=datetime.timedelta(0), error_code=top,
                replica_election_results=tuple(results))


def _names_election_type(request: ElectLeadersRequest) -> TypeIs[v1.ElectLeadersRequest | v2.ElectLeadersRequest]:
    """v1+ name the election type; v0 elections are preferred (0)."""
    return has_field(request, "election_type")
