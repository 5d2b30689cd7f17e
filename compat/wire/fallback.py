"""Answers for requests no handler serves: unsupported versions and internal errors.

Kafka clients must get an error code, not a dropped connection, for a version the broker does not
serve. ApiVersions gets the v0 answer the protocol prescribes (so the client can retry with a version
from the list); Produce v0-v2 (the old message formats kio cannot parse) are answered per partition by
a small hand-written codec; any other API kio knows gets its response with the error code set and
every other field empty.
"""

from __future__ import annotations

import dataclasses
import datetime
import struct
import typing
import uuid
from typing import Any

from logwright.compat.errors import ErrorCode
from logwright.compat.wire.messages import RequestHeader, encode_response, response_type

API_VERSIONS_KEY = 18
PRODUCE_KEY = 0


def unsupported_version_response(header: RequestHeader, frame: bytes) -> bytes | None:
    """The UNSUPPORTED_VERSION answer to ``frame``, or ``None`` if the connection must close."""
    if header.api_key == API_VERSIONS_KEY:
        return _api_versions_v0_error(header.correlation_id)
    if header.api_key == PRODUCE_KEY and 0 <= header.api_version <= 2:
        try:
            return _old_produce_error(header, frame)
        except (struct.error, UnicodeDecodeError, IndexError):
            return None
    return error_response(header.api_key, header.api_version, header.correlation_id, ErrorCode.UNSUPPORTED_VERSION)


def error_response(api_key: int, api_version: int, correlation_id: int, code: ErrorCode) -> bytes | None:
    """A response of the request's own type and version carrying only ``code``, if kio knows the type."""
    try:
        cls = response_type(api_key, api_version)
    except Exception:
        return None
    if "error_code" not in {field.name for field in dataclasses.fields(cls)}:
        return None
    try:
        response = _empty(cls, code)
        return encode_response(api_key, api_version, correlation_id, response)
    except Exception:
        return None


def _api_versions_v0_error(correlation_id: int) -> bytes:
    from logwright.compat.registry import HANDLERS

    entries = sorted(HANDLERS.values(), key=lambda entry: entry.api_key)
    body = struct.pack(">ihi", correlation_id, ErrorCode.UNSUPPORTED_VERSION, len(entries))
    body += b"".join(struct.pack(">hhh", e.api_key, e.min_version, e.max_version) for e in entries)
    return body


def _old_produce_error(header: RequestHeader, frame: bytes) -> bytes | None:
    """Parse a Produce v0-v2 body just far enough to name its partitions in the error answer."""
    position = header.header_length
    acks, _timeout, topic_count = struct.unpack_from(">hii", frame, position)
    position += 10
    topics: list[tuple[bytes, list[int]]] = []
    for _ in range(topic_count):
        (name_length,) = struct.unpack_from(">h", frame, position)
        name = frame[position + 2 : position + 2 + name_length]
        position += 2 + name_length
        (partition_count,) = struct.unpack_from(">i", frame, position)
        position += 4
        partitions = []
        for _ in range(partition_count):
            partition, size = struct.unpack_from(">ii", frame, position)
            position += 8 + max(size, 0)
            partitions.append(partition)
        topics.append((name, partitions))
    if acks == 0:
        return None
    body = struct.pack(">ii", header.correlation_id, len(topics))
    for name, partitions in topics:
        body += struct.pack(">h", len(name)) + name + struct.pack(">i", len(partitions))
        for partition in partitions:
            body += struct.pack(">ihq", partition, ErrorCode.UNSUPPORTED_VERSION, -1)
            if header.api_version >= 2:
                body += struct.pack(">q", -1)
    if header.api_version >= 1:
        body += struct.pack(">i", 0)
    return body


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type[Any]) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _empty(cls: type[Any], code: ErrorCode) -> Any:
    values: dict[str, Any] = {}
    hints = _hints(cls)
    for field in dataclasses.fields(cls):
        if field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING:
            continue
        values[field.name] = _empty_value(hints[field.name], code, field.name)
    if "error_code" in values or any(f.name == "error_code" for f in dataclasses.fields(cls)):
        values["error_code"] = code
    return cls(**values)


def _empty_value(hint: Any, code: ErrorCode, name: str) -> Any:
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        if type(None) in arguments:
            return None
        hint = arguments[0]
        origin = typing.get_origin(hint)
    if origin is tuple:
        return ()
    if isinstance(hint, type):
        if issubclass(hint, datetime.timedelta):
            return datetime.timedelta(0)
        if issubclass(hint, bool):
            return False
        if issubclass(hint, int):
            return code if "error" in name else 0
        if issubclass(hint, str):
            return ""
        if issubclass(hint, bytes):
            return b""
        if issubclass(hint, uuid.UUID):
            return uuid.UUID(int=0)
        if dataclasses.is_dataclass(hint):
            return _empty(hint, code)
    raise TypeError(f"no empty value for {hint!r}")
