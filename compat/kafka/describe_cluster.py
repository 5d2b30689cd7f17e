"""DescribeCluster (key 60), versions 0-2: one broker, which is also the controller.

The cluster id is the broker's ``cluster_id`` setting. v1 asks for broker (1) or controller (2)
endpoints: this node is both, so both get the same answer (Kafka's broker listener refuses controller requests
with MISMATCHED_ENDPOINT_TYPE; logwright's one listener serves both); other types are UNSUPPORTED_ENDPOINT_TYPE,
answered as the broker listener's type (1), as Kafka does.
v2 may include fenced brokers; this one never is. ``include_cluster_authorized_operations`` reports every cluster
operation (`authorized_operations`).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat import authorized_operations
from logwright.compat.authorization import operations as permitted
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.core.acls.bindings import CLUSTER_NAME, ResourceType

if TYPE_CHECKING:
    from kio.schema.describe_cluster import v0, v1, v2
    from typing_extensions import TypeIs

    DescribeClusterRequest: TypeAlias = (
        v0.DescribeClusterRequest | v1.DescribeClusterRequest | v2.DescribeClusterRequest
    )
    """Every version served: mypy checks each field read against all of them."""

ENDPOINT_TYPES = (1, 2)


@handler(60, "DescribeCluster", 0, 2)
async def handle(context: RequestContext, request: DescribeClusterRequest) -> Any:
    broker = context.broker
    module = response_module("describe_cluster", context.api_version)
    endpoint_type = int(request.endpoint_type) if _names_endpoint_type(request) else 1
    settings = broker.settings
    if endpoint_type not in ENDPOINT_TYPES:
        return make(module.DescribeClusterResponse, throttle_time=datetime.timedelta(0),
                    error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
                    error_message=f"Unsupported endpoint type {endpoint_type}",
                    endpoint_type=1, cluster_id=settings.cluster_id, controller_id=-1, brokers=())  # the listener's
    operations = authorized_operations.reported(request.include_cluster_authorized_operations, permitted(
        context, ResourceType.CLUSTER, CLUSTER_NAME, authorized_operations.CLUSTER))
    return make(
        module.DescribeClusterResponse, throttle_time=datetime.timedelta(0), error_code=ErrorCode.NONE,
        error_message=None, endpoint_type=endpoint_type, cluster_id=settings.cluster_id,
        controller_id=broker.node_id,
        brokers=(make(module.DescribeClusterBroker, broker_id=broker.node_id, host=context.advertised[0],
                      port=context.advertised[1], rack=None, is_fenced=False),),
        cluster_authorized_operations=operations,
    )


def _names_endpoint_type(request: DescribeClusterRequest) -> TypeIs[
    v1.DescribeClusterRequest | v2.DescribeClusterRequest
]:
    """v1+ ask for brokers (1) or controllers (2); v0 always for brokers."""
    return has_field(request, "endpoint_type")
