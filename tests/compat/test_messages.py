"""Request headers, the version registry, request decoding and response encoding, against golden bytes."""

from __future__ import annotations

import datetime
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.api_versions.v3.response import ApiVersion, ApiVersionsResponse
from kio.schema.metadata.v5.request import MetadataRequest
from kio.schema.produce.v9 import response as produce_v9
from logwright.compat.errors import ErrorCode
from logwright.compat.wire.framing import FrameDecoder, encode_frame
from logwright.compat.wire.messages import (
    FIRST_FLEXIBLE_VERSION,
    KNOWN_VERSIONS,
    MAX_HEADER_TAGS,
    MalformedRequest,
    ResponseEncodingError,
    UnsupportedVersion,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    is_flexible,
    parse_request_header,
    request_type,
    response_header_version,
    response_type,
)
from logwright.compat.wire.varints import uvarint

# ApiVersions v3 as librdkafka sends it, written out from the protocol guide:
API_VERSIONS_V3_FRAME = bytes.fromhex(
    "00000025"  # frame size: 37
    "0012" "0003" "00000001"  # request_api_key 18, request_api_version 3, correlation_id 1
    "0007" "72646b61666b61"  # client_id: int16-length string "rdkafka" (legacy even in header v2)
    "00"  # header tagged fields: none
    "0b" "6c696272646b61666b61"  # client_software_name: compact string (length + 1) "librdkafka"
    "07" "322e31362e31"  # client_software_version: compact string "2.16.1"
    "00"  # body tagged fields: none
)


def _frame(hex_payload: str) -> bytes:
    return bytes.fromhex(hex_payload)


def test_golden_api_versions_v3_request() -> None:
    [frame] = FrameDecoder().feed(API_VERSIONS_V3_FRAME)
    header, request = decode_request(frame)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (18, 3, 1, "rdkafka")
    assert header.flexible and header.header_length == 18
    assert request == ApiVersionsRequest(client_software_name="librdkafka", client_software_version="2.16.1")


def test_encode_request_reproduces_the_golden_bytes() -> None:
    request = ApiVersionsRequest(client_software_name="librdkafka", client_software_version="2.16.1")
    assert encode_frame(encode_request(request, 1, "rdkafka")) == API_VERSIONS_V3_FRAME


def test_api_versions_v3_response_uses_response_header_v0() -> None:
    response = ApiVersionsResponse(
        error_code=ErrorCode.NONE, api_keys=(ApiVersion(api_key=18, min_version=0, max_version=4),),
        throttle_time=datetime.timedelta(0),
    )
    assert encode_response(18, 3, 7, response) == _frame(
        "00000007"  # correlation id, and no header tagged fields (ApiVersions is always header v0)
        "0000"  # error_code
        "02" "0012" "0000" "0004" "00"  # one api key entry (compact array length 2) with empty tags
        "00000000"  # throttle_time_ms
        "00"  # body tagged fields: defaults are not written
    )
    assert response_header_version(18, 3) == 0


def test_api_versions_v0_response() -> None:
    response = ApiVersionsResponseV0(error_code=ErrorCode.UNSUPPORTED_VERSION,
                                     api_keys=(ApiVersionV0(api_key=0, min_version=3, max_version=9),))
    assert encode_response(18, 0, 1, response) == _frame("00000001" "0023" "00000001" "0000" "0003" "0009")


def test_produce_v9_response_golden() -> None:
    response = produce_v9.ProduceResponse(responses=(produce_v9.TopicProduceResponse(
        name="t", partition_responses=(produce_v9.PartitionProduceResponse(
            index=0, error_code=ErrorCode.NONE, base_offset=5, log_start_offset=0, record_errors=()),),
    ),))
    assert encode_response(0, 9, 2, response) == _frame(
        "00000002" "00"  # response header v1: correlation id, tagged fields
        "02" "0274"  # one topic, name "t"
        "02" "00000000" "0000" "0000000000000005"  # one partition: index, error_code, base_offset
        "ffffffffffffffff" "0000000000000000"  # log_append_time -1 (null), log_start_offset 0
        "01" "00" "00"  # record_errors empty, error_message null, partition tags
        "00"  # topic tags
        "00000000" "00"  # throttle_time_ms, body tags
    )


