"""Request and response plumbing over kio: headers, the (api key, version) registry, decode and encode.

The request header is parsed by hand because the broker must read the API key, version and
correlation id of requests it cannot decode (an unknown version gets ``UNSUPPORTED_VERSION``, not a
dropped connection). Bodies are parsed by kio's compiled reader (a large ProduceRequest by `produce_request`,
which leaves the records in the frame); responses are written by
`encoder` (generated per class, byte-identical to kio's writer).

Measured on the project machine (2 cores, CPython 3.11; ``pytest tests/compat -k timing -s`` prints
them again), per call, best of three:

- ``encode_response`` ProduceResponse v9, 1 topic, 1 partition: 2.4 µs (kio's writer: 15 µs);
  v7 (what aiokafka asks for): 2.0 µs (kio: 7.3 µs).
- ``encode_response`` FetchResponse v12, 1 topic, 4 partitions of 16 KiB records: 8.3 µs (kio: 44 µs);
  of 100 B: 4.7 µs (kio: 40 µs); v11 with 4 x 16 KiB: 5.4 µs (kio: 27 µs).
- ``decode_request`` ProduceRequest v9 with one 1 KiB batch: 3.2-3.4 µs, of which the header 1.2-1.6 µs
  and the `bounds` check 1.0-1.1 µs (kio's reader 0.65-0.75 µs); v7: 3.2 µs.

Versions kio does not know (Produce v0-2, Fetch v0-3, ListOffsets v0, OffsetCommit v0-1, OffsetFetch v0,
CreateTopics v0-1, DeleteTopics v0, DescribeConfigs v0, ...: Kafka 4 removed them) have no classes
here; `decode_request` refuses them with `UnsupportedVersion`.
"""

from __future__ import annotations

import struct
from collections.abc import Generator, Mapping
from functools import cache
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from kio.index import load_request_schema, load_response_schema
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader
from kio.static.constants import EntityType
from logwright.compat.wire import produce_request
from logwright.compat.wire.bounds import body_checker, body_checker_in_steps
from logwright.compat.wire.encoder import entity_encoder, entity_encoder_in_steps
from logwright.compat.wire.framing import Pieces, frame_pieces
from logwright.compat.wire.varints import VarintTooLong, read_uvarint, uvarint

API_VERSIONS_KEY: Final = 18
PRODUCE_KEY: Final = 0

_HEADER_PREFIX = struct.Struct(">hhih")
_CORRELATION = struct.Struct(">i")


class MalformedRequest(ValueError):
    """A request frame could not be read; the message says which request and where it went wrong."""


class UnsupportedVersion(MalformedRequest):
    """kio has no schema for this (api key, version): the body cannot be read, only the header."""


class ResponseEncodingError(ValueError):
    """A handler built a response that cannot be written (a value out of range, a missing field)."""


def _version_ranges() -> dict[int, range]:
    ranges = {}
    for api_key, name in api_key_map.items():
        versions = sorted(v for v, types in schema_name_map[name].items() if EntityType.request in types)
        ranges[api_key] = range(versions[0], versions[-1] + 1)
    return ranges


API_NAMES: Final[Mapping[int, str]] = api_key_map
"""kio's snake_case API names by API key (``0: "produce"``)."""

KNOWN_VERSIONS: Final[Mapping[int, range]] = MappingProxyType(_version_ranges())
"""The versions kio can parse, per API key; contiguous for every key in kio 0.6.5."""


class RequestHeader(NamedTuple):
    """What precedes every request body (a named tuple: built once per request, 4x cheaper than a
    frozen dataclass).

    ``header_length`` is where the body starts. For a version kio does not know it is a best guess:
    header v2 (tagged fields) is assumed above the known range when the newest known version is
    flexible, v1 otherwise.
    """

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_length: int
    flexible: bool


@cache
def request_type(api_key: int, api_version: int) -> type[Any]:
    """kio's request class for ``(api_key, api_version)``; `UnsupportedVersion` if kio has none."""
    if api_version not in KNOWN_VERSIONS.get(api_key, ()):
        raise UnsupportedVersion(f"no schema for API key {api_key} version {api_version}")
    return load_request_schema(api_key, api_version)


