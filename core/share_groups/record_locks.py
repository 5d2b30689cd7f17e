"""The in-flight window of a share-partition and how far acquisition may reach (KIP-932's record locks).

Kafka bounds what one share-partition keeps in flight: the window from its start offset (the first record not
yet finished) to the last record ever acquired counts whole, acknowledged holes included, and only
``share.partition.max.record.locks`` minus that many never-delivered records may be acquired by a fetch.
Records released back inside the window may always be acquired again: they add nothing to it. So the state a
cursor keeps (and what one archive can copy to a dead-letter topic) stays bounded by the limit, while a
consumer that acknowledges the oldest records lets acquisition go on.
"""

from __future__ import annotations

from logwright.core.cursors.cursor import CursorState

GROUP_KEY = "share.partition.max.record.locks"
"""Group config: the group's own limit, within the broker's minimum and maximum (KIP-1240, Kafka 4.3+); its default
and bounds are the broker's ``group.share.(min.|max.)partition.max.record.locks`` (`core.config.group_bounds`)."""


def window_end(state: CursorState, start: int) -> int:
    """The last offset at or after ``start`` the cursor knows of (acquired once, settled, or waiting to be
    delivered again); ``start - 1`` when there is none."""
    end = start - 1
    if state.in_flight:
        end = max(end, max(delivery.last for delivery in state.in_flight))
    if state.redeliveries:
        end = max(end, max(span.last for span in state.redeliveries))
    settled_last = state.settled.last
    if settled_last is not None:
        end = max(end, settled_last)
    return end


def acquisition_ceiling(state: CursorState, log_start: int, limit: int) -> int:
    """The highest offset a fetch may acquire now: never-delivered records only while the window from the
    cursor's start holds fewer than ``limit`` offsets, records inside the window always."""
    start = max(state.mark_delete_position + 1, log_start)
    return max(window_end(state, start), start + limit - 1)


def in_window(state: CursorState, log_start: int) -> int:
    """How many offsets the cursor's in-flight window spans (what Kafka compares with the limit)."""
    start = max(state.mark_delete_position + 1, log_start)
    return window_end(state, start) - start + 1
