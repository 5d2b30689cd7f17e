"""What the hostile-values fuzz test (tests/fuzz/test_hostile_values.py) found in sessions 33 and 34, each answered
now as one request that fails or succeeds alone, with no ERROR logged: a member id too long for the answers that
carry it, a subscription whose topic array is null, an extension body too large to decode on the event loop, a
DescribeGroups naming one large group thousands of times, an OffsetFetch naming one partition thousands of times, a
LeaveGroup of thousands of copies of one unknown member of a group with a long id."""

from __future__ import annotations

import asyncio
import datetime
import socket
import struct
from typing import Any

import msgpack
import pytest
from kio.schema.describe_groups.v4 import request as describe_groups_v4
from kio.schema.describe_groups.v5 import request as describe_groups_v5
from kio.schema.join_group.v5 import request as join_group_v5
from kio.schema.join_group.v9 import request as join_group_v9
from kio.schema.leave_group.v3 import request as leave_group_v3
from kio.schema.offset_commit.v2 import request as offset_commit_v2
from kio.schema.offset_delete.v0 import request as offset_delete_v0
from kio.schema.offset_fetch.v5 import request as offset_fetch_v5
from kio.schema.sync_group.v3 import request as sync_group_v3
from kio.static.primitive import i32Timedelta
from logwright.client.connection import BrokerError, Connection
from logwright.compat.coordinators.group_coordinator import MEMBER_ID_BYTES
from logwright.compat.wire.extension_body import MAX_BODY_BYTES
from logwright.compat.wire.framing import encode_frame
from logwright.compat.wire.messages import encode_request

from .broker_process import BrokerProcess
from .consumer_protocol_wire import request

INVALID_REQUEST = 42
UNKNOWN_SERVER_ERROR = -1


