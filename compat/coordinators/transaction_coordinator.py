"""The async side of the transaction coordinator (`core.transactions`): ending transactions and their timeout.

A transaction ends in one WriteBatch: a control batch (COMMIT or ABORT marker, Kafka's control-record
format, attributes isTransactional | isControl, base sequence -1) into every partition it touched,
the group offsets it carried (on commit) and `TransactionEnded`. A timer reads `broker.clock` every
`TICK_SECONDS` and aborts transactions open longer than their timeout; it is also run right after a
manual clock is advanced and once at start-up, so a transaction left open before a restart times out
on the restarted broker's clock.
"""

from __future__ import annotations

import asyncio
import logging
import struct

from logwright.compat.broker import Broker
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka.config_resources import failure
from logwright.compat.kafka.produce import stage_batch
from logwright.compat.wire.record_batch import Record, build_batch, parse_header
from logwright.core.errors import DomainError
from logwright.core.events.transactions import TransactionMarkerWritten
from logwright.core.log.partition_log import partition_key
from logwright.core.transactions.transactions import Completion, TransactionState, expire

log = logging.getLogger(__name__)

TICK_SECONDS = 1.0
_ATTRIBUTE = "_logwright_transaction_timer"
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")
ABORT_MARKER = 0
COMMIT_MARKER = 1


def marker_batch(producer_id: int, producer_epoch: int, committed: bool, timestamp: int) -> bytes:
    """A control batch holding one COMMIT or ABORT marker (coordinator epoch 0: one coordinator, ever)."""
    key = _CONTROL_KEY.pack(0, COMMIT_MARKER if committed else ABORT_MARKER)
    value = _CONTROL_VALUE.pack(0, 0)
    return build_batch([Record(0, timestamp, key, value)], producer_id=producer_id, producer_epoch=producer_epoch,
                       base_sequence=-1, is_transactional=True, is_control=True)


def stage_completion(broker: Broker, completion: Completion) -> None:
    """Stage the markers and events ending a transaction (one WriteBatch: no ``await`` in between)."""
    now = broker.clock.now_ms()
    for partition_id in completion.partition_ids:
        if broker.store.state("partitions", partition_key(partition_id)) is None:
            continue  # the topic was deleted while the transaction was open
        batch = marker_batch(completion.producer_id, completion.marker_epoch, completion.committed, now)
        offset = stage_batch(broker, partition_id, batch, parse_header(batch), -1)
        broker.stage([TransactionMarkerWritten(partition_id, offset, completion.producer_id,
                                               completion.marker_epoch, completion.committed)])
    broker.stage([*completion.offsets, completion.ended])


def wire_failure(error: DomainError, api_version: int, fenced_from_version: int) -> tuple[ErrorCode, str]:
    """The code and message of a refused transactional request; PRODUCER_FENCED (KIP-588) exists only from
    ``fenced_from_version`` of each API, older versions say INVALID_PRODUCER_EPOCH."""
    code, message = failure(error)
    if code == ErrorCode.PRODUCER_FENCED and api_version < fenced_from_version:
        code = ErrorCode.INVALID_PRODUCER_EPOCH
    return code, message


class TransactionTimer:
    """Aborts timed-out transactions; one per broker, reading the broker's clock."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._ticker: asyncio.Task[None] | None = None

    def tick(self) -> int:
        """Abort every transaction past its timeout now; returns how many (their effects are staged)."""
        now = self.broker.clock.now_ms()
        aborted = 0
        for state in list(self.broker.store.entities("transactions").values()):
            if not isinstance(state, TransactionState):
                continue
            completion = expire(state, now)
            if completion is not None:
                log.info("transaction of %r (producer id %d) timed out after %d ms: aborted, epoch bumped to %d",
                         state.transactional_id, state.producer_id, state.timeout_ms, completion.marker_epoch)
                stage_completion(self.broker, completion)
                aborted += 1
        return aborted

    def ensure_ticking(self) -> None:
        loop = asyncio.get_running_loop()
        if self._ticker is None or self._ticker.done() or self._ticker.get_loop() is not loop:
            self._ticker = loop.create_task(self._tick_forever(), name="logwright-transactions")

    async def _tick_forever(self) -> None:
        while True:
            try:
                if self.tick():
                    await self.broker.durable()
            except Exception:
                log.exception("the transaction timer failed; retrying")
            await asyncio.sleep(TICK_SECONDS)


def transaction_timer(broker: Broker) -> TransactionTimer:
    found = getattr(broker, _ATTRIBUTE, None)
    if not isinstance(found, TransactionTimer):
        found = TransactionTimer(broker)
        setattr(broker, _ATTRIBUTE, found)
    found.ensure_ticking()
    return found