def test_response_must_match_the_requested_version() -> None:
    response = MetadataRequest(topics=None)
    with pytest.raises(ResponseEncodingError, match="cannot answer API key 3 version 6"):
        encode_response(3, 6, 1, response)


def test_unencodable_response_names_the_type() -> None:
    response = ApiVersionsResponseV0(error_code=ErrorCode.NONE,
                                     api_keys=(ApiVersionV0(api_key=70000, min_version=0, max_version=0),))
    with pytest.raises(ResponseEncodingError, match="ApiVersionsResponse v0"):
        encode_response(18, 0, 1, response)


def test_header_of_an_unknown_api_key() -> None:
    header = parse_request_header(_frame("7fff" "0001" "0000002a" "0003" "616263" "deadbeef"))
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (32767, 1, 42, "abc")
    assert not header.flexible and header.header_length == 13


def test_header_of_a_future_api_versions_version() -> None:
    header = parse_request_header(_frame("0012" "0063" "00000009" "ffff" "00"))
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (18, 99, 9, None)
    assert header.flexible and header.header_length == 11


def test_header_of_a_future_version_with_an_unreadable_body_is_still_read() -> None:
    header = parse_request_header(_frame("0012" "0063" "00000009" "ffff"))
    assert header.correlation_id == 9


def test_header_of_a_removed_old_version() -> None:
    header = parse_request_header(_frame("0000" "0002" "00000003" "0001" "78" "0001"))
    assert (header.api_key, header.api_version, header.correlation_id) == (0, 2, 3)
    assert not header.flexible and header.header_length == 11
    with pytest.raises(UnsupportedVersion, match="API key 0 version 2"):
        decode_request(_frame("0000" "0002" "00000003" "0001" "78" "0001"))


@pytest.mark.parametrize("frame", [b"", b"\x00\x12\x00", b"\x00\x12\x00\x03\x00\x00\x00\x01\x00"])
def test_too_short_for_a_header(frame: bytes) -> None:
    with pytest.raises(MalformedRequest, match="too short"):
        parse_request_header(frame)


def test_client_id_past_the_end() -> None:
    with pytest.raises(MalformedRequest, match="client id"):
        parse_request_header(_frame("0003" "0005" "00000001" "0010" "6162"))


def test_known_flexible_version_with_truncated_header_tags() -> None:
    with pytest.raises(MalformedRequest, match="tagged fields"):
        parse_request_header(_frame("0003" "000c" "00000001" "ffff" "01" "00" "05" "00"))


@pytest.mark.parametrize("length", [18, 19, 25, 30, 35])
def test_truncated_body_is_malformed(length: int) -> None:
    payload = API_VERSIONS_V3_FRAME[4:]
    with pytest.raises(MalformedRequest, match=r"api_versions v3 request \(correlation id 1\) is unreadable"):
        decode_request(payload[:length])


def test_garbage_body_is_malformed() -> None:
    with pytest.raises(MalformedRequest):
        decode_request(_frame("0003" "0005" "00000001" "ffff" "7fffffff" "00"))
    with pytest.raises(MalformedRequest):
        decode_request(_frame("0012" "0003" "00000001" "ffff" "00" "ff" "ffffffff" "0f"))


@given(st.binary(max_size=64))
def test_random_bytes_never_escape_as_anything_but_malformed(garbage: bytes) -> None:
    for frame in (garbage, b"\x00\x03\x00\x05\x00\x00\x00\x01\xff\xff" + garbage,
                  b"\x00\x00\x00\x09\x00\x00\x00\x01\xff\xff\x00" + garbage):
        try:
            decode_request(frame)
        except MalformedRequest:
            pass


def test_bytearray_frames_are_accepted() -> None:
    header, request = decode_request(bytearray(API_VERSIONS_V3_FRAME[4:]))
    assert request.client_software_name == "librdkafka"


