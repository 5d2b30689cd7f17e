"""Running switch delays (Failover's ``logwright.failover.switch.delay.ms``) as events, so a restart keeps them.

A `SwitchDelayStarted` (tag 88, in `core.events.share_groups`) records the membership the delay protects
and when it ends on the broker clock; the ``switch_delays`` projection keeps the latest per group until the
group is deleted. A delay whose end has passed is inert (modes compare it with the clock), so nothing needs
to end it.
"""

from __future__ import annotations

from logwright.core.cursors.subscription_mode import Handover
from logwright.core.events.base import Event
from logwright.core.events.share_groups import ShareGroupDeleted, SwitchDelayStarted
from logwright.core.projection import Projection


def _keys(event: Event) -> tuple[str, ...]:
    return (event.group_id,) if isinstance(event, SwitchDelayStarted | ShareGroupDeleted) else ()


def _evolve(state: Handover | None, event: Event, key: str) -> Handover | None:
    if isinstance(event, SwitchDelayStarted):
        return Handover(event.previous, event.until_ms)
    if isinstance(event, ShareGroupDeleted):
        return None
    return state


SWITCH_DELAYS: Projection[Handover] = Projection("switch_delays", _keys, _evolve,
                                                  frozenset({SwitchDelayStarted, ShareGroupDeleted}))
