"""Requests naming a partition or topic more than once, or ones the broker does not have, answered as Kafka 4.4.

Fetch: Kafka takes a Fetch's partitions into a map by topic and partition: each is answered once, where it was
first named, from the fetch offset it was last given; the partitions it has come first, then those of unknown
topic ids, then the other partitions it does not have (offsets -1, an empty list of aborted transactions), a
topic's consecutive partitions under one entry. An offset out of range is answered with -1 for the offsets too.
Answering every copy (as logwright did) let one request of 10,000 copies of a partition repeat its records' read
and its aborted transactions 10,000 times.

Metadata: Kafka takes the topics named into a set: each is answered once.
"""

from __future__ import annotations

import datetime
import struct
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.fetch.v12 import request as fetch12
from kio.schema.fetch.v13 import request as fetch13
from kio.schema.metadata.v12 import request as metadata12
from logwright.compat.registry import make
from logwright.testing.clients import one_request

pytestmark = pytest.mark.differential

NONE, OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID = 0, 1, 3, 100


def request(bootstrap: str, message: Any) -> Any:
    return one_request(bootstrap, message, "fetch-duplicates")


def base_offsets(records: Any) -> list[int]:
    """The base offset of each batch in a partition's records."""
    data, offsets = bytes(records or b""), []
    while len(data) >= 12:
        base, length = struct.unpack(">qi", data[:12])
        offsets.append(base)
        data = data[12 + length:]
    return offsets


def shape(answer: Any, named_by_id: bool = False) -> list[tuple[Any, list[tuple[Any, ...]]]]:
    """Each topic entry: its name (or id) and each partition's index, error, batches' base offsets, aborted
    transactions (``None`` for null), high watermark, last stable offset and log start offset."""
    return [(topic.topic_id if named_by_id else topic.topic,
             [(partition.partition_index, int(partition.error_code), base_offsets(partition.records),
               partition.aborted_transactions, partition.high_watermark, partition.last_stable_offset,
               partition.log_start_offset) for partition in topic.partitions])
            for topic in answer.responses]


@pytest.fixture
def topics(bootstrap: str) -> tuple[str, str]:
    """Two topics of two partitions, five batches of one record on each partition."""
    names = (f"dup-a-{uuid.uuid4().hex[:8]}", f"dup-b-{uuid.uuid4().hex[:8]}")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for name in names:
        admin.create_topics([NewTopic(name, 2)])[name].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for name in names:
        for partition in (0, 1):
            for _ in range(5):
                producer.produce(name, value=b"x", partition=partition)
                assert producer.flush(10) == 0
    return names


def asking(module: Any, index: int, offset: int) -> Any:
    return make(module.FetchPartition, partition=index, fetch_offset=offset, partition_max_bytes=1 << 20)


def fetch(module: Any, topics: tuple[Any, ...], isolation_level: int = 0) -> Any:
    return make(module.FetchRequest, max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=1 << 20,
                isolation_level=isolation_level, topics=topics, forgotten_topics_data=())


@pytest.mark.parametrize("isolation_level", [0, 1])
def test_each_partition_is_answered_once_from_its_last_offset_unknown_ones_last(
        bootstrap: str, topics: tuple[str, str], isolation_level: int) -> None:
    a, b = topics
    asked = (make(fetch12.FetchTopic, topic=a, partitions=(asking(fetch12, 0, 0), asking(fetch12, 0, 3),
                                                            asking(fetch12, 1, 0))),
             make(fetch12.FetchTopic, topic=b, partitions=(asking(fetch12, 0, 0),)),
             make(fetch12.FetchTopic, topic=a, partitions=(asking(fetch12, 1, 2), asking(fetch12, 0, 1),
                                                            asking(fetch12, 7, 0))),
             make(fetch12.FetchTopic, topic="dup-nowhere", partitions=(asking(fetch12, 0, 0),
                                                                       asking(fetch12, 0, 0))),
             make(fetch12.FetchTopic, topic=b, partitions=(asking(fetch12, 0, 99),)))
    answer = request(bootstrap, fetch(fetch12, asked, isolation_level))
    committed = () if isolation_level else None
    assert (answer.error_code, answer.session_id) == (NONE, 0)
    assert shape(answer) == [
        (a, [(0, NONE, [1, 2, 3, 4], committed, 5, 5, 0), (1, NONE, [2, 3, 4], committed, 5, 5, 0)]),
        (b, [(0, OFFSET_OUT_OF_RANGE, [], None, -1, -1, -1)]),
        (a, [(7, UNKNOWN_TOPIC_OR_PARTITION, [], (), -1, -1, -1)]),
        ("dup-nowhere", [(0, UNKNOWN_TOPIC_OR_PARTITION, [], (), -1, -1, -1)]),
    ]


