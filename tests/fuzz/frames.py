"""Request frames to fuzz the broker with: well-formed seeds of every served (API key, version), and mutations.

Seeds are kio request entities drawn by hypothesis for every version the broker's handler table serves (what
ApiVersions advertises), written with the request header a real client sends; Produce seeds carry a real
record batch, extension keys a msgpack body. Mutations are what a buggy client or an attacker produces: bit
flips, inserted varint-like values (``ff ff ff ff 0f``, the count that once aborted the broker), length-field
overwrites, truncations, and a changed API key or version so that one key's body meets another's decoder.
"""

from __future__ import annotations

import dataclasses
import importlib
import struct
import uuid
from collections.abc import Sequence
from typing import Any

import msgpack
from hypothesis import strategies as st
from kio.static.primitive import Records
from logwright.compat.handlers import load_handlers
from logwright.compat.wire.fallback import empty_entity
from logwright.compat.wire.messages import KNOWN_VERSIONS, encode_request, request_type
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record

_BATCH = build_batch([Record(0, 1_700_000_000_000, b"key", b"value" * 20)])
st.register_type_strategy(Records, st.one_of(st.just(Records(_BATCH)), st.binary(max_size=80).map(Records)))

SERVED: list[tuple[int, int]] = sorted(
    (entry.api_key, version) for entry in load_handlers().values()
    for version in range(entry.min_version, entry.max_version + 1))
"""Every (API key, version) the broker serves: Kafka's keys kio can write, and logwright's extension keys."""

INTERESTING = (
    b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\x7f", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\xff\xff",
    b"\xff\xff\xff\xff", b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", b"\xfa\xff", b"\x00", b"\x01", b"\xff",
)
"""Values that are counts or lengths in one encoding or another: huge, negative, overlong varints, null, zero."""
HUGE_VARINTS = (b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\x07", b"\xff\xff\xff\xff\x03", b"\x80\x80\x80\x80\x08")
"""Compact lengths near 2^32, 2^31 and 2^30: what made kio pre-allocate tens of gigabytes and abort."""


def _seed_payload(api_key: int, version: int, draw: Any) -> bytes:
    if api_key not in KNOWN_VERSIONS:
        body = draw(st.dictionaries(st.sampled_from(["group_id", "member_id", "topic", "partition", "ranges",
                                                     "max_records", "cursor"]),
                                    st.one_of(st.text(max_size=8), st.integers(-2, 2**33),
                                              st.lists(st.lists(st.integers(-1, 100), max_size=2), max_size=3)),
                                    max_size=4))
        client = b"fuzz"
        header = struct.pack(">hhih", api_key, version, draw(st.integers(0, 2**31 - 1)), len(client)) + client
        return header + msgpack.packb(body)
    request = draw(st.from_type(request_type(api_key, version)))
    return encode_request(request, draw(st.integers(0, 2**31 - 1)), draw(st.sampled_from(["rdkafka", None, "x"])))


def smallest_seeds() -> list[bytes]:
    """The smallest well-formed request of every served (API key, version): every field zero, empty or null."""
    seeds = []
    for api_key, version in SERVED:
        if api_key in KNOWN_VERSIONS:
            seeds.append(encode_request(empty_entity(request_type(api_key, version)), 1, "seed"))
        else:
            seeds.append(struct.pack(">hhih", api_key, version, 1, -1) + msgpack.packb({}))
    return seeds


_LARGE_BATCH = build_batch([Record(0, 1_700_000_000_000, None, bytes(range(256)) * 520)])
"""Over 128 KiB, so that a Produce carrying it is read by the hand reader (`produce_request`), not kio."""


def _large_produce(version: int, draw: Any) -> bytes:
    cls = request_type(0, version)
    module = importlib.import_module(cls.__module__)
    partition = module.PartitionProduceData(index=draw(st.integers(-1, 3)), records=Records(_LARGE_BATCH))
    if "topic_id" in {field.name for field in dataclasses.fields(module.TopicProduceData)}:  # v13 names it by id
        topic_id = draw(st.sampled_from([None, uuid.UUID(int=1), uuid.UUID(int=2**127 + 12345)]))
        topic = module.TopicProduceData(topic_id=topic_id, partition_data=(partition,))
    else:
        topic = module.TopicProduceData(name=draw(st.sampled_from(["fuzz", "", "a" * 300])),
                                        partition_data=(partition,))
    request = dataclasses.replace(empty_entity(cls), acks=draw(st.sampled_from([-1, 0, 1, 7])), topic_data=(topic,))
    return encode_request(request, 1, "large")


@st.composite
def seed_payloads(draw: Any) -> bytes:
    """A well-formed request (without its size prefix) of a served (API key, version); half the Produce requests
    are large ones."""
    api_key, version = draw(st.sampled_from(SERVED))
    if api_key == 0 and draw(st.booleans()):
        return _large_produce(version, draw)
    return _seed_payload(api_key, version, draw)


@st.composite
def mutated_payloads(draw: Any, captured: Sequence[bytes] = ()) -> bytes:
    """A seed request (or one of ``captured``, real clients' frames) with up to four mutations (none: well-formed,
    every field value hostile)."""
    seeds = st.one_of(seed_payloads(), st.sampled_from(captured)) if captured else seed_payloads()
    payload = bytearray(draw(seeds))
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, max(len(payload) - 1, 0)))
        kind = draw(st.sampled_from(["flip", "insert", "overwrite", "truncate", "header", "random", "length",
                                     "length"]))
        if kind == "length":
            _forge_length(payload, draw)
        elif kind == "flip" and payload:
            payload[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "insert":
            payload[at:at] = draw(st.sampled_from(INTERESTING))
        elif kind == "overwrite":
            value = draw(st.sampled_from(INTERESTING))
            payload[at:at + len(value)] = value
        elif kind == "truncate":
            del payload[at:]
        elif kind == "header":
            api_key, version = draw(st.sampled_from(SERVED))
            payload[0:4] = struct.pack(">hh", api_key, draw(st.sampled_from([version, version + 1, -1, 0x7fff])))
        else:
            payload[at:at + draw(st.integers(0, 8))] = draw(st.binary(min_size=1, max_size=8))
    return bytes(payload)


def _forge_length(payload: bytearray, draw: Any) -> None:
    """Replace what is probably a count or length with a hostile value: a byte of 1-16 (a compact length) with a
    huge varint, or a big-endian int32 of 0-16 with a huge or negative one. Random positions hit a length so
    rarely that 2400 frames against a broker without its bounds check never once reached kio's abort."""
    if draw(st.booleans()):
        compact = [index for index in range(8, len(payload)) if 1 <= payload[index] <= 16]
        if compact:
            index = draw(st.sampled_from(compact))
            payload[index:index + 1] = draw(st.sampled_from(HUGE_VARINTS))
        return
    legacy = [index for index in range(8, len(payload) - 3)
              if payload[index:index + 3] == b"\x00\x00\x00" and payload[index + 3] <= 16]
    if legacy:
        index = draw(st.sampled_from(legacy))
        payload[index:index + 4] = draw(st.sampled_from([b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe",
                                                         b"\x40\x00\x00\x00"]))


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload
