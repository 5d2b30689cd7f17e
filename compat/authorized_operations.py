"""What the describing APIs report as the operations a client may perform on a resource.

Asked for (``include_*_authorized_operations``), a resource's authorized operations are bits of Kafka's
``AclOperation`` ids: without an authorizer, every operation its type supports (what Kafka answers without one); with
one, those the principal may perform (`compat.authorization.operations`). Not asked for, or in an answer that is an
error, they are ``UNKNOWN`` (INT32_MIN). tests/integration/test_authorized_operations.py and the authorization tests
run on both brokers.
"""

from __future__ import annotations

UNKNOWN = -(2**31)

READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = (
    3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
"""Kafka's ``AclOperation`` ids, the bit positions of an authorized-operations field."""


def _mask(*operations: int) -> int:
    return sum(1 << operation for operation in operations)


TOPIC = _mask(READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS)
GROUP = _mask(READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS)
CLUSTER = _mask(CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE)


def reported(asked: bool, operations: int) -> int:
    """``operations`` when the request asked for them, else `UNKNOWN`."""
    return operations if asked else UNKNOWN
