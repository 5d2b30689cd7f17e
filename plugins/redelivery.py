"""The default fate of records that come back unacknowledged: redeliver, or archive at the limit.

It decides last (``trylast``), so a retry or dead-letter plugin overrides it by returning a decision.
Records that reached ``share.delivery.count.limit`` deliveries are rejected (KIP-932 archives them);
the others are available again after the delay the consumer asked for, or at once.
"""

from __future__ import annotations

from .api import (
    DEFAULT_DELIVERY_LIMIT,
    DELIVERY_LIMIT_KEY,
    Redeliver,
    Reject,
    ReleasedDelivery,
    ReleaseDecision,
    hookimpl,
)

LIMIT_REASON = "delivery count limit reached"


@hookimpl(trylast=True)
def logwright_decide_release(delivery: ReleasedDelivery) -> ReleaseDecision:
    limit = int(delivery.settings.get(DELIVERY_LIMIT_KEY, DEFAULT_DELIVERY_LIMIT))
    if delivery.delivery_count >= limit:
        return Reject(LIMIT_REASON)
    return Redeliver(max(0, delivery.requested_delay_ms or 0))
