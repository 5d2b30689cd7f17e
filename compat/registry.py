"""The handler table: one module per API key registers its handler and the versions it serves.

ApiVersions is generated from this table (intersected with what kio can parse), so a client is
never offered a version the broker does not implement. Handlers are coroutines taking the request
context and the decoded kio request, returning a kio response (or ``None`` for no response, as for a
Produce with ``acks=0``).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from logwright.compat.broker import Broker


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What a handler may know about the request besides its body."""

    broker: Broker
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    connection_id: int
    client_host: str


Handler = Callable[[RequestContext, Any], Awaitable[Any]]
ErrorAnswer = Callable[[int, str], bytes]
"""``(error_code, message) -> body``: how an extension key answers a request its handler failed on."""


@dataclass(frozen=True, slots=True)
class HandlerEntry:
    """``error_answer`` matters only for extension keys, whose bodies the server cannot write itself:
    without it, a request whose handler raised is answered by closing that connection."""

    api_key: int
    name: str
    min_version: int
    max_version: int
    handle: Handler
    error_answer: ErrorAnswer | None = None


HANDLERS: dict[int, HandlerEntry] = {}

def handler(api_key: int, name: str, min_version: int, max_version: int) -> Callable[[Handler], Handler]:
    """Register ``handle`` for ``api_key`` versions ``min_version..max_version`` inclusive."""

    def register(handle: Handler) -> Handler:
        if api_key in HANDLERS:
            raise ValueError(f"API key {api_key} ({name}) has two handlers")
        HANDLERS[api_key] = HandlerEntry(api_key, name, min_version, max_version, handle)
        return handle

    return register


def register_extension(entry: HandlerEntry) -> None:
    """Plugins add API keys outside Kafka's range through the same table.

    Registering an equal entry again changes nothing (a second broker in one process loading the same
    plugins); a different handler for a taken key is refused.
    """
    if HANDLERS.get(entry.api_key) == entry:
        return
    if entry.api_key in HANDLERS:
        raise ValueError(f"API key {entry.api_key} ({entry.name}) has two handlers")
    HANDLERS[entry.api_key] = entry


_FIELD_NAMES: dict[type, frozenset[str]] = {}


def _field_names(cls: type[Any]) -> frozenset[str]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = frozenset(field.name for field in dataclasses.fields(cls))
    return names


def make(cls: type[Any], **values: Any) -> Any:
    """Build a kio entity of any version from the fields it has, ignoring fields that version lacks.

    Handlers describe a response once, with the fields of the newest version; older versions simply
    do not carry what they cannot say.
    """
    names = _field_names(cls)
    return cls(**{name: value for name, value in values.items() if name in names})


def has_field(cls_or_obj: Any, name: str) -> bool:
    cls = cls_or_obj if isinstance(cls_or_obj, type) else type(cls_or_obj)
    return name in _field_names(cls)


@cache
def response_module(api_name: str, version: int) -> ModuleType:
    """``kio.schema.<api_name>.v<version>.response``: where a handler finds its version's classes."""
    return importlib.import_module(f"kio.schema.{api_name}.v{version}.response")
