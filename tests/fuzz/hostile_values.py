"""Well-formed requests full of hostile values, for every served (API key, version) and the extension keys.

The byte-level fuzzer (`frames`) mostly meets the decoder; a request that decodes carries one random value per
field at best. These requests always decode, so every value reaches the handlers: extreme and negative integers,
-1/-2 and huge counts, 32,767-character and null names, catastrophic regexes, timedelta extremes, config values
beyond 64 bits, acknowledgement ranges up to 2**63-1, and record batches that lie under a valid CRC. Each pool
keeps the values that found a real fault (their docstrings name it); a value that still finds an open fault is
left out where a ``# known fault:`` comment says so, until the fault is fixed. Everything is drawn from one
`random.Random`, so an example is reproduced from its seed.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import random
import struct
import types
import typing
import uuid
from collections.abc import Sequence
from functools import cache
from typing import Any

import msgpack
from crc32c import crc32c
from kio.static.primitive import Records
from logwright.compat.errors import ErrorCode
from logwright.compat.wire.compression import Compression, compress
from logwright.compat.wire.fallback import empty_value, field_hints
from logwright.compat.wire.messages import KNOWN_VERSIONS, encode_request, request_type
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record

from .frames import SERVED, framed

TOPIC_NAMES = ("hostile", "hostile", "hostile-2", "hostile-gzip", "hostile-short", "", "a" * 249, "a" * 300,
               "x" * 32767, "..", ".", "t\x00", "é" * 100, "bad/name", "__consumer_offsets")
"""Never the canary topic, whose records a legitimate request (DeleteRecords, retention.ms=1) may remove.
32,767 characters: echoed into an error message it could not be encoded in non-flexible versions (fixed).
``hostile-gzip`` stores every batch in gzip at level 9: what is produced to it in another codec (compression bombs
among it) is inflated and compressed again; ``hostile-short`` refuses a compressed batch holding a record body over 64
bytes (``max.decompressed.message.bytes``)."""
GROUP_IDS = ("hostile-group", "hostile-share", "", "x" * 32767, "\x00", "g" * 1000)
MEMBER_IDS = ("", "m" * 32767, "forged-member", "AAAAAAAAAAAAAAAAAAAAAA", str(uuid.UUID(int=7)))
INSTANCE_IDS = ("", "i" * 32767, "é" * 16383, "hostile-instance", None)
"""Over 32,730 characters, the member id made of one (the id, '-', a UUID) could not be encoded in JoinGroup v5 and
DescribeGroups v0-4 (fixed: the prefix is cut)."""
TRANSACTIONAL_IDS = ("hostile-tx", "", "x" * 32767, "a" * 27)
CONFIG_NAMES = ("group.initial.rebalance.delay.ms", "max.message.bytes", "message.timestamp.after.max.ms",
                "segment.bytes", "retention.ms", "cleanup.policy", "log.retention.check.interval.ms",
                "connections.max.idle.ms", "offsets.retention.minutes", "transaction.max.timeout.ms", "no.such.key")
"""Keys a client may set; no broker-wide retention key, which would legitimately delete the canary's records."""
CONFIG_VALUES = ("9" * 30, str(10**30), str(2**63 - 1), "-9223372036854775809", "-1", "0", "1", "abc", "", "NaN",
                 "1e400", "1_0", " 7 ", "１２", "compact,delete", "x" * 32767, None)
