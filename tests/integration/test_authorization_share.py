"""ShareFetch and ShareAcknowledge refused as Kafka 4.4 refuses them on an authorizing broker: what is checked
before the group's ACL, what after, and the codes without words Kafka answers with. Differential.

As in test_authorization_topics: ``alice`` (PLAIN, SASL listener) has what a test grants; the PLAINTEXT listener's
``User:ANONYMOUS`` is the super user.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from kio.schema.metadata.v12 import request as metadata_v12
from kio.schema.share_acknowledge.v1 import request as acknowledge_v1
from kio.schema.share_fetch.v1 import request as share_fetch_v1
from logwright.compat.registry import make
from logwright.testing.clients import one_request

from .authorization_clients import (
    GROUP_AUTHORIZATION_FAILED,
    NONE,
    TOPIC_AUTHORIZATION_FAILED,
    AclOperation,
    ResourceType,
    binding,
    create_topic,
    grant,
    one,
    unique,
)
from .sasl_listeners import Listeners

pytestmark = pytest.mark.differential

INVALID_REQUEST, SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH = 42, 122, 123


def topic_id(bootstrap: str, topic: str) -> uuid.UUID:
    answer = one_request(bootstrap, make(metadata_v12.MetadataRequest, topics=(
        make(metadata_v12.MetadataRequestTopic, topic_id=None, name=topic),), allow_auto_topic_creation=False,
        include_topic_authorized_operations=False))
    found: uuid.UUID = answer.topics[0].topic_id
    return found


def acknowledge(group: str | None, member: str | None, epoch: int, topic: uuid.UUID) -> Any:
    return make(acknowledge_v1.ShareAcknowledgeRequest, group_id=group, member_id=member, share_session_epoch=epoch,
                topics=(make(acknowledge_v1.AcknowledgeTopic, topic_id=topic, partitions=(make(
                    acknowledge_v1.AcknowledgePartition, partition_index=0, acknowledgement_batches=(make(
                        acknowledge_v1.AcknowledgementBatch, first_offset=0, last_offset=0,
                        acknowledge_types=(1,)),)),)),))


def share_fetch(group: str | None, member: str | None, epoch: int, topic: uuid.UUID) -> Any:
    return make(share_fetch_v1.ShareFetchRequest, group_id=group, member_id=member, share_session_epoch=epoch,
                max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=1000, max_records=10, batch_size=10,
                topics=(make(share_fetch_v1.FetchTopic, topic_id=topic, partitions=(make(
                    share_fetch_v1.FetchPartition, partition_index=0, acknowledgement_batches=()),)),),
                forgotten_topics_data=())


def short(answer: Any) -> tuple[Any, ...]:
    partitions = [(int(partition.error_code), partition.error_message)
                  for topic in answer.responses for partition in topic.partitions]
    return int(answer.error_code), answer.error_message, partitions


def test_share_requests_are_checked_in_kafkas_order_and_refused_without_words(
        authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    prefix = unique("authz-share-ops")
    group, topic = f"{prefix}-group", f"{prefix}-topic"
    create_topic(plain, topic)
    topic_uuid, member = topic_id(plain, topic), str(uuid.uuid4())

    def both(group_id: str | None, member_id: str | None, epoch: int) -> list[tuple[Any, ...]]:
        return [short(one(sasl, "alice", build(group_id, member_id, epoch, topic_uuid)))
                for build in (acknowledge, share_fetch)]

    # a null group is refused before the group's ACL is asked
    assert both(None, member, 0) == [(INVALID_REQUEST, None, [])] * 2
    assert both(group, member, 0) == [(GROUP_AUTHORIZATION_FAILED, None, [])] * 2
    assert both(group, "", 0) == [(GROUP_AUTHORIZATION_FAILED, None, [])] * 2
    grant(plain, binding(ResourceType.GROUP, group, "User:alice", AclOperation.READ))
    assert both(group, None, 0) == [(INVALID_REQUEST, None, [])] * 2
    # an acknowledgement cannot open a session; a fetch can, and is refused the topic without READ on it
    assert both(group, member, 0) == [(INVALID_SHARE_SESSION_EPOCH, None, []),
                                      (NONE, None, [(TOPIC_AUTHORIZATION_FAILED, None)])]
    other = str(uuid.uuid4())
    assert both(group, other, 5) == [(SHARE_SESSION_NOT_FOUND, None, [])] * 2
