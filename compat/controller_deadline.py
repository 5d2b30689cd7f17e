"""The timeout of a request Kafka hands to its controller, and what a timeout of zero or less gets.

CreateTopics, CreatePartitions, DeleteTopics, ElectLeaders and AlterPartitionReassignments carry a timeout that
Kafka 4.4 turns into the deadline of the controller's work. A timeout of zero or less has passed before the
controller takes the request, so Kafka answers every topic or partition REQUEST_TIMED_OUT (no message) and changes
nothing, whatever else is wrong with it; only duplicates, found before, are answered as such. logwright decides at
once and could act, but answers as Kafka does, so a client that sends zero learns the same thing from both
(tests/integration/test_controller_timeouts.py runs on both).
"""

from __future__ import annotations

import datetime


def expired(timeout: datetime.timedelta) -> bool:
    """Whether a request with this timeout would reach Kafka's controller past its deadline."""
    return timeout <= datetime.timedelta(0)