def _millis(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def _no_error_logged(broker: BrokerProcess) -> None:
    tail = broker.log_tail(400)
    assert "ERROR" not in tail and "Traceback" not in tail, tail


def test_a_32767_character_instance_id_joins_and_is_described(broker: BrokerProcess) -> None:
    """The member id (instance id, '-', a UUID) is cut to fit the int16 strings of JoinGroup v5 and DescribeGroups
    v4; it used to be 37 characters too long to encode: no answer, an ERROR logged."""
    instance = "i" * 32_767
    joined = request(broker.bootstrap, join_group_v5.JoinGroupRequest(
        group_id="long-instance", session_timeout=_millis(30_000), rebalance_timeout=_millis(1_000), member_id="",
        group_instance_id=instance, protocol_type="consumer",
        protocols=(join_group_v5.JoinGroupRequestProtocol(name="range", metadata=b""),)))
    assert int(joined.error_code) == 0
    assert len(joined.member_id.encode()) == MEMBER_ID_BYTES and joined.member_id.startswith("i" * 32_000)
    described = request(broker.bootstrap, describe_groups_v4.DescribeGroupsRequest(
        groups=("long-instance",), include_authorized_operations=False))
    [group] = described.groups
    assert int(group.error_code) == 0
    assert [(member.member_id, member.group_instance_id) for member in group.members] == [(joined.member_id, instance)]
    _no_error_logged(broker)


def test_offset_delete_of_a_group_whose_subscription_has_a_null_topic_array(broker: BrokerProcess) -> None:
    """A consumer's protocol metadata of 0xff bytes reads as a null topic array: the group's subscription is
    unreadable, not a TypeError (which was answered UNKNOWN_SERVER_ERROR, with an ERROR logged)."""

    def join(member_id: str) -> Any:
        return join_group_v9.JoinGroupRequest(
            group_id="null-subscription", session_timeout=_millis(30_000), rebalance_timeout=_millis(500),
            member_id=member_id, group_instance_id=None, protocol_type="consumer", reason=None,
            protocols=(join_group_v9.JoinGroupRequestProtocol(name="range", metadata=b"\xff" * 10),))

    first = request(broker.bootstrap, join(""))
    assert int(request(broker.bootstrap, join(first.member_id)).error_code) == 0
    answer = request(broker.bootstrap, offset_delete_v0.OffsetDeleteRequest(group_id="null-subscription", topics=(
        offset_delete_v0.OffsetDeleteRequestTopic(name="t", partitions=(
            offset_delete_v0.OffsetDeleteRequestPartition(partition_index=0),)),)))
    assert int(answer.error_code) != UNKNOWN_SERVER_ERROR
    _no_error_logged(broker)


def test_an_extension_body_over_the_limit_is_refused_unread(broker: BrokerProcess) -> None:
    """95 MiB of small msgpack items held every other client 1.5 s while it was decoded; a body over
    `MAX_BODY_BYTES` is now answered INVALID_REQUEST without being read, and the connection goes on."""

    async def scenario() -> None:
        connection = await Connection.open(broker.bootstrap, "big-body")
        try:
            items = (MAX_BODY_BYTES // 1000) + 1
            with pytest.raises(BrokerError) as refused:
                await connection.extension(32007, {"padding": [[1] * 1000] * items}, "broker stats")
            assert refused.value.code == INVALID_REQUEST and "over the" in str(refused.value)
            assert (await connection.extension(32007, {}, "broker stats"))["error_code"] == 0
        finally:
            await connection.close()

    assert len(msgpack.packb({"padding": [[1] * 1000] * ((MAX_BODY_BYTES // 1000) + 1)})) > MAX_BODY_BYTES
    asyncio.run(scenario())
    _no_error_logged(broker)


def _send_raw(broker: BrokerProcess, body: Any) -> tuple[int, socket.socket]:
    """``body`` sent raw: the answer's size and the socket to read it from (the test streams a large answer rather
    than hold it whole)."""
    sock = socket.create_connection(("127.0.0.1", broker.port), timeout=30)
    sock.sendall(encode_frame(encode_request(body, 7, "describer")))
    (size,) = struct.unpack(">i", _read_exactly(sock, 4))
    return size, sock


def _describe_payloads(broker: BrokerProcess, group: str, times: int) -> tuple[int, socket.socket]:
    """A DescribeGroups v5 naming ``group`` ``times`` times."""
    return _send_raw(broker, describe_groups_v5.DescribeGroupsRequest(groups=(group,) * times,
                                                                     include_authorized_operations=False))


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        assert chunk, "the broker closed the connection"
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def test_a_large_group_described_thousands_of_times_is_answered_without_growing_the_broker(
        broker: BrokerProcess) -> None:
    """One static member whose instance id (and so member id) is 32,767 characters, named 3,000 times in one 30 KB
    DescribeGroups: Kafka's answer, 3,000 identical descriptions (200 MB), streamed from one encoded description.
    It used to be built whole, every string encoded again: the broker grew by the answer's size and kept much of it
    (seed 201 of the fuzz test, a group named 10,000 times: +300 MiB)."""
    instance = "i" * 32_767
    joined = request(broker.bootstrap, join_group_v5.JoinGroupRequest(
        group_id="described-often", session_timeout=_millis(30_000), rebalance_timeout=_millis(1_000), member_id="",
        group_instance_id=instance, protocol_type="consumer",
        protocols=(join_group_v5.JoinGroupRequestProtocol(name="range", metadata=b"m" * 100),)))
    assert int(joined.error_code) == 0
    synced = request(broker.bootstrap, sync_group_v3.SyncGroupRequest(
        group_id="described-often", generation_id=joined.generation_id, member_id=joined.member_id,
        group_instance_id=instance, assignments=(sync_group_v3.SyncGroupRequestAssignment(
            member_id=joined.member_id, assignment=b"a" * 100),)))
    assert int(synced.error_code) == 0 and synced.assignment == b"a" * 100
    size, sock = _describe_payloads(broker, "described-often", 1)
    with sock:
        once = _read_exactly(sock, size)
    head, description, tail = once[:9], once[10:-1], once[-1:]  # correlation id, header tags, throttle; count 2
    assert once[9] == 2 and len(description) > 65_000
    broker.reset_peak_resident()
    before = broker.resident_bytes()
    times = 3_000
    size, sock = _describe_payloads(broker, "described-often", times)
    with sock:
        expected_head = head + bytes([(times + 1) & 0x7F | 0x80, (times + 1) >> 7])
        assert size == len(expected_head) + times * len(description) + len(tail)
        assert _read_exactly(sock, len(expected_head)) == expected_head
        for _ in range(times):
            assert _read_exactly(sock, len(description)) == description
        assert _read_exactly(sock, len(tail)) == tail
    grown = broker.resident_bytes("VmHWM") - before
    assert grown < 64 * 2**20, f"the broker grew by {grown // 2**20} MiB answering a {size // 2**20} MiB answer"
    _no_error_logged(broker)


def test_a_partition_fetched_thousands_of_times_is_answered_without_growing_the_broker(broker: BrokerProcess) -> None:
    """A commit with 4,000 bytes of metadata, fetched 50,000 times in one 200 KB OffsetFetch: Kafka's answer, 50,000
    identical partition answers (200 MB), streamed from one encoded answer."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic("fetched-often", 1, 1)]).values():
        future.result(10)
    metadata = "x" * 4_000
    committed = request(broker.bootstrap, offset_commit_v2.OffsetCommitRequest(
        group_id="fetched-often", generation_id_or_member_epoch=-1, member_id="",
        retention_time=datetime.timedelta(milliseconds=-1), topics=(offset_commit_v2.OffsetCommitRequestTopic(
            name="fetched-often", partitions=(offset_commit_v2.OffsetCommitRequestPartition(
                partition_index=0, committed_offset=42, committed_metadata=metadata),)),)))
    assert int(committed.topics[0].partitions[0].error_code) == 0

    def fetch(times: int) -> tuple[int, socket.socket]:
        return _send_raw(broker, offset_fetch_v5.OffsetFetchRequest(group_id="fetched-often", topics=(
            offset_fetch_v5.OffsetFetchRequestTopic(name="fetched-often", partition_indexes=(0,) * times),)))

    size, sock = fetch(1)
    with sock:
        once = _read_exactly(sock, size)
    count_at = 4 + 4 + 4 + 2 + len("fetched-often")  # correlation id, throttle, topic count, topic name
    head, answer, tail = once[:count_at], once[count_at + 4:-2], once[-2:]
    assert once[count_at:count_at + 4] == struct.pack(">i", 1) and metadata.encode() in answer
    broker.reset_peak_resident()
    before = broker.resident_bytes()
    times = 50_000
    size, sock = fetch(times)
    with sock:
        assert size == count_at + 4 + times * len(answer) + 2
        assert _read_exactly(sock, count_at + 4) == head + struct.pack(">i", times)
        for _ in range(times):
            assert _read_exactly(sock, len(answer)) == answer
        assert _read_exactly(sock, 2) == tail
    grown = broker.resident_bytes("VmHWM") - before
    assert grown < 64 * 2**20, f"the broker grew by {grown // 2**20} MiB answering a {size // 2**20} MiB answer"
    _no_error_logged(broker)


def test_thousands_of_copies_of_an_unknown_member_leave_a_long_named_group_without_growing_the_broker(
        broker: BrokerProcess) -> None:
    """10,000 copies of one unknown member (20 KB of request) leaving a group whose id is 32,767 characters: each
    is UNKNOWN_MEMBER_ID. Each used to be an error of its own whose message named the whole group id: 320 MB held
    until the answer was written, much of it kept (seed 202 of the fuzz test: +305 MiB)."""
    group = "g" * 32_767
    joined = request(broker.bootstrap, join_group_v5.JoinGroupRequest(
        group_id=group, session_timeout=_millis(30_000), rebalance_timeout=_millis(1_000), member_id="",
        group_instance_id="static", protocol_type="consumer",
        protocols=(join_group_v5.JoinGroupRequestProtocol(name="range", metadata=b""),)))
    assert int(joined.error_code) == 0
    broker.reset_peak_resident()
    before = broker.resident_bytes()
    unknown = leave_group_v3.MemberIdentity(member_id="", group_instance_id=None)
    answer = request(broker.bootstrap, leave_group_v3.LeaveGroupRequest(group_id=group, members=(unknown,) * 10_000))
    grown = broker.resident_bytes("VmHWM") - before
    assert int(answer.error_code) == 0 and len(answer.members) == 10_000
    assert {int(member.error_code) for member in answer.members} == {25}  # UNKNOWN_MEMBER_ID
    assert grown < 32 * 2**20, f"the broker grew by {grown // 2**20} MiB"
    _no_error_logged(broker)