@cache
def response_type(api_key: int, api_version: int) -> type[Any]:
    """kio's response class for ``(api_key, api_version)``; `UnsupportedVersion` if kio has none."""
    if api_version not in KNOWN_VERSIONS.get(api_key, ()):
        raise UnsupportedVersion(f"no schema for API key {api_key} version {api_version}")
    return load_response_schema(api_key, api_version)


FIRST_FLEXIBLE_VERSION: Final[Mapping[int, int | None]] = MappingProxyType({
    0: 9, 1: 12, 2: 6, 3: 9, 8: 8, 9: 6, 10: 3, 11: 6, 12: 4, 13: 4, 14: 4, 15: 5, 16: 3, 17: None, 18: 3, 19: 5,
    20: 4, 21: 2, 22: 2, 23: 4, 24: 3, 25: 3, 26: 3, 27: 1, 28: 3, 29: 2, 30: 2, 31: 2, 32: 4, 33: 2, 34: 2, 35: 2,
    36: 2, 37: 2, 38: 2, 39: 2, 40: 2, 41: 2, 42: 2, 43: 2, 44: 1, 45: 0, 46: 0, 47: None, 48: 1, 49: 1, 50: 0,
    51: 0, 52: 0, 53: 1, 54: 1, 55: 0, 56: 2, 57: 0, 58: 0, 59: 0, 60: 0, 61: 0, 62: 0, 63: 0, 64: 0, 65: 0, 66: 0,
    67: 0, 68: 0, 69: 0, 70: 0, 71: 0, 72: 0, 73: 0, 74: 0, 75: 0, 76: 1, 77: 1, 78: 1, 79: 1, 80: 0, 81: 0, 82: 0,
    83: 0, 84: 0, 85: 0, 86: 0, 87: 0, 88: 0, 89: 0, 90: 0, 91: 0, 92: 0,
})
"""The first flexible version (KIP-482) of every API key kio 0.6.5 knows; ``None``: never flexible.

A table rather than a question to kio, which can only answer by loading every schema version below
it: that cost 10-50 ms on the first request of each API key (7% of a one-minute benchmark's broker
CPU). `tests/compat/test_messages.py` checks the table against kio's schemas.
"""


def is_flexible(api_key: int, api_version: int) -> bool:
    """Whether the version uses compact encodings and tagged fields (request header v2).

    Kafka makes every version from some N on flexible, so unknown versions are placed by that N:
    above the known range they are flexible if the newest known version is.
    """
    first = FIRST_FLEXIBLE_VERSION.get(api_key)
    return first is not None and api_version >= first


def response_header_version(api_key: int, api_version: int) -> int:
    """0 (correlation id only) or 1 (plus tagged fields). ApiVersions always answers with v0,
    so that a client can read the answer whatever version it asked for."""
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if is_flexible(api_key, api_version) else 0


def parse_request_header(frame: bytes | bytearray | memoryview) -> RequestHeader:
    """Read the header of any request, even one whose API key or version is unknown."""
    if len(frame) < _HEADER_PREFIX.size:
        raise MalformedRequest(f"a {len(frame)}-byte frame is too short for a request header")
    api_key, api_version, correlation_id, client_id_length = _HEADER_PREFIX.unpack_from(frame, 0)
    position = _HEADER_PREFIX.size
    client_id = None
    if client_id_length >= 0:
        end = position + client_id_length
        if end > len(frame):
            raise MalformedRequest(f"the client id of correlation id {correlation_id} runs past the frame end")
        client_id = str(frame[position:end], "utf-8", "replace")
        position = end
    flexible = is_flexible(api_key, api_version)
    if flexible:
        try:
            position = _skip_tagged_fields(frame, position)
        except MalformedRequest:
            if api_version in KNOWN_VERSIONS.get(api_key, ()):
                raise
    return RequestHeader(api_key, api_version, correlation_id, client_id, position, flexible)


