"""Answers for requests no handler serves: unsupported versions and internal errors.

Kafka clients must get an error code, not a dropped connection, for a version the broker does not
serve. ApiVersions gets the v0 answer the protocol prescribes (so the client can retry with a version
from the list); any other API kio knows gets its response with the error code set and every other field
empty. No body is read here. Produce v0-v2 (the old message formats, KIP-896) close the connection, as
Kafka 4 does: their answer would have to name every partition, i.e. parse a body kio cannot read, and
the hand parser that once did so looped 2^31 times on a negative topic-name length (issue 12).
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
    if header.api_key == PRODUCE_KEY and header.api_version <= 2:
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
        response = empty_entity(cls, code)
        return encode_response(api_key, api_version, correlation_id, response)
    except Exception:
        return None


def _api_versions_v0_error(correlation_id: int) -> bytes:
    from logwright.compat.registry import HANDLERS

    entries = sorted(HANDLERS.values(), key=lambda entry: entry.api_key)
    body = struct.pack(">ihi", correlation_id, ErrorCode.UNSUPPORTED_VERSION, len(entries))
    body += b"".join(struct.pack(">hhh", e.api_key, e.advertised_min, e.max_version) for e in entries)
    return body


_HINTS: dict[type, dict[str, Any]] = {}


def field_hints(cls: type[Any]) -> dict[str, Any]:
    """``typing.get_type_hints(cls)``, kept per class: error answers are built often, the hints never change."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def empty_entity(cls: type[Any], code: ErrorCode = ErrorCode.NONE) -> Any:
    """An entity of kio class ``cls`` with every field empty (zero, empty, null) and error codes set to ``code``."""
    values: dict[str, Any] = {}
    hints = field_hints(cls)
    for field in dataclasses.fields(cls):
        if field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING:
            continue
        values[field.name] = empty_value(hints[field.name], code, field.name)
    if "error_code" in values or any(f.name == "error_code" for f in dataclasses.fields(cls)):
        values["error_code"] = code
    return cls(**values)


def empty_value(hint: Any, code: ErrorCode, name: str) -> Any:
    """The empty value of a field typed ``hint``: null where allowed, else zero or empty; ``code`` for an error code."""
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
            return empty_entity(hint, code)
    raise TypeError(f"no empty value for {hint!r}")
