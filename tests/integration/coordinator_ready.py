"""Waiting for a coordinator before raw requests: Kafka answers COORDINATOR_NOT_AVAILABLE until the partition of
``__consumer_offsets`` (or ``__transaction_state``) holding the key is loaded, logwright never does."""

from __future__ import annotations

from kio.schema.find_coordinator.v6.request import FindCoordinatorRequest
from logwright.client.connection import Connection

from .test_share_fetch_limits import until

GROUP, TRANSACTION = 0, 1
"""FindCoordinator key types."""


async def coordinator_ready(connection: Connection, key: str, key_type: int = GROUP) -> None:
    find = FindCoordinatorRequest(key_type=key_type, coordinator_keys=(key,))
    await until(lambda: connection.request(find), lambda answer: answer.coordinators[0].error_code == 0)