def test_by_topic_id_too_and_a_partition_named_ten_thousand_times_is_read_once(
        bootstrap: str, topics: tuple[str, str]) -> None:
    a, b = topics
    metadata = request(bootstrap, make(metadata12.MetadataRequest, topics=tuple(
        make(metadata12.MetadataRequestTopic, name=name, topic_id=None) for name in topics),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    ids = {topic.name: topic.topic_id for topic in metadata.topics}
    nowhere = uuid.uuid4()
    asked = (make(fetch13.FetchTopic, topic_id=ids[a], partitions=(asking(fetch13, 0, 0), asking(fetch13, 0, 3),
                                                                    asking(fetch13, 9, 0))),
             make(fetch13.FetchTopic, topic_id=ids[b], partitions=(asking(fetch13, 1, 1),)),
             make(fetch13.FetchTopic, topic_id=ids[a], partitions=(asking(fetch13, 1, 2), asking(fetch13, 0, 1))),
             make(fetch13.FetchTopic, topic_id=nowhere, partitions=(asking(fetch13, 0, 0), asking(fetch13, 0, 0))))
    assert shape(request(bootstrap, fetch(fetch13, asked)), named_by_id=True) == [
        (ids[a], [(0, NONE, [1, 2, 3, 4], None, 5, 5, 0)]),
        (ids[b], [(1, NONE, [1, 2, 3, 4], None, 5, 5, 0)]),
        (ids[a], [(1, NONE, [2, 3, 4], None, 5, 5, 0)]),
        (nowhere, [(0, UNKNOWN_TOPIC_ID, [], (), -1, -1, -1)]),
        (ids[a], [(9, UNKNOWN_TOPIC_OR_PARTITION, [], (), -1, -1, -1)]),
    ], "unknown topic ids before unknown partitions"
    copies = (make(fetch13.FetchTopic, topic_id=ids[b], partitions=(asking(fetch13, 0, 0),) * 10_000),)
    assert shape(request(bootstrap, fetch(fetch13, copies, isolation_level=1)), named_by_id=True) == [
        (ids[b], [(0, NONE, [0, 1, 2, 3, 4], (), 5, 5, 0)])]


def test_metadata_answers_each_topic_named_once_unknown_ids_first_unknown_names_last(
        bootstrap: str, topics: tuple[str, str]) -> None:
    """Up to four distinct topics, where Kafka's set keeps the order they were first named in."""
    a, b = topics
    by_name = request(bootstrap, make(metadata12.MetadataRequest, topics=tuple(
        make(metadata12.MetadataRequestTopic, name=name, topic_id=None)
        for name in (a, "dup-nowhere", a, b, "dup-nowhere", a)),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    assert [(topic.name, topic.error_code, len(topic.partitions)) for topic in by_name.topics] == [
        (a, NONE, 2), (b, NONE, 2), ("dup-nowhere", UNKNOWN_TOPIC_OR_PARTITION, 0)]
    ids = {topic.name: topic.topic_id for topic in by_name.topics}
    nowhere = uuid.uuid4()
    by_id = request(bootstrap, make(metadata12.MetadataRequest, topics=tuple(
        make(metadata12.MetadataRequestTopic, name=None, topic_id=topic_id)
        for topic_id in (ids[b], ids[a], ids[b], nowhere, nowhere)),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    assert [(topic.name, topic.topic_id, topic.error_code, len(topic.partitions)) for topic in by_id.topics] == [
        (None, nowhere, UNKNOWN_TOPIC_ID, 0), (b, ids[b], NONE, 2), (a, ids[a], NONE, 2)]
