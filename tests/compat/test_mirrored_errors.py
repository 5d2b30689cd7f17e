"""Error answers mirrored from the request, for responses without a top-level error code: each topic and
partition the request named comes back with the code (here KAFKA_STORAGE_ERROR, as when the store fails)."""

from __future__ import annotations

import datetime
import uuid

import kio.schema.create_topics.v5.request as create_topics
import kio.schema.delete_records.v2.request as delete_records
import kio.schema.delete_topics.v5.request as delete_topics
import kio.schema.metadata.v12.request as metadata
import kio.schema.offset_commit.v8.request as offset_commit
from logwright.compat.errors import ErrorCode
from logwright.compat.wire.messages import decode_response
from logwright.compat.wire.mirrored_errors import mirrored_error_response

STORAGE = ErrorCode.KAFKA_STORAGE_ERROR
TIMEOUT = datetime.timedelta(seconds=30)


def answer(api_key: int, version: int, request: object) -> object:
    frame = mirrored_error_response(api_key, version, 42, request, STORAGE)
    assert frame is not None
    correlation_id, response = decode_response(api_key, version, frame)
    assert correlation_id == 42
    return response


def test_offset_commit_answers_every_partition() -> None:
    partitions = tuple(offset_commit.OffsetCommitRequestPartition(partition_index=index, committed_offset=5,
                                                                  committed_leader_epoch=-1, committed_metadata=None)
                       for index in (3, 1))
    request = offset_commit.OffsetCommitRequest(
        group_id="g", generation_id_or_member_epoch=1, member_id="m", group_instance_id=None,
        topics=(offset_commit.OffsetCommitRequestTopic(name="t", partitions=partitions),))
    response = answer(8, 8, request)
    [topic] = response.topics  # type: ignore[attr-defined]
    assert topic.name == "t"
    assert [(p.partition_index, p.error_code) for p in topic.partitions] == [(3, STORAGE), (1, STORAGE)]


def test_create_topics_and_delete_records_answer_by_name() -> None:
    request = create_topics.CreateTopicsRequest(
        topics=tuple(create_topics.CreatableTopic(name=name, num_partitions=1, replication_factor=1, assignments=(),
                                                  configs=()) for name in ("a", "b")),
        timeout=TIMEOUT, validate_only=False)
    created = answer(19, 5, request)
    assert [(t.name, t.error_code) for t in created.topics] == [("a", STORAGE), ("b", STORAGE)]  # type: ignore[attr-defined]

    request_records = delete_records.DeleteRecordsRequest(topics=(delete_records.DeleteRecordsTopic(
        name="t", partitions=(delete_records.DeleteRecordsPartition(partition_index=0, offset=7),)),), timeout=TIMEOUT)
    deleted = answer(21, 2, request_records)
    [topic] = deleted.topics  # type: ignore[attr-defined]
    assert [(p.partition_index, p.error_code) for p in topic.partitions] == [(0, STORAGE)]


def test_metadata_answers_each_topic_asked_for() -> None:
    request = metadata.MetadataRequest(topics=(metadata.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name="new"),),
                                       allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    response = answer(3, 12, request)
    assert [(t.name, t.error_code) for t in response.topics] == [("new", STORAGE)]  # type: ignore[attr-defined]


def test_a_response_sharing_no_list_with_its_request_has_no_mirrored_answer() -> None:
    request = delete_topics.DeleteTopicsRequest(topic_names=("a",), timeout=TIMEOUT)
    assert mirrored_error_response(20, 5, 1, request, STORAGE) is None
