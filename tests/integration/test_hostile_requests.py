"""Requests that decode but carry what a version cannot serve get Kafka's answer, not a logged exception and a
closed connection (a hostile-input campaign in session 32). Differential: Apache Kafka 4.4 answers the same."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.metadata.v10 import request as metadata_v10
from kio.schema.metadata.v11 import request as metadata_v11

from .consumer_protocol_wire import request

INVALID_REQUEST = 42


@pytest.mark.differential
def test_metadata_v10_and_v11_refuse_topics_named_by_id(bootstrap: str) -> None:
    topic_id = uuid.uuid4()
    by_id = request(bootstrap, metadata_v10.MetadataRequest(
        topics=(metadata_v10.MetadataRequestTopic(topic_id=topic_id, name=None),), allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False, include_topic_authorized_operations=False))
    assert [(int(t.error_code), t.name, t.topic_id) for t in by_id.topics] == [(INVALID_REQUEST, "", topic_id)]
    both = request(bootstrap, metadata_v11.MetadataRequest(
        topics=(metadata_v11.MetadataRequestTopic(topic_id=topic_id, name="named-too"),
                metadata_v11.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name="plain")),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    assert [(int(t.error_code), t.name) for t in both.topics] == [(INVALID_REQUEST, "named-too"),
                                                                   (INVALID_REQUEST, "plain")]
