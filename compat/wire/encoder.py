"""Fast serialisation of kio entities: one generated Python function per entity class.

kio's own writer is pure Python that walks every field through a generic writer and an
``io.BytesIO``; answering every Produce and Fetch with it costs more than the rest of the request.
Here each class gets source code written once, at first use: consecutive fixed-width fields are packed
by one precompiled ``struct.Struct``, strings and lengths are written inline, and record payloads are
handed on as they are (a records field may be a list of stored batches), so Python never copies them.
The output is byte-for-byte what kio writes (a property test checks every request and response class
kio knows).
"""

from __future__ import annotations

import dataclasses
import datetime
import struct
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar, cast

from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)
from logwright.compat.wire.varints import uvarint

Append = Callable[[Any], None]
Writer = Callable[[Any, Append], None]
SteppedWriter = Callable[[Any, Append], Iterator[None]]

_FIXED = {
    "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B", "uint16": "H", "uint32": "I",
    "uint64": "Q", "float64": "d", "bool": "?", "error_code": "h", "timedelta_i32": "i", "timedelta_i64": "q",
    "datetime_i64": "q", "uuid": "16s",
}
_CONVERT = {"timedelta_i32": "_millis", "timedelta_i64": "_millis", "datetime_i64": "_epoch_ms", "uuid": "_uuid"}
_NULLABLE_FIXED = {"datetime_i64", "uuid"}
_SMALL_UVARINTS = tuple(uvarint(n) for n in range(128))
_ZERO_UUID = bytes(16)


def _millis(value: datetime.timedelta | int) -> int:
    return value if isinstance(value, int) else round(value.total_seconds() * 1000)


def _epoch_ms(value: datetime.datetime | int | None) -> int:
    if value is None:
        return -1
    return value if isinstance(value, int) else round(value.timestamp() * 1000)


def _uuid(value: uuid.UUID | None) -> bytes:
    return _ZERO_UUID if value is None else value.bytes


def _records_size(records: bytes | list[bytes]) -> int:
    return sum(map(len, records)) if records.__class__ is list else len(records)


_Name = TypeVar("_Name")


class Encoded(bytes):
    """An entity of an array already written by `encode_entity` (for the same class and version): written as
    it is. A handler that answers the same entity again and again (a big topic's Metadata) keeps its bytes."""


def answered_once(names: Iterable[_Name], describe: Callable[[_Name], Any]) -> tuple[Any, ...]:
    """``describe(name)`` for each name, described once however often the request names it: a name named again is
    answered again, as Kafka does, with the first answer's bytes, encoded once (`Encoded`), which
    `framing.frame_pieces` hands the socket by reference. The describe APIs (DescribeGroups, ConsumerGroupDescribe,
    ShareGroupDescribe) list names a client may repeat: a 30 KB DescribeGroups naming one group of a 32 KB member id
    3,000 times was a 200 MB answer, every copy built and encoded. A name's first answer stays an entity."""
    return tuple(map(OnceAnswered(describe), names))


class OnceAnswered(Generic[_Name]):
    """`answered_once` a name at a time, for a caller that gives way between names (`turns.Slices`)."""

    __slots__ = ("_answered", "_describe")

    def __init__(self, describe: Callable[[_Name], Any]) -> None:
        self._describe = describe
        self._answered: dict[_Name, Any] = {}

    def __call__(self, name: _Name) -> Any:
        answer = self._answered.get(name)
        if answer is None:
            answer = self._answered[name] = self._describe(name)
        elif answer.__class__ is not Encoded:  # named a second time: its bytes from now on
            answer = self._answered[name] = Encoded(encode_entity(answer))
        return answer


def encode_entity(entity: Any) -> bytes:
    """The wire bytes of one kio entity (request or response body, without any header)."""
    parts: list[Any] = []
    entity_encoder(type(entity))(entity, parts.append)
    return b"".join(parts)


def entity_encoder(cls: type[Any]) -> Writer:
    """The generated writer for ``cls``: ``writer(entity, append)`` appends its bytes in order."""
    writer = _WRITERS.get(cls)
    if writer is None:
        writer = _WRITERS[cls] = _Generator(cls).compile()
    return writer


_WRITERS: dict[type[Any], Writer] = {}

STEP_ITEMS = 256
"""Entities of an array a stepped writer writes between two of its steps (unless a nested array steps first)."""


