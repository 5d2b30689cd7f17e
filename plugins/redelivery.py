"""The default fate of records that come back unacknowledged: redeliver after the group's backoff, or archive.

It decides last (``trylast``), so a retry or dead-letter plugin overrides it by returning a decision.
Records that reached ``share.delivery.count.limit`` deliveries are rejected (KIP-932 archives them).
The others are available again after the delay the consumer asked for (a negative ack with a delay
above 0 wins: the consumer knows why it failed), else after the group's backoff policy
(``logwright.redelivery.backoff.*``: none, fixed, multiplier or RocketMQ's levels) for the persisted
delivery count, so RELEASE, lock expiry and a session timeout back off too and the backoff keeps growing
across restarts. The default policy ``none`` is Kafka's: at once.
"""

from __future__ import annotations

from logwright.core.cursors import redelivery_backoff as backoff

from .api import (
    DEFAULT_DELIVERY_LIMIT,
    DELIVERY_LIMIT_KEY,
    ConfigKey,
    ConfigKeyRegister,
    GroupConfigChange,
    InvalidConfig,
    Redeliver,
    Reject,
    ReleasedDelivery,
    ReleaseDecision,
    hookimpl,
)

LIMIT_REASON = "delivery count limit reached"

_KEYS = (
    (backoff.POLICY_KEY, "none", "STRING",
     "How long records that came back unacknowledged (RELEASE, a negative ack without a delay, lock expiry, a "
     "session timeout) wait before they are delivered again: none (at once, as Kafka), fixed, multiplier "
     "(Pulsar's MultiplierRedeliveryBackoff) or levels (RocketMQ's delay levels); computed from the persisted "
     "delivery count. A delay the consumer asks for in a negative ack wins."),
    (backoff.DELAY_KEY, "60000", "LONG", "The fixed policy's delay (ms, at least 100)."),
    (backoff.MIN_KEY, "10000", "LONG",
     "The multiplier policy's first delay (ms, at least 100): the n-th redelivery waits "
     "min(min * multiplier^n, max)."),
    (backoff.MAX_KEY, "600000", "LONG", "The multiplier policy's longest delay (ms, not below the minimum)."),
    (backoff.MULTIPLIER_KEY, "2.0", "DOUBLE", "The multiplier policy's factor (at least 1.0)."),
    (backoff.LEVELS_KEY, backoff.ROCKETMQ_LEVELS, "STRING",
     "The levels policy's table (RocketMQ's messageDelayLevel form: numbers with ms, s, m, h or d): the record's "
     "n-th delivery failing waits the n-th level, the last level once past the end."),
)


@hookimpl
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    for name, default, value_type, doc in _KEYS:
        register.add(ConfigKey(name, "group", default, backoff.validator(name), doc, value_type))


@hookimpl
def logwright_check_group_config(change: GroupConfigChange) -> None:
    """The multiplier policy's minimum must not be above its maximum, whichever of the two a change sets."""
    for name in change.changed:
        if name in (backoff.MIN_KEY, backoff.MAX_KEY):
            problem = backoff.min_not_above_max(change.settings)
            if problem is not None:
                raise InvalidConfig(f"invalid group config {name!r}: {problem}")
            return


@hookimpl(trylast=True)
def logwright_decide_release(delivery: ReleasedDelivery) -> ReleaseDecision:
    limit = int(delivery.settings.get(DELIVERY_LIMIT_KEY, DEFAULT_DELIVERY_LIMIT))
    if delivery.delivery_count >= limit:
        return Reject(LIMIT_REASON)
    if delivery.requested_delay_ms:
        return Redeliver(max(0, delivery.requested_delay_ms))
    try:
        policy = backoff.backoff_from_settings(delivery.settings)
    except (InvalidConfig, ValueError):
        return Redeliver(0)  # a stored value refused by today's validation: redeliver as Kafka does
    return Redeliver(policy.delay_for(delivery.delivery_count - 1))