MAX_HEADER_TAGS = 1024
"""Tagged fields a request header may carry (Kafka defines one, in no version we serve): skipped in Python a tag at a
time, a million of them in a 2 MB frame took 120 ms before any handler or bound checked the request."""


def _skip_tagged_fields(frame: bytes | bytearray | memoryview, position: int) -> int:
    if position < len(frame) and frame[position] == 0:
        return position + 1
    try:
        count, position = read_uvarint(frame, position)
        if count > MAX_HEADER_TAGS:
            raise MalformedRequest(f"the request header carries {count} tagged fields, more than {MAX_HEADER_TAGS}")
        for _ in range(count):
            _tag, position = read_uvarint(frame, position)
            size, position = read_uvarint(frame, position)
            position += size
    except (IndexError, VarintTooLong) as error:
        raise MalformedRequest("a varint in the header's tagged fields is truncated or too long") from error
    if position > len(frame):
        raise MalformedRequest("the header's tagged fields run past the frame end")
    return position


def decode_request_in_steps(frame: bytes | bytearray | memoryview, header: RequestHeader
                            ) -> Generator[None, None, Any]:
    """`decode_request`'s request, the `bounds` walk pausing (yielding) every `bounds.STEP_ELEMENTS` elements for a
    caller that gives way between steps: it took 59 of the 75 ms a DescribeGroups of a million names took to decode
    (kio's native reader, the rest, reads in one call). Raises as `decode_request` does."""
    if header.api_key == PRODUCE_KEY:  # Produce's own reader (`produce_request`), a walk of its own
        return decode_request(frame, header)[1]
    cls = request_type(header.api_key, header.api_version)
    try:
        yield from body_checker_in_steps(cls)(frame, header.header_length, len(frame))
        request, _size = _reader(cls)(frame if type(frame) is bytes else bytes(frame), header.header_length)
    except Exception as error:
        raise _unreadable(header, error) from error
    return request


def _reader(cls: type[Any]) -> Any:
    reader = _READERS.get(cls)
    if reader is None:
        reader = _READERS[cls] = entity_reader(cls)
    return reader


_READERS: dict[type[Any], Any] = {}


def decode_request(frame: bytes | bytearray | memoryview, header: RequestHeader | None = None
                   ) -> tuple[RequestHeader, Any]:
    """The header and kio request object of one frame.

    Bytes after the body are ignored, as Kafka does. A large ProduceRequest's records are views of ``frame``
    (`produce_request`, pure Python), everything else is kio's, once `bounds` has checked every count and
    length in the body against the bytes present (kio's native reader trusts them). Raises
    `UnsupportedVersion` when kio has no schema for the version and `MalformedRequest` when the body cannot
    be read or fails that check. ``header``: this frame's, when the caller has read it already.
    """
    if header is None:
        header = parse_request_header(frame)
    cls = request_type(header.api_key, header.api_version)
    try:
        if (header.api_key == PRODUCE_KEY and len(frame) >= produce_request.VIEW_FROM_BYTES
                and header.api_version <= produce_request.LAST_VERSION):
            request = produce_request.read_produce_request(frame, header.header_length, header.api_version)
        else:
            body_checker(cls)(frame, header.header_length, len(frame))
            request, _size = _reader(cls)(frame if type(frame) is bytes else bytes(frame), header.header_length)
    except Exception as error:
        raise _unreadable(header, error) from error
    return header, request


def _unreadable(header: RequestHeader, error: Exception) -> MalformedRequest:
    return MalformedRequest(f"{API_NAMES[header.api_key]} v{header.api_version} request (correlation id "
                            f"{header.correlation_id}) is unreadable: {type(error).__name__}: {error}")


def encode_response(api_key: int, api_version: int, correlation_id: int, response: Any) -> bytes:
    """Response header and body, ready for `framing.encode_frame`.

    ``response`` must be kio's class for exactly this API key and version.
    """
    return b"".join(_response_parts(api_key, api_version, correlation_id, response))