def test_registry_knows_kafka_4_ranges() -> None:
    assert KNOWN_VERSIONS[0] == range(3, 14)
    assert KNOWN_VERSIONS[1] == range(4, 19)
    assert KNOWN_VERSIONS[18] == range(0, 5)
    assert request_type(0, 9).__name__ == "ProduceRequest" and request_type(0, 9).__version__ == 9
    assert response_type(1, 12).__name__ == "FetchResponse"
    with pytest.raises(UnsupportedVersion):
        request_type(0, 2)
    with pytest.raises(UnsupportedVersion):
        response_type(1000, 0)


@pytest.mark.parametrize(("api_key", "version", "flexible"), [
    (0, 8, False), (0, 9, True), (0, 99, True), (0, 1, False), (1, 11, False), (1, 12, True), (3, 8, False),
    (3, 9, True), (17, 1, False), (17, 5, False), (47, 0, False), (18, 2, False), (18, 3, True), (999, 3, False),
])
def test_flexible_versions(api_key: int, version: int, flexible: bool) -> None:
    assert is_flexible(api_key, version) is flexible


def test_the_first_flexible_versions_are_kios() -> None:
    assert FIRST_FLEXIBLE_VERSION.keys() == KNOWN_VERSIONS.keys()
    for api_key, versions in KNOWN_VERSIONS.items():
        flexible = [version for version in versions if request_type(api_key, version).__flexible__]
        assert flexible == list(range(flexible[0], versions[-1] + 1)) if flexible else True, api_key
        assert FIRST_FLEXIBLE_VERSION[api_key] == (flexible[0] if flexible else None), api_key


def test_response_header_versions() -> None:
    assert response_header_version(0, 9) == 1
    assert response_header_version(0, 8) == 0
    assert response_header_version(18, 4) == 0


def test_decode_response_round_trip() -> None:
    response = ApiVersionsResponse(
        error_code=ErrorCode.NONE, api_keys=(ApiVersion(api_key=1, min_version=4, max_version=18),),
        throttle_time=datetime.timedelta(milliseconds=5),
    )
    assert decode_response(18, 3, encode_response(18, 3, 11, response)) == (11, response)
    produce = produce_v9.ProduceResponse(responses=())
    assert decode_response(0, 9, encode_response(0, 9, 12, produce)) == (12, produce)


def test_request_round_trip_non_flexible() -> None:
    request = MetadataRequest(topics=None, allow_auto_topic_creation=True)
    header, decoded = decode_request(encode_request(request, 5, None))
    assert (header.api_key, header.api_version, header.client_id, header.flexible) == (3, 5, None, False)
    assert decoded == request


def test_known_versions_are_contiguous_as_the_registry_assumes() -> None:
    from kio.schema.index import api_key_map, schema_name_map

    for api_key, name in api_key_map.items():
        assert set(schema_name_map[name]) == set(KNOWN_VERSIONS[api_key]), name


def test_header_from_a_memoryview() -> None:
    header = parse_request_header(memoryview(API_VERSIONS_V3_FRAME)[4:])
    assert (header.client_id, header.header_length) == ("rdkafka", 18)


def test_a_header_with_too_many_tagged_fields_is_refused_before_they_are_read() -> None:
    """A million header tags in a 2 MB frame were skipped one by one in Python (120 ms) before any bound looked."""
    prefix = struct.pack(">hhih", 18, 3, 7, -1)  # ApiVersions v3 (flexible), correlation id 7, null client id

    def with_tags(count: int) -> bytes:
        return prefix + uvarint(count) + b"\x00\x00" * count

    header = parse_request_header(with_tags(MAX_HEADER_TAGS))
    assert header.correlation_id == 7 and header.header_length == len(with_tags(MAX_HEADER_TAGS))
    with pytest.raises(MalformedRequest, match="tagged fields"):
        parse_request_header(with_tags(MAX_HEADER_TAGS + 1))