"""``'9' * 30`` as group.initial.rebalance.delay.ms froze every later JoinGroup; ``1_0`` and 10**30 were read as
numbers by Python's int (both fixed)."""
REGEXES = ("(a+)+b", "(a|a?)+" * 50 + "b", "([", "(.*)*$", ".*", "", "a" * 32767)
"""Backtracking patterns: ConsumerGroupHeartbeat's topic regex and ListTransactions' id pattern once froze the
event loop for a time exponential in a 27-character name."""
OFFSETS = (0, 1, -1, -2, -3, 5, 10**6, 2**31 - 1, 2**63 - 1, -(2**63))
"""An acknowledgement batch [0, 2**63-1] overflowed ``len()`` of a range set into UNKNOWN_SERVER_ERROR (fixed)."""
PARTITIONS = (0, 0, 1, 2, -1, 100_000, 2**31 - 1, -(2**31))
COUNTS = (0, 1, 1, 1, 2, 3)
HUGE_COUNTS = (1_000, 10_000)
KNOWN_SLOW_COLLECTIONS: dict[tuple[str, str], int] = {}
"""The most items a collection gets (by class and field name) while a fault it shows is open: none now. 10,000
resources of (Incremental)AlterConfigs checked each against the whole list and stalled every client 1.6-3.3 s
(fixed)."""
NUM_PARTITIONS = (1, 1, 3, 0, -1, -2, 10_000, 2**31 - 1)
"""10,000 partitions in one topic: four 860-byte CreateTopics once made two million (fixed: 10,000 a request)."""
MILLIS_I32 = (-1, -(2**31), 0, 1, 100, 2**31 - 1)
MILLIS_I64 = (-1, 0, 1, 2**31 - 1, 2**62, -(2**40))
STRINGS = ("", "x" * 32767, "hostile", "\x00\xff", "ü" * 5000, "*", "range", "uniform", None)
BLOBS = (b"", b"\x00" * 10, b"\xff" * 100_000, b"\x80" * 30)
GROUP_PROTOCOL_METADATA = (
    b"", b"\x00" * 10, b"\xff" * 10, b"\xff\xff\x7f" + b"\xff" * 99_997, b"\x80" * 30,
    # version 3 (and 32,767, read as 3) with one topic, then counts of owned partitions past the bytes present
    b"\x00\x03\x00\x00\x00\x01\x00\x07hostile\xff\xff\xff\xff\x7f\xff\xff\xff",
    b"\x7f\xff\x00\x00\x00\x01\x00\x07hostile\xff\xff\xff\xff\x00\x00\x00\x01\x00\x07hostile\x7f\xff\xff\xf0",
    b"\x00\x01\x00\x00\x00\x01\x00\x07hostile\xff\xff\xff\xff\x00\x00\x00\x00",  # a well-formed v1 subscription
)
"""JoinGroup protocol metadata: a consumer subscription whose version and counts are hostile. ``b"\xff" * 10`` reads
as a null topic array, which made a later OffsetDelete of the group fail with TypeError (fixed). A consumer group
reads them when a classic member joins it, and when a classic group is upgraded."""
UUIDS = (uuid.UUID(int=0), uuid.UUID(int=2**128 - 1), uuid.UUID(int=1234567))
EXTENSION_VALUES: tuple[Any, ...] = (
    0, 1, -1, 2**64 - 1, 2**63, 2**63 - 1, -(2**63), 2**31, "", "x" * 100_000, "hostile", "hostile-share",
    "AAAAAAAAAAAAAAAAAAAAAA", None, True, 1.5, [[0, 2**64 - 1]], [[5, 1]], [[0, 0]] * 100_000, [[0, 2**62]] * 3, [],
    [0] * 100_000, {"a": 1}, b"\x00" * 16, [[0, 1, 2]],
    [{"topic": "hostile", "partition": 0, "ranges": [[0, 2**63 - 1]], "type": 1}],
    ["h" * 512] * 1024, "offset", "timestamp", "earliest", "latest", [0, 1, 2])
"""msgpack values for the extension keys' fields: unsigned 64-bit, ranges wider than int64, 100,000 items."""
EXTENSION_FIELDS = ("group_id", "member_id", "topic", "partition", "ranges", "delay_ms", "offset", "acks", "records",
                    "name", "hash_ranges", "ack_timeout_ms", "priority", "max_in_flight", "max_messages",
                    "invisible_time_ms", "long_poll_ms", "orderly", "consumer", "handle", "handles", "ack_handles",
                    "held", "to", "value", "partitions", "type", "ack_results")
