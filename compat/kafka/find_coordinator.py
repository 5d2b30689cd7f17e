"""FindCoordinator (key 10), versions 0-6: this broker coordinates every group and transaction.

v0 asks for a group by key; v1-v3 add ``key_type`` (0 group, 1 transaction); v4+ batch the keys in
``coordinator_keys`` and answer one entry per key; v6 adds key type 2 (share groups). A group lookup
also loads the persisted groups, so their session timers run from then on, and creates the internal
``__consumer_offsets`` topic if it is missing, as Kafka does (see `core.internal_topics`).
"""

from __future__ import annotations

import datetime
from typing import Any

from logwright.compat.coordinators.group_coordinator import coordinator
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module

KNOWN_KEY_TYPES = (0, 1, 2)


@handler(10, "FindCoordinator", 0, 6)
async def handle(context: RequestContext, request: Any) -> Any:
    broker = context.broker
    module = response_module("find_coordinator", context.api_version)
    key_type = int(getattr(request, "key_type", 0))
    if key_type == 0:
        coordinator(broker)
        if broker.ensure_consumer_offsets_topic():
            await broker.durable()
    settings = broker.settings
    code, message = ErrorCode.NONE, None
    node_id, host, port = broker.node_id, settings.public_host, settings.public_port
    if key_type not in KNOWN_KEY_TYPES:
        code, message = ErrorCode.INVALID_REQUEST, f"unknown key type {key_type}"
        node_id, host, port = -1, "", -1
    coordinators = tuple(
        make(module.Coordinator, key=key, node_id=node_id, host=host, port=port, error_code=code, error_message=message)
        for key in getattr(request, "coordinator_keys", ())
    )
    return make(module.FindCoordinatorResponse, throttle_time=datetime.timedelta(0), error_code=code,
                error_message=message, node_id=node_id, host=host, port=port, coordinators=coordinators)
