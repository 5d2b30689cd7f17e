"""Waiting for a coordinator before raw requests: Kafka answers COORDINATOR_NOT_AVAILABLE until the partition of
``__consumer_offsets`` (or ``__transaction_state``) holding the key is loaded, logwright never does."""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.find_coordinator.v6.request import FindCoordinatorRequest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from logwright.client.connection import Connection
from logwright.compat.registry import make

from .test_share_fetch_limits import until

GROUP, TRANSACTION = 0, 1
"""FindCoordinator key types."""


async def coordinator_ready(connection: Connection, key: str, key_type: int = GROUP) -> None:
    find = FindCoordinatorRequest(key_type=key_type, coordinator_keys=(key,))
    await until(lambda: connection.request(find), lambda answer: answer.coordinators[0].error_code == 0)


COORDINATOR_NOT_READY = frozenset({14, 15, 16})
"""COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: a fresh Kafka answers them to the first
InitProducerId of a transactional id even after FindCoordinator found its coordinator; clients retry."""


async def init_producer_id(connection: Connection, transactional_id: str | None,
                           timeout: datetime.timedelta = datetime.timedelta(minutes=1), producer_id: int = -1,
                           producer_epoch: int = -1) -> Any:
    """InitProducerId's answer, asked again while the coordinator is not ready, as a client does."""
    request = make(InitProducerIdRequest, transactional_id=transactional_id, transaction_timeout=timeout,
                   producer_id=producer_id, producer_epoch=producer_epoch)
    return await until(lambda: connection.request(request),
                       lambda answer: int(answer.error_code) not in COORDINATOR_NOT_READY)
