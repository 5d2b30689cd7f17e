"""Every count and length in a message body checked against the bytes present, before kio reads it.

Why this exists: kio's reader is native code that trusts the counts it reads. Given a compact array
length of ``ff ff ff ff 0f`` it pre-allocates 2^31 - 1 slots and Rust's allocator aborts the whole
process (a 289-byte Produce v10 request did this) — an abort, not an exception, so no handler can
catch it. No body reaches kio before `check_body` has walked it with the same grammar kio will read
it with, without allocating anything: every string, bytes and records length must fit in the bytes
that remain, every array count times its element's smallest encoding too, and every element is then
walked, so kio only ever allocates for elements that are really there. A body that fails is refused
like any unreadable one (`messages.MalformedRequest`: the connection closes).

The checker of each kio class is generated once, as Python source (like `encoder`): runs of
fixed-width fields become one addition, lengths are read inline. Where the walk could diverge from
kio's (a nullable struct marker other than -1 or 1, a known tagged field whose value does not fill
its announced size, a varint longer than five bytes or above 2^31) the body is refused rather than
guessed at; so is null where the schema allows none (Kafka refuses it, kio would hand a handler ``None``). A
body whose arrays and tagged fields hold more than `MAX_ELEMENTS` items in all is refused too (logwright's limit,
not Kafka's).

Measured (``pytest tests/compat/test_bounds_decoding.py -k timing -s``, 2 busy cores): a 1-partition
Produce v9 or v7 with a 1 KiB batch costs 1.0-1.1 µs to check, beside 0.65-0.75 µs for kio's reader
and 3.2-3.4 µs for the whole `messages.decode_request`; a Fetch v12-v16 of 4 partitions 1.0 µs, beside
kio's 1.25 µs.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable, Generator
from typing import Any, Final, cast

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

Buffer = bytes | bytearray | memoryview
Checker = Callable[[Buffer, int, int], int]
"""``checker(data, position, end)``: the position after the entity at ``position``; raises `OutOfBounds`."""
SteppedChecker = Callable[[Buffer, int, int], Generator[None, None, int]]
"""A `Checker` pausing (yielding) every `STEP_ELEMENTS` elements, the position its return value
(`body_checker_in_steps`)."""

_WIDTHS: Final = {
    "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8,
    "float64": 8, "bool": 1, "error_code": 2, "timedelta_i32": 4, "timedelta_i64": 8, "datetime_i64": 8,
    "uuid": 16,
}
_VARIABLE: Final = frozenset({"string", "bytes", "records"})
_MAX_LENGTH: Final = 0x7FFF_FFFF
MAX_ELEMENTS: Final = 1_000_000
"""Array elements and tagged fields one request may hold in all (every array, nested ones included). Kafka has no
such limit, but no client sends a request near it (the largest the broker otherwise accepts, a CreateTopics of
10,000 partitions, holds tens of thousands); past it, the elements cost the event loop and memory that no byte limit
bounds: a 2 MB DescribeGroups of 1,000,000 empty names took 80 ms to decode, a 100 MB one of 2-byte names would take
seconds and gigabytes. Refused like any unreadable body."""
_I16 = struct.Struct(">h").unpack_from
_I32 = struct.Struct(">i").unpack_from


class OutOfBounds(ValueError):
    """A count or length in the body does not fit the bytes present (or could be read two ways)."""


def _short(what: str, value: int, position: int, end: int) -> OutOfBounds:
    return OutOfBounds(f"{what} {value} at byte {position} does not fit the {max(end - position, 0)} bytes left")


def _too_many(position: int) -> OutOfBounds:
    return OutOfBounds(f"the arrays and tagged fields before byte {position} hold more than {MAX_ELEMENTS:,} "
                       "elements in all")


def _uvarint(data: Buffer, position: int, end: int) -> tuple[int, int]:
    """A varint of up to five bytes below 2^31, read only inside ``[position, end)``."""
    value = 0
    for shift in (0, 7, 14, 21, 28):
        if position >= end:
            raise OutOfBounds(f"a varint runs past the end of its data at byte {position}")
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if value > _MAX_LENGTH:
                raise OutOfBounds(f"a varint of {value} before byte {position} is no length or count")
            return value, position
    raise OutOfBounds(f"a varint before byte {position} runs past five bytes")


def check_body(cls: type[Any], data: Buffer, position: int, end: int | None = None) -> int:
    """Walk the body of kio class ``cls`` at ``position`` (up to ``end``, default the data's end) and return
    where it ends; raise `OutOfBounds` if a count or length does not fit. Bytes after the body are allowed."""
    return body_checker(cls)(data, position, len(data) if end is None else end)


def body_checker(cls: type[Any]) -> Checker:
    """The generated checker for kio class ``cls`` (cached)."""
    checker = _CHECKERS.get(cls)
    if checker is None:
        checker = _CHECKERS[cls] = _Generator(cls).compile()
    return checker


_CHECKERS: dict[type[Any], Checker] = {}

STEP_ELEMENTS: Final = 4096
"""Elements (of any array, tagged fields too) a stepped checker walks between two of its steps: a few hundred
microseconds."""


def body_checker_in_steps(cls: type[Any]) -> SteppedChecker:
    """`body_checker` as a generator function that pauses every `STEP_ELEMENTS` elements, for a caller that gives
    way between steps: walking the million names of a 2 MB DescribeGroups took 59 ms in one stretch. Same checks,
    same result (the position after the body, as the generator's return value)."""
    checker = _STEPPED_CHECKERS.get(cls)
    if checker is None:
        checker = _STEPPED_CHECKERS[cls] = cast("SteppedChecker", _Generator(cls, stepped=True).compile())
    return checker


_STEPPED_CHECKERS: dict[type[Any], SteppedChecker] = {}
_MIN_SIZES: dict[type[Any], int] = {}


def min_size(cls: type[Any]) -> int:
    """The fewest bytes an entity of ``cls`` can be encoded in (every array empty, every string null or empty)."""
    size = _MIN_SIZES.get(cls)
    if size is None:
        flexible: bool = cls.__flexible__
        size = 1 if flexible else 0
        for field in dataclasses.fields(cls):
            if get_field_tag(field) is None:
                size += _field_min_size(field, flexible)
        _MIN_SIZES[cls] = size
    return size


def _field_min_size(field: dataclasses.Field[Any], flexible: bool) -> int:
    kind = classify_field(field)
    if kind.is_array:
        return 1 if flexible else 4
    if isinstance(kind, EntityField):
        return 1 if is_optional(field) else min_size(kind.type_)
    return _primitive_min_size(get_schema_field_type(field), flexible)


def _element_min_size(field: dataclasses.Field[Any], flexible: bool) -> int:
    """At least 1, so that a count of elements that take no bytes is still bounded by the bytes left."""
    kind = classify_field(field)
    if isinstance(kind, EntityTupleField):
        return max(min_size(kind.type_), 1)
    return _primitive_min_size(get_schema_field_type(field), flexible)


def _primitive_min_size(kafka_type: str, flexible: bool) -> int:
    if kafka_type in _WIDTHS:
        return _WIDTHS[kafka_type]
    if flexible:
        return 1
    return 2 if kafka_type == "string" else 4


class _Generator:
    """Writes the source of one class's checker, nested entities inlined (a call costs as much as a field).

    Variables carry the nesting depth (``n1``, ``s2``) so that an inlined entity does not clobber its parent's. A
    stepped checker counts the elements it walks in ``k`` and yields every `STEP_ELEMENTS`.
    """

    def __init__(self, cls: type[Any], stepped: bool = False) -> None:
        self.cls = cls
        self.stepped = stepped
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = {"_uv": _uvarint, "_i16": _I16, "_i32": _I32, "_short": _short,
                                          "_too_many": _too_many, "OutOfBounds": OutOfBounds}
        self.fixed = 0

    def compile(self) -> Checker:
        self.entity(self.cls, "    ", "end", 0)
        self.flush("    ")
        self.lines += ["    if p > end:", "        raise _short('a fixed-width field of', 0, p, end)", "    return p"]
        if self.stepped:
            self.lines[:0] = ["    k = 0", "    if False:", "        yield"]  # a generator even with no array
        source = f"def check(b, p, end):\n    left = {MAX_ELEMENTS}\n" + "\n".join(self.lines) + "\n"
        exec(compile(source, f"<bounds {self.cls.__module__}.{self.cls.__name__}>", "exec"), self.namespace)
        checker: Checker = self.namespace["check"]
        return checker

    def entity(self, cls: type[Any], indent: str, end: str, depth: int) -> None:
        flexible: bool = cls.__flexible__
        fields = dataclasses.fields(cls)
        for field in fields:
            if get_field_tag(field) is None:
                self.field(field, flexible, indent, end, depth, optional=is_optional(field))
        if flexible:
            self.flush(indent)
            self.tagged_fields([(int(tag), f) for f in fields if (tag := get_field_tag(f)) is not None],
                               indent, end, depth)

    def flush(self, indent: str) -> None:
        """Step over the fixed-width fields gathered so far (checked before the next read, and at the end)."""
        if self.fixed:
            self.lines.append(f"{indent}p += {self.fixed}")
            self.fixed = 0

    def uvarint(self, target: str, indent: str, end: str) -> None:
        """One- and two-byte varints inline, longer ones by `_uvarint`."""
        self.lines += [f"{indent}if p < {end} and b[p] < 128:", f"{indent}    {target} = b[p]",
                       f"{indent}    p += 1", f"{indent}elif p + 1 < {end} and b[p + 1] < 128:",
                       f"{indent}    {target} = (b[p] & 127) | (b[p + 1] << 7)", f"{indent}    p += 2",
                       f"{indent}else:", f"{indent}    {target}, p = _uv(b, p, {end})"]

    def length(self, target: str, flexible: bool, wide: bool, nullable: bool, indent: str, end: str) -> None:
        """``target`` = a string's, bytes' or array's length (-1 for null), past its prefix. Null where the schema
        does not allow it is refused, as Kafka does (kio would hand the handler a ``None``)."""
        if flexible:
            self.uvarint(target, indent, end)
            self.lines.append(f"{indent}{target} -= 1")
        else:
            width = 4 if wide else 2
            self.lines += [f"{indent}if p + {width} > {end}:",
                           f"{indent}    raise _short('a {width}-byte length of', {width}, p, {end})",
                           f"{indent}{target} = {'_i32' if wide else '_i16'}(b, p)[0]", f"{indent}p += {width}"]
        self.lines += [f"{indent}if {target} < {-1 if nullable else 0}:",
                       f"{indent}    raise OutOfBounds(f'a length of {{{target}}} before byte {{p}} "
                       f"({'nullable' if nullable else 'never null'})')"]

    def field(self, field: dataclasses.Field[Any], flexible: bool, indent: str, end: str, depth: int,
              optional: bool) -> None:
        kind = classify_field(field)
        if isinstance(kind, PrimitiveField):
            self.primitive(get_schema_field_type(field), flexible, optional, indent, end, depth)
            return
        if isinstance(kind, EntityField):
            if not optional:
                self.entity(kind.type_, indent, end, depth + 1)
                return
            self.flush(indent)
            marker = f"m{depth}"
            self.lines += [f"{indent}if p >= {end}:", f"{indent}    raise _short('a struct marker', 1, p, {end})",
                           f"{indent}{marker} = b[p]", f"{indent}p += 1", f"{indent}if {marker} == 1:"]
            self.entity(kind.type_, indent + "    ", end, depth + 1)
            self.flush(indent + "    ")
            refusal = f"raise OutOfBounds(f'a nullable struct marker of {{{marker}}} before byte {{p}}')"
            self.lines += [f"{indent}elif {marker} != 255:", f"{indent}    {refusal}"]
            return
        self.flush(indent)
        count = f"n{depth}"
        self.length(count, flexible, True, optional, indent, end)
        self.lines += [f"{indent}if {count} * {_element_min_size(field, flexible)} > {end} - p:",
                       f"{indent}    raise _short('an array of', {count}, p, {end})",
                       f"{indent}if {count} > 0:", f"{indent}    left -= {count}",
                       f"{indent}    if left < 0:", f"{indent}        raise _too_many(p)"]
        if isinstance(kind, EntityTupleField):
            self.loop(count, indent)
            self.entity(kind.type_, indent + "    ", end, depth + 1)
            self.flush(indent + "    ")
            return
        assert isinstance(kind, PrimitiveTupleField)
        kafka_type = get_schema_field_type(field)
        if kafka_type in _WIDTHS:
            self.lines += [f"{indent}if {count} > 0:", f"{indent}    p += {count} * {_WIDTHS[kafka_type]}"]
            return
        self.loop(count, indent)
        self.primitive(kafka_type, flexible, False, indent + "    ", end, depth + 1)

    def loop(self, count: str, indent: str) -> None:
        """``for`` each of ``count`` elements; in a stepped checker, a step every `STEP_ELEMENTS` of them."""
        self.lines.append(f"{indent}for _ in range({count}):")
        if self.stepped:
            self.lines += [f"{indent}    k += 1", f"{indent}    if k == {STEP_ELEMENTS}:", f"{indent}        k = 0",
                           f"{indent}        yield"]

    def primitive(self, kafka_type: str, flexible: bool, nullable: bool, indent: str, end: str, depth: int) -> None:
        if kafka_type in _WIDTHS:
            self.fixed += _WIDTHS[kafka_type]
            return
        if kafka_type not in _VARIABLE:
            raise NotImplementedError(f"no bounds check for Kafka type {kafka_type!r}")
        self.flush(indent)
        size = f"s{depth}"
        self.length(size, flexible, kafka_type != "string", nullable, indent, end)
        self.lines += [f"{indent}if {size} > 0:", f"{indent}    if {size} > {end} - p:",
                       f"{indent}        raise _short('a length of', {size}, p, {end})", f"{indent}    p += {size}"]

    def tagged_fields(self, tagged: list[tuple[int, dataclasses.Field[Any]]], indent: str, end: str,
                      depth: int) -> None:
        """Unknown tags are stepped over by their size; a known one must fill its size exactly, as its value is
        read by kio from where the tag starts. No tags at all (one zero byte) is the common case."""
        count, tag, size, stop = f"t{depth}", f"tag{depth}", f"size{depth}", f"stop{depth}"
        inner = indent + "    "
        self.lines += [f"{indent}if p < {end} and b[p] == 0:", f"{inner}p += 1", f"{indent}else:"]
        self.uvarint(count, inner, end)
        self.lines += [f"{inner}if 2 * {count} > {end} - p:",
                       f"{inner}    raise _short('a tagged-field count of', {count}, p, {end})",
                       f"{inner}left -= {count}", f"{inner}if left < 0:", f"{inner}    raise _too_many(p)"]
        self.loop(count, inner)
        body = inner + "    "
        self.uvarint(tag, body, end)
        self.uvarint(size, body, end)
        self.lines += [f"{body}if {size} > {end} - p:",
                       f"{body}    raise _short('a tagged field of', {size}, p, {end})", f"{body}{stop} = p + {size}"]
        keyword = "if"
        for number, field in sorted(tagged, key=lambda item: item[0]):
            self.lines.append(f"{body}{keyword} {tag} == {number}:")
            nullable = is_optional(field) and not isinstance(classify_field(field), EntityField)  # no marker in a tag
            self.field(field, True, body + "    ", stop, depth + 1, optional=nullable)
            self.flush(body + "    ")
            refusal = f"raise OutOfBounds(f'tagged field {number} does not fill its {{{size}}} bytes')"
            self.lines += [f"{body}    if p != {stop}:", f"{body}        {refusal}"]
            keyword = "elif"
        self.lines.append(f"{body}p = {stop}")