def encode_response_frame(api_key: int, api_version: int, correlation_id: int, response: Any) -> list[bytes]:
    """The whole response frame (size prefix included) as pieces for the socket (`framing.frame_pieces`):
    record batches are not copied."""
    return frame_pieces(_response_parts(api_key, api_version, correlation_id, response))


PARTS_PER_STEP: Final = 8_192
"""Parts (fields, or runs of fixed-width ones) an answer written in steps gathers before its caller may give way:
about 2,500 entities, a millisecond or two of writing and joining."""


def encode_response_frame_in_steps(api_key: int, api_version: int, correlation_id: int,
                                   response: Any) -> Generator[None, None, list[bytes]]:
    """`encode_response_frame`, pausing (yielding) every `PARTS_PER_STEP` parts or so for a caller that gives way
    between steps: an answer of a million entities (a hostile ElectLeaders, a DescribeGroups of a million names)
    was written and joined in one stretch of 470 ms (`encoder.entity_encoder_in_steps`). Returns the pieces."""
    cls = type(response)
    steps = entity_encoder_in_steps(cls)
    if steps is None:
        return encode_response_frame(api_key, api_version, correlation_id, response)
    parts = _header_parts(cls, api_key, api_version, correlation_id)
    pieces = Pieces()
    try:
        for _ in steps(response, parts.append):
            if len(parts) >= PARTS_PER_STEP:
                pieces.add(parts)
                parts.clear()
                yield
    except Exception as error:
        raise _encoding_error(cls, api_version, correlation_id, error) from error
    pieces.add(parts)
    return pieces.framed()


def _response_parts(api_key: int, api_version: int, correlation_id: int, response: Any) -> list[Any]:
    cls = type(response)
    parts = _header_parts(cls, api_key, api_version, correlation_id)
    try:
        entity_encoder(cls)(response, parts.append)
    except Exception as error:
        raise _encoding_error(cls, api_version, correlation_id, error) from error
    return parts


def _header_parts(cls: type[Any], api_key: int, api_version: int, correlation_id: int) -> list[Any]:
    if getattr(cls, "__api_key__", None) != api_key or getattr(cls, "__version__", None) != api_version:
        raise ResponseEncodingError(f"a {cls.__name__} cannot answer API key {api_key} version {api_version}")
    parts: list[Any] = [_CORRELATION.pack(correlation_id)]
    if response_header_version(api_key, api_version):
        parts.append(b"\x00")
    return parts


def _encoding_error(cls: type[Any], api_version: int, correlation_id: int, error: Exception) -> ResponseEncodingError:
    return ResponseEncodingError(f"cannot encode {cls.__name__} v{api_version} (correlation id {correlation_id}): "
                                 f"{type(error).__name__}: {error}")


def encode_request(request: Any, correlation_id: int, client_id: str | None) -> bytes:
    """Request header and body (for the native client and for tests)."""
    cls = type(request)
    name = None if client_id is None else client_id.encode()
    header = _HEADER_PREFIX.pack(cls.__api_key__, cls.__version__, correlation_id, -1 if name is None else len(name))
    parts: list[Any] = [header, name or b""]
    if cls.__flexible__:
        parts.append(uvarint(0))
    entity_encoder(cls)(request, parts.append)
    return b"".join(parts)


def decode_response(api_key: int, api_version: int, payload: bytes) -> tuple[int, Any]:
    """The correlation id and kio response object of one response frame (for the native client)."""
    if len(payload) < _CORRELATION.size:
        raise ValueError(f"a {len(payload)}-byte response is too short for a response header")
    (correlation_id,) = _CORRELATION.unpack_from(payload, 0)
    position = _CORRELATION.size
    if response_header_version(api_key, api_version):
        position = _skip_tagged_fields(payload, position)
    cls = response_type(api_key, api_version)
    body_checker(cls)(payload, position, len(payload))
    response, _size = _reader(cls)(payload, position)
    return correlation_id, response
