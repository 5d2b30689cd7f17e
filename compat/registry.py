"""The handler table: one module per API key registers its handler and the versions it serves.

ApiVersions is generated from this table (intersected with what kio can parse), so a client is
never offered a version the broker does not implement. Handlers are coroutines taking the request
context and the decoded kio request, returning a kio response (or ``None`` for no response, as for a
Produce with ``acks=0``).
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

if TYPE_CHECKING:
    from logwright.compat.authentication import ConnectionAuthentication
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
    request_bytes: int = 0
    """The request's body, as Kafka's ``sizeInBytes`` counts it (the header not included): what a produce quota
    records."""
    authentication: ConnectionAuthentication | None = None
    """The connection's listener and SASL state (None in tests that build a context by hand: a PLAINTEXT
    client)."""

    @property
    def principal(self) -> str:
        """The user the client is (Kafka's ``User:`` principal): ANONYMOUS on a PLAINTEXT listener."""
        return self.authentication.principal if self.authentication is not None else "ANONYMOUS"

    @property
    def advertised(self) -> tuple[str, int]:
        """The host and port this client is told the broker has: its own listener's."""
        if self.authentication is not None:
            listener = self.authentication.listener
            return listener.advertised_host, listener.advertised_port
        settings = self.broker.settings
        return settings.public_host, settings.public_port


class CloseConnection(Exception):  # noqa: N818 - it is an instruction to the server, not an error of the handler
    """Raised by a handler whose request is answered by closing its connection, as Kafka answers an ``acks=0``
    Produce that failed (the producer has no answer to read, so the closed connection tells it): the answers
    before it are sent, the connection closes, nothing is logged as an error."""


RequestT = TypeVar("RequestT")
TypedHandler: TypeAlias = Callable[[RequestContext, RequestT], Awaitable[Any]]
"""A handler as its module writes it: ``request`` typed as the versions it serves (a union of kio classes for
Kafka's keys, ``bytes`` for extension keys)."""
Handler: TypeAlias = TypedHandler[Any]
"""A handler as the table holds it: the server passes whatever it decoded for the key, so the table cannot
name one request type for all; each handler's own signature does, and mypy checks its body against it."""
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
    at_once: bool = False
    """Run up to its first ``await`` in the turn that read the request, and the step after it by hand
    (`start_at_once`): only for handlers that need no current task (no ``asyncio.timeout``) before their second
    ``await``."""
    authorize: Callable[[RequestContext, bytes], bool] | None = None
    """For extension keys, with an authorizer on: whether the request's principal may call it (read the body,
    ask `compat.authorization.allowed`). Without it only super users may: an extension names no resource Kafka's
    ACLs know, and the broker cannot read its body for one."""
    advertised_min_version: int | None = None
    """The lowest version ApiVersions names when it is below ``min_version`` (Produce's 0: see `handler`)."""

    @property
    def advertised_min(self) -> int:
        return self.min_version if self.advertised_min_version is None else self.advertised_min_version


HANDLERS: dict[int, HandlerEntry] = {}

def handler(api_key: int, name: str, min_version: int, max_version: int, at_once: bool = False,
            advertised_min_version: int | None = None) -> Callable[[TypedHandler[RequestT]], TypedHandler[RequestT]]:
    """Register ``handle`` for ``api_key`` versions ``min_version..max_version`` inclusive; the function keeps
    its own type (tests call it with the request class of one version). ``at_once``: see `HandlerEntry`.
    ``advertised_min_version``: a lower first version for ApiVersions to name than the handler serves, which only
    Produce has (Kafka 4.x names Produce 0 though versions 0-2 are gone, KAFKA-18659: librdkafka before its fix
    turns compression off against a broker whose Produce range lacks them); a request of those versions is still
    refused as an unserved one (`wire.fallback`)."""

    def register(handle: TypedHandler[RequestT]) -> TypedHandler[RequestT]:
        if api_key in HANDLERS:
            raise ValueError(f"API key {api_key} ({name}) has two handlers")
        HANDLERS[api_key] = HandlerEntry(api_key, name, min_version, max_version, handle, at_once=at_once,
                                         advertised_min_version=advertised_min_version)
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


_OWN_FIELDS: dict[type, frozenset[str]] = {}
_ANY_VERSION_FIELDS: dict[type, frozenset[str]] = {}


def _own_fields(cls: type[Any]) -> frozenset[str]:
    names = _OWN_FIELDS.get(cls)
    if names is None:
        names = _OWN_FIELDS[cls] = frozenset(field.name for field in dataclasses.fields(cls))
    return names


_KIO_CLASS = re.compile(r"^class (\w+):\n(.*?)(?=^\S|\Z)", re.MULTILINE | re.DOTALL)
_KIO_FIELD = re.compile(r"^    ([a-z]\w*): ", re.MULTILINE)


def _any_version_fields(cls: type[Any]) -> frozenset[str]:
    """The field names of the classes named like ``cls`` in every version of its kio module
    (``kio.schema.<api>.v<N>.request`` or ``.response``); only ``cls``'s own for a class outside kio.

    Read from kio's generated source rather than by importing every version (importing Fetch's fifteen
    response modules took 165 ms on the first old-version Fetch; reading them takes a few ms);
    `tests/compat/test_registry_make.py` checks the reading against the dataclasses for every kio class."""
    names = _ANY_VERSION_FIELDS.get(cls)
    if names is not None:
        return names
    found = set(_own_fields(cls))
    parts = cls.__module__.split(".")
    if len(parts) == 5 and parts[:2] == ["kio", "schema"]:
        found.update(*kio_source_fields(parts[2], parts[4]).get(cls.__name__, ()))
    names = _ANY_VERSION_FIELDS[cls] = frozenset(found)
    return names


@cache
def kio_source_fields(api_name: str, kind: str) -> dict[str, list[frozenset[str]]]:
    """Class name -> the field names it has in each version of ``kio.schema.<api_name>.v<N>.<kind>``."""
    package = Path(importlib.import_module(f"kio.schema.{api_name}").__path__[0])
    classes: dict[str, list[frozenset[str]]] = {}
    for version in pkgutil.iter_modules([str(package)]):
        source = package / version.name / f"{kind}.py"
        if source.is_file():
            for match in _KIO_CLASS.finditer(source.read_text()):
                classes.setdefault(match[1], []).append(frozenset(_KIO_FIELD.findall(match[2])))
    return classes


ERROR_MESSAGE_CHARS = 4096
"""Longest error message answered: messages quote names (a topic name of 32,767 characters made a message too long
for a non-flexible version's int16 string length, and the answer could not be encoded); 4,096 characters are at
most 16 KiB of UTF-8."""


def make(cls: type[Any], **values: Any) -> Any:
    """Build a kio entity of any version from the fields it has, ignoring fields that version lacks.

    Handlers describe a response once, with the fields of the newest version; older versions simply
    do not carry what they cannot say. A keyword no version of the message has is a mistake
    (``error_mesage=``): `TypeError` naming it, never a silently dropped field. An ``error_message`` longer than
    `ERROR_MESSAGE_CHARS` is cut there.
    """
    own = _OWN_FIELDS.get(cls)
    if own is None:
        own = _own_fields(cls)
    message = values.get("error_message")
    if message is not None and len(message) > ERROR_MESSAGE_CHARS:
        values["error_message"] = message[:ERROR_MESSAGE_CHARS - 3] + "..."
    names = values.keys()
    if names <= own:
        return cls(**values)
    if not names <= _ANY_VERSION_FIELDS.get(cls, own):
        unknown = names - _any_version_fields(cls)
        if unknown:
            raise TypeError(f"{cls.__module__}.{cls.__qualname__} has no field {', '.join(sorted(unknown))} "
                            "in any version")
    return cls(**{name: value for name, value in values.items() if name in own})


def has_field(cls_or_obj: Any, name: str) -> bool:
    cls = cls_or_obj if isinstance(cls_or_obj, type) else type(cls_or_obj)
    return name in _own_fields(cls)


@cache
def response_module(api_name: str, version: int) -> ModuleType:
    """``kio.schema.<api_name>.v<version>.response``: where a handler finds its version's classes."""
    return importlib.import_module(f"kio.schema.{api_name}.v{version}.response")
