"""FindCoordinator (key 10), versions 0-6: this broker coordinates every group and transaction.

v0 asks for a group by key; v1-v3 add ``key_type`` (0 group, 1 transaction); v4+ batch the keys in
``coordinator_keys`` and answer one entry per key; v6 adds key type 2 (share groups). A group lookup
also loads the persisted groups, so their session timers run from then on, and creates the internal
``__consumer_offsets`` topic if it is missing, as Kafka does (see `core.internal_topics`).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.coordinators.group_coordinator import coordinator
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.core.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType

if TYPE_CHECKING:
    from kio.schema.find_coordinator import v0, v1, v2, v3, v4, v5, v6
    from typing_extensions import TypeIs

    FindCoordinatorRequest: TypeAlias = (
        v0.FindCoordinatorRequest | v1.FindCoordinatorRequest | v2.FindCoordinatorRequest | v3.FindCoordinatorRequest
        | v4.FindCoordinatorRequest | v5.FindCoordinatorRequest | v6.FindCoordinatorRequest
    )
    """Every version served: mypy checks each field read against all of them."""

KNOWN_KEY_TYPES = (0, 1, 2)


@handler(10, "FindCoordinator", 0, 6, at_once=True)
async def handle(context: RequestContext, request: FindCoordinatorRequest) -> Any:
    broker = context.broker
    module = response_module("find_coordinator", context.api_version)
    key_type = int(request.key_type) if _names_key_type(request) else 0
    keys = request.coordinator_keys if _batched(request) else (request.key,)
    refusals = [_refusal(context, key_type, key) for key in keys]
    if key_type == 0 and any(refusal is None for refusal in refusals):
        coordinator(broker)
        if broker.ensure_consumer_offsets_topic():
            await broker.durable()
    code, message = ErrorCode.NONE, "" if _batched(request) else "NONE"  # Kafka 4.4's, in either shape
    node_id, (host, port) = broker.node_id, context.advertised
    if key_type not in KNOWN_KEY_TYPES:
        code, message = ErrorCode.INVALID_REQUEST, f"unknown key type {key_type}"
        node_id, host, port = -1, "", -1
    answers = [(code, message, node_id, host, port) if refusal is None
               else (refusal[0], "" if _batched(request) else refusal[1], -1, "", -1)  # Kafka 4.4's words, or none
               for refusal in refusals]
    if not _batched(request):
        code, message, node_id, host, port = answers[0]
        return make(module.FindCoordinatorResponse, throttle_time=datetime.timedelta(0), error_code=code,
                    error_message=message, node_id=node_id, host=host, port=port, coordinators=())
    coordinators = tuple(
        make(module.Coordinator, key=key, node_id=node_id, host=host, port=port, error_code=code, error_message=message)
        for key, (code, message, node_id, host, port) in zip(keys, answers, strict=True)
    )
    return make(module.FindCoordinatorResponse, throttle_time=datetime.timedelta(0), coordinators=coordinators)


_REFUSALS = {
    0: (AclOperation.DESCRIBE, ResourceType.GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed."),
    1: (AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        "Transactional Id authorization failed."),
    2: (AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        "Cluster authorization failed."),
}
"""What each key type needs (a share key, ``group:topic:partition``, is the brokers' own: the cluster's)."""


def _refusal(context: RequestContext, key_type: int, key: str) -> tuple[ErrorCode, str] | None:
    """Why the principal may not find this key's coordinator, as Kafka words it; ``None``: it may."""
    needs = _REFUSALS.get(key_type)
    if needs is None or context.broker.authorizer is None:
        return None
    operation, resource_type, code, message = needs
    name = CLUSTER_NAME if resource_type == ResourceType.CLUSTER else key
    return None if allowed(context, operation, resource_type, name) else (code, message)


def _names_key_type(request: FindCoordinatorRequest) -> TypeIs[
    v1.FindCoordinatorRequest | v2.FindCoordinatorRequest | v3.FindCoordinatorRequest | v4.FindCoordinatorRequest
    | v5.FindCoordinatorRequest | v6.FindCoordinatorRequest
]:
    """v1+ name the key type (group 0, transaction 1, share 2); v0 keys are groups."""
    return has_field(request, "key_type")


def _batched(request: FindCoordinatorRequest) -> TypeIs[
    v4.FindCoordinatorRequest | v5.FindCoordinatorRequest | v6.FindCoordinatorRequest
]:
    """v4+ ask for several keys at once."""
    return has_field(request, "coordinator_keys")
