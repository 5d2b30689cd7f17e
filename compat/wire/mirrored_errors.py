"""Error answers for responses without a top-level error code: the request's own topics, partitions or
resources, each carrying the code.

When a handler fails (a store that cannot write answers KAFKA_STORAGE_ERROR), `fallback.error_response`
covers responses with a top-level ``error_code``. OffsetCommit, CreateTopics, DeleteRecords, Metadata and
their kind have none: a client learns the outcome per entry, and an empty list would read as "nothing
went wrong". So the answer is built from the request: every nested list the response shares by name with
the request (``topics``, ``partitions``) is mirrored entry by entry, same-named fields (``name``,
``partition_index``, ``topic_id``) copied, every ``error_code`` set. A response that shares no list
with its request has no such answer (``None``): the connection closes, as before.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from logwright.compat.errors import ErrorCode
from logwright.compat.wire.fallback import empty_value, field_hints
from logwright.compat.wire.messages import encode_response, response_type


def mirrored_error_response(api_key: int, api_version: int, correlation_id: int, request: Any,
                            code: ErrorCode) -> bytes | None:
    """The response to ``request`` with ``code`` on each entry it names, or ``None`` if it cannot be built."""
    try:
        mirrored: list[bool] = []
        response = _mirror(response_type(api_key, api_version), request, code, mirrored)
        if not mirrored:
            return None
        return encode_response(api_key, api_version, correlation_id, response)
    except Exception:
        return None


def _mirror(cls: type[Any], source: Any, code: ErrorCode, mirrored: list[bool]) -> Any:
    hints = field_hints(cls)
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        item_type = _item_dataclass(hint)
        given = getattr(source, field.name, None)
        if field.name == "error_code":
            values[field.name] = code
        elif item_type is not None and isinstance(given, tuple):
            values[field.name] = tuple(_mirror(item_type, item, code, mirrored) for item in given)
            mirrored.append(True)
        elif given is not None and item_type is None and not isinstance(given, tuple):
            values[field.name] = given
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            values[field.name] = empty_value(hint, code, field.name)
    return cls(**values)


def _item_dataclass(hint: Any) -> type[Any] | None:
    """``X`` for ``tuple[X, ...]`` where X is a dataclass (a nested list of entries), else ``None``."""
    if typing.get_origin(hint) is tuple:
        arguments = typing.get_args(hint)
        if arguments and isinstance(arguments[0], type) and dataclasses.is_dataclass(arguments[0]):
            return arguments[0]
    return None