def entity_encoder_in_steps(cls: type[Any]) -> SteppedWriter | None:
    """A writer for ``cls`` that pauses (yields) as it goes, every `STEP_ITEMS` entities of an array and after each
    array, so that its caller can give way between steps: a 41 MB answer of a million entities took 210 ms to write
    in one stretch. ``None`` when ``cls`` holds no array of entities at any depth (nothing worth stepping through:
    the plain `entity_encoder` writes it). The bytes are `entity_encoder`'s."""
    if not _has_entity_arrays(cls):
        return None
    writer = _STEPPED_WRITERS.get(cls)
    if writer is None:
        writer = _STEPPED_WRITERS[cls] = cast("SteppedWriter", _Generator(cls, stepped=True).compile())
    return writer


_STEPPED_WRITERS: dict[type[Any], SteppedWriter] = {}


def _has_entity_arrays(cls: type[Any]) -> bool:
    known = _ENTITY_ARRAYS.get(cls)
    if known is None:
        kinds = [classify_field(field) for field in dataclasses.fields(cls)]
        known = _ENTITY_ARRAYS[cls] = any(
            isinstance(kind, EntityTupleField) or isinstance(kind, EntityField) and _has_entity_arrays(kind.type_)
            for kind in kinds)
    return known


_ENTITY_ARRAYS: dict[type[Any], bool] = {}