_INT_RANGES = {"int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1), "int32": (-(2**31), 2**31 - 1),
               "int64": (-(2**63), 2**63 - 1), "uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1), "uint8": (0, 255)}
MAX_PAYLOAD_BYTES = 4 * 2**20
"""A request larger than this is drawn again without a huge collection: the broker's memory budget is the
subject of other tests, and a CI run has no time to encode hundreds of megabytes."""


@dataclasses.dataclass(frozen=True, slots=True)
class Extension:
    """A request for one of logwright's extension keys: a msgpack map after a v1 request header."""

    api_key: int
    version: int
    body: Any


Request = Any
"""A kio request entity or an `Extension`."""


def encode(request: Request, correlation_id: int, client_id: str | None = "hostile") -> bytes:
    """The request header and body, without the size prefix, as `frames.framed` expects."""
    if isinstance(request, Extension):
        client = (client_id or "").encode()
        header = struct.pack(">hhih", request.api_key, request.version, correlation_id, len(client)) + client
        return header + msgpack.packb(request.body, use_bin_type=True)
    return encode_request(request, correlation_id, client_id)


def _crc_fixed(batch: bytearray) -> bytes:
    """The batch with its CRC recomputed, so that only its contents lie."""
    batch[17:21] = struct.pack(">I", crc32c(bytes(batch[21:])))
    return bytes(batch)


@cache
def _compression_bomb(codec: Compression) -> bytes:
    """8 MiB of zeros in one record, compressed to a few KiB, the batch length and CRC true."""
    inner = build_batch([Record(0, 1_700_000_000_000, None, bytes(8 * 2**20))])
    batch = bytearray(inner[:61] + compress(codec, bytes(inner[61:])))
    batch[8:12] = struct.pack(">i", len(batch) - 12)
    batch[21:23] = struct.pack(">h", int(codec))
    return _crc_fixed(batch)


def hostile_batch(rng: random.Random) -> bytes:
    """A record batch whose header or records lie (offsets ``base_offset i64 | length i32 | epoch i32 | magic i8 |
    crc u32 | attributes i16 | last_delta i32 | first_ts i64 | max_ts i64 | pid i64 | epoch i16 | seq i32 |
    count i32 | records``). A gzip flag over plain records and a record length past its end were acknowledged and
    poisoned their partition; timestamps of 2**63-1 were accepted (all fixed)."""
    kind = rng.choice(("true", "count", "length", "codec", "last_delta", "base_offset", "magic", "timestamps",
                       "producer", "record_length", "repeated", "empty", "bomb"))
    records = [Record(i, 1_700_000_000_000 + i, None, b"v%d" % i) for i in range(rng.choice((1, 3)))]
    batch = bytearray(build_batch(records))
    if kind == "true":
        return bytes(batch)
    if kind == "empty":
        return b""
    if kind == "repeated":
        return bytes(batch) * rng.choice((2, 1000))
    if kind == "bomb":
        return _compression_bomb(rng.choice((Compression.GZIP, Compression.SNAPPY, Compression.LZ4,
                                             Compression.ZSTD)))
    if kind == "count":
        batch[57:61] = struct.pack(">i", rng.choice((-1, 0, 2, 100_000, 2**31 - 1, -(2**31))))
    elif kind == "length":
        batch[8:12] = struct.pack(">i", rng.choice((-1, 0, 49, len(batch) - 7, len(batch) - 17, 2**31 - 1)))
    elif kind == "codec":
        batch[21:23] = struct.pack(">h", rng.choice((1, 2, 3, 4, 5, 7, 0x08, 0x10, 0x20, 0x30, -1)))
    elif kind == "last_delta":
        batch[23:27] = struct.pack(">i", rng.choice((-1, 5, 1_000_000, 2**31 - 1, -(2**31))))
    elif kind == "base_offset":
        batch[0:8] = struct.pack(">q", rng.choice((-1, 5, 2**62, 2**63 - 1)))
    elif kind == "magic":
        batch[16] = rng.choice((0, 1, 3, 255))
    elif kind == "timestamps":
        batch[27:43] = struct.pack(">qq", rng.choice((-1, 2**63 - 1, -(2**63))), rng.choice((-1, 2**63 - 1, -(2**63))))
    elif kind == "producer":
        batch[43:57] = struct.pack(">qhi", rng.choice((-1, 0, 5, 2**63 - 1)), rng.choice((-1, 0, 32767)),
                                   rng.choice((-1, 0, 2**31 - 2, 2**31 - 1)))
        if rng.random() < 0.5:
            batch[21:23] = struct.pack(">h", rng.choice((0x10, 0x20, 0x30)))
    elif kind == "record_length":
        batch[61] = rng.choice((0x00, 0x01, 0x7E, 0x7F, 0xFF))
    return _crc_fixed(batch)


class HostileValues:
    """Draws hostile field values by each field's kio type and name; ``big_collection_chance`` is how often one
    collection of a request holds thousands of items."""

    def __init__(self, rng: random.Random, big_collection_chance: float = 0.03) -> None:
        self.rng = rng
        self.big_collection_chance = big_collection_chance
        self._big_left = 1
        self._hostility = 1.0

    def request(self, api_key: int, version: int, big_collections: bool = True) -> Request:
        """A kio request entity (an `Extension` for logwright's keys) of ``(api_key, version)``."""
        if api_key not in KNOWN_VERSIONS:
            return self.extension(api_key, version)
        self._big_left = int(big_collections)
        return self.entity(request_type(api_key, version))

    def frame(self, api_key: int, version: int, correlation_id: int = 7) -> bytes:
        """A framed request of ``(api_key, version)`` under `MAX_PAYLOAD_BYTES`, with a hostile client id."""
        client_id = self.rng.choice(("hostile", None, "x" * 32767, ""))
        payload = encode(self.request(api_key, version), correlation_id, client_id)
        while len(payload) > MAX_PAYLOAD_BYTES:
            payload = encode(self.request(api_key, version, big_collections=False), correlation_id, client_id)
        return framed(payload)

    def extension(self, api_key: int, version: int, **fixed: Any) -> Extension:
        """A msgpack map of a few of the fields the extension keys read, mostly naming the hostile topic."""
        fields = self.rng.sample(EXTENSION_FIELDS, self.rng.randint(1, 8))
        if self.rng.random() < 0.7:
            fields += ["group_id", "topic"]
        body = {name: self._extension_value(name) for name in fields}
        return Extension(api_key, version, body | fixed)

    def _extension_value(self, name: str) -> Any:
        if name == "topic" and self.rng.random() < 0.6:
            return "hostile"
        if name == "group_id" and self.rng.random() < 0.6:
            return self.rng.choice(("hostile-share", "hostile-pop"))
        return self.rng.choice(EXTENSION_VALUES)

    def entity(self, cls: type[Any], depth: int = 0, hostility: float | None = None, **fixed: Any) -> Any:
        """An instance of kio class ``cls``: each field hostile with probability ``hostility`` (the enclosing
        entity's, else 1), else empty (zero, empty, null), but those in ``fixed`` (names ``cls`` lacks are ignored,
        so that one call serves every version). Sequences keep hostility low so their state is really reached."""
        outer = self._hostility
        self._hostility = outer if hostility is None else hostility
        try:
            hints = field_hints(cls)
            values = {}
            for field in dataclasses.fields(cls):
                if field.name in fixed:
                    values[field.name] = fixed[field.name]
                elif self.rng.random() < self._hostility:
                    values[field.name] = self.value(hints[field.name], field, cls, depth)
                else:
                    values[field.name] = empty_value(hints[field.name], ErrorCode.NONE, field.name)
            return cls(**values)
        finally:
            self._hostility = outer

    def value(self, hint: Any, field: dataclasses.Field[Any], owner: type[Any], depth: int) -> Any:
        """A hostile value of type ``hint`` for ``field`` of ``owner`` (whose name says what a string names)."""
        rng = self.rng
        nullable = False
        if typing.get_origin(hint) in (typing.Union, types.UnionType):
            arguments = [argument for argument in typing.get_args(hint) if argument is not type(None)]
            nullable = len(arguments) < len(typing.get_args(hint))
            hint = arguments[0]
            if nullable and not _is_subclass(hint, str) and rng.random() < 0.1:
                return None
        if typing.get_origin(hint) is tuple:
            return self._collection(typing.get_args(hint)[0], field, owner, depth)
        if dataclasses.is_dataclass(hint):
            return self.entity(typing.cast(type[Any], hint), depth + 1)
        if _is_subclass(hint, datetime.timedelta):
            return self._duration(hint)
        if _is_subclass(hint, datetime.datetime):
            return hint.parse(datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC))
        if _is_subclass(hint, bool):
            return rng.random() < 0.5
        if _is_subclass(hint, Records):
            return Records(hostile_batch(rng))
        if _is_subclass(hint, int):
            return hint(self._integer(field.metadata.get("kafka_type", "int32"), field.name))
        if _is_subclass(hint, float):
            value = rng.choice((0.0, -1.0, 1e308, 1.5, float("nan"), float("inf"), float("-inf")))
            return hint(value) if math.isfinite(value) else value  # kio's f64 refuses to hold what the wire can
        if _is_subclass(hint, str):
            text = self._string(field.name, owner.__name__, nullable)
            return None if text is None else hint(text)
        if _is_subclass(hint, bytes):
            if owner.__name__ == "JoinGroupRequestProtocol":
                return rng.choice(GROUP_PROTOCOL_METADATA)
            return rng.choice(BLOBS)
        if _is_subclass(hint, uuid.UUID):
            return rng.choice((*UUIDS, uuid.UUID(int=rng.getrandbits(128))))
        raise TypeError(f"no hostile value for {hint!r} ({owner.__name__}.{field.name})")

    def _collection(self, item: Any, field: dataclasses.Field[Any], owner: type[Any], depth: int) -> tuple[Any, ...]:
        """A few items; once a request, rarely, thousands (mostly one item repeated: duplicates are hostile too)."""
        if self._big_left and depth <= 2 and self.rng.random() < self.big_collection_chance:
            self._big_left = 0
            count = min(self.rng.choice(HUGE_COUNTS), KNOWN_SLOW_COLLECTIONS.get((owner.__name__, field.name), 10**9))
            one = self.value(item, field, owner, depth + 1)
            if self.rng.random() < 0.7:
                return (one,) * count
            return tuple(self.value(item, field, owner, depth + 1) for _ in range(count // 10))
        return tuple(self.value(item, field, owner, depth + 1) for _ in range(self.rng.choice(COUNTS)))

    def _duration(self, hint: Any) -> Any:
        millis = self.rng.choice(MILLIS_I64 if "64" in hint.__name__ else MILLIS_I32)
        try:
            return hint.parse(datetime.timedelta(milliseconds=millis))
        except (ValueError, OverflowError, TypeError):
            return hint.parse(datetime.timedelta(0))

    def _integer(self, kafka_type: str, name: str) -> int:
        low, high = _INT_RANGES.get(kafka_type, _INT_RANGES["int32"])
        candidates: Sequence[int] = (low, high, -1, -2, 0, 1, 2, high - 1, low + 1, self.rng.randint(low, high))
        if name in ("num_partitions", "count"):
            candidates = NUM_PARTITIONS
        elif "offset" in name:
            candidates = OFFSETS
        elif "partition" in name or name == "index":
            candidates = PARTITIONS
        return self.rng.choice([value for value in candidates if low <= value <= high] or [0])

    def _string(self, name: str, owner: str, nullable: bool) -> str | None:
        rng = self.rng
        if nullable and rng.random() < 0.15:
            return None
        if "regex" in name or "pattern" in name:
            pool: Sequence[str | None] = REGEXES
        elif "topic" in name or "Topic" in owner and name == "name" or name == "resource_name":
            pool = TOPIC_NAMES
        elif name == "group_instance_id":
            pool = INSTANCE_IDS
        elif "group" in name:
            pool = GROUP_IDS
        elif "member" in name or "instance" in name:
            pool = MEMBER_IDS
        elif "transactional" in name:
            pool = TRANSACTIONAL_IDS
        elif "Config" in owner and name in ("name", "key", "config_name"):
            pool = CONFIG_NAMES
        elif "Config" in owner and name == "value":
            pool = CONFIG_VALUES
        else:
            pool = STRINGS
        text = rng.choice(pool)
        return "" if text is None and not nullable else text


def _is_subclass(hint: Any, base: type) -> bool:
    return isinstance(hint, type) and issubclass(hint, base)


__all__ = ["SERVED", "Extension", "HostileValues", "encode", "hostile_batch"]