class _Generator:
    """Writes the source of one class's writer; nested classes get writers of their own. A stepped writer is a
    generator function (`entity_encoder_in_steps`); its tagged fields are written without steps."""

    def __init__(self, cls: type[Any], stepped: bool = False) -> None:
        self.cls = cls
        self.stepped = stepped
        self.flexible: bool = cls.__flexible__
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = {
            "_uv": uvarint, "_SMALL": _SMALL_UVARINTS, "_millis": _millis, "_epoch_ms": _epoch_ms, "_uuid": _uuid,
            "_pack": struct.pack, "_size": _records_size, "_Encoded": Encoded,
        }
        self.pending: list[tuple[str, str]] = []
        self.counter = 0

    def name(self, prefix: str, value: Any) -> str:
        self.counter += 1
        name = f"_{prefix}{self.counter}"
        self.namespace[name] = value
        return name

    def compile(self) -> Writer:
        fields = dataclasses.fields(self.cls)
        tagged = [(get_field_tag(f), f) for f in fields if get_field_tag(f) is not None]
        if tagged and not self.flexible:
            raise ValueError(f"{self.cls.__name__} has tagged fields but is not a flexible version")
        for field in fields:
            if get_field_tag(field) is None:
                self.field(field, f"e.{field.name}", "append", "    ", optional=is_optional(field))
        self.flush("append", "    ")
        if self.flexible:
            stepped, self.stepped = self.stepped, False  # a tagged field is written whole, then framed
            self.tagged_fields(sorted(tagged, key=lambda item: int(item[0] or 0)))
            self.stepped = stepped
        if self.stepped:
            self.lines.append("    if False:\n        yield")  # a generator function even if no array steps
        source = "def write(e, append):\n" + ("\n".join(self.lines) or "    pass") + "\n"
        exec(compile(source, f"<encoder {self.cls.__module__}.{self.cls.__name__}>", "exec"), self.namespace)
        writer: Writer = self.namespace["write"]
        return writer

    def tagged_fields(self, tagged: list[tuple[Any, dataclasses.Field[Any]]]) -> None:
        if not tagged:
            self.lines.append("    append(b'\\x00')")
            return
        self.lines.append("    tags = []")
        for tag, field in tagged:
            default = self.name("default", get_tagged_field_default(field))
            self.lines += [f"    v = e.{field.name}", f"    if v is not {default} and v != {default}:",
                           "        sub = []"]
            self.field(field, "v", "sub.append", "        ", optional=False)
            self.flush("sub.append", "        ")
            self.lines += ["        data = b''.join(sub)",
                           f"        tags.append(_uv({int(tag)}) + _uv(len(data)) + data)"]
        self.lines += ["    append(_uv(len(tags)))", "    append(b''.join(tags))"]

    def flush(self, append: str, indent: str) -> None:
        """Emit the run of fixed-width fields gathered so far as one ``struct`` call."""
        if not self.pending:
            return
        packer = self.name("struct", struct.Struct(">" + "".join(fmt for fmt, _ in self.pending)))
        self.lines.append(f"{indent}{append}({packer}.pack({', '.join(expr for _, expr in self.pending)}))")
        self.pending = []

    def field(self, field: dataclasses.Field[Any], value: str, append: str, indent: str, optional: bool) -> None:
        kind = classify_field(field)
        if isinstance(kind, PrimitiveField):
            self.primitive(get_schema_field_type(field), value, append, indent, optional)
            return
        self.flush(append, indent)
        if isinstance(kind, EntityField):
            write = self.nested_writer(kind.type_)
            if optional:
                self.lines += [f"{indent}if {value} is None:", f"{indent}    {append}(b'\\xff')",
                               f"{indent}else:", f"{indent}    {append}(b'\\x01')",
                               f"{indent}    {write}({value}, {append})"]
            else:
                self.lines.append(f"{indent}{write}({value}, {append})")
            return
        self.lines.append(f"{indent}items = {value}")
        inner = indent
        if optional:
            null = "b'\\x00'" if self.flexible else "b'\\xff\\xff\\xff\\xff'"
            self.lines += [f"{indent}if items is None:", f"{indent}    {append}({null})", f"{indent}else:"]
            inner = indent + "    "
        length = "_uv(len(items) + 1)" if self.flexible else "_pack('>i', len(items))"
        self.lines.append(f"{inner}{append}({length})")
        if isinstance(kind, EntityTupleField):
            write = self.nested_writer(kind.type_)
            self.lines += [f"{inner}for item in items:", f"{inner}    if item.__class__ is _Encoded:",
                           f"{inner}        {append}(item)", f"{inner}    else:",
                           f"{inner}        {write}(item, {append})"]
            if self.stepped:  # a step every STEP_ITEMS entities, and one after the array
                self.lines[-5:-5] = [f"{inner}step = 0"]
                self.lines += [f"{inner}    step += 1", f"{inner}    if step == {STEP_ITEMS}:",
                               f"{inner}        step = 0", f"{inner}        yield", f"{inner}yield"]
        elif isinstance(kind, PrimitiveTupleField):
            kafka_type = get_schema_field_type(field)
            if kafka_type in _FIXED and kafka_type not in _CONVERT:
                fmt = _FIXED[kafka_type]
                self.lines.append(f"{inner}{append}(_pack('>%d{fmt}' % len(items), *items))")
            else:
                self.lines.append(f"{inner}for item in items:")
                self.primitive(kafka_type, "item", append, inner + "    ", False)
                self.flush(append, inner + "    ")

    def nested_writer(self, cls: type[Any]) -> str:
        """How the generated code writes an entity of ``cls``: a call, or in a stepped writer through its steps."""
        if self.stepped:
            stepped = entity_encoder_in_steps(cls)
            if stepped is not None:
                return "yield from " + self.name("steps", stepped)
        return self.name("write", entity_encoder(cls))

    def primitive(self, kafka_type: str, value: str, append: str, indent: str, optional: bool) -> None:
        if kafka_type in _FIXED:
            if optional and kafka_type not in _NULLABLE_FIXED:
                raise NotImplementedError(f"nullable {kafka_type} fields are not part of the Kafka protocol")
            convert = _CONVERT.get(kafka_type)
            self.pending.append((_FIXED[kafka_type], f"{convert}({value})" if convert else value))
            return
        if kafka_type not in ("string", "bytes", "records"):
            raise NotImplementedError(f"no encoder for Kafka type {kafka_type!r}")
        self.flush(append, indent)
        encode = ".encode()" if kafka_type == "string" else ""
        inner = indent
        self.lines.append(f"{indent}v = {value}")
        if optional:
            if self.flexible:
                null = "b'\\x00'"
            else:
                null = "b'\\xff\\xff'" if kafka_type == "string" else "b'\\xff\\xff\\xff\\xff'"
            self.lines += [f"{indent}if v is None:", f"{indent}    {append}({null})", f"{indent}else:"]
            inner = indent + "    "
        if kafka_type == "records":
            self.records(inner, append)
            return
        self.lines.append(f"{inner}b = v{encode}")
        if self.flexible:
            self.lines += [f"{inner}n = len(b) + 1", f"{inner}{append}(_SMALL[n] if n < 128 else _uv(n))"]
        else:
            width = "h" if kafka_type == "string" else "i"
            self.lines.append(f"{inner}{append}(_pack('>{width}', len(b)))")
        self.lines.append(f"{inner}{append}(b)")

    def records(self, indent: str, append: str) -> None:
        """A records field may hold a list of stored batches: each is appended as it is, never joined."""
        size = "n = _size(v) + 1" if self.flexible else "n = _size(v)"
        length = f"{append}(_SMALL[n] if n < 128 else _uv(n))" if self.flexible else f"{append}(_pack('>i', n))"
        self.lines += [f"{indent}{size}", f"{indent}{length}", f"{indent}if v.__class__ is list:",
                       f"{indent}    for b in v:", f"{indent}        {append}(b)", f"{indent}else:",
                       f"{indent}    {append}(v)"]
