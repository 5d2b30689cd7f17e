"""The frame decoder: golden bytes, any chunking, and refusal of bad size prefixes."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from logwright.compat.wire.encoder import Encoded, answered_once, encode_entity
from logwright.compat.wire.framing import (
    OWN_BUFFER_FROM,
    OWN_BUFFER_UP_TO,
    READ_BUFFER_BYTES,
    FrameDecoder,
    FrameTooLarge,
    InvalidFrame,
    encode_frame,
    frame_pieces,
)


def test_encode_frame_prefixes_the_big_endian_size() -> None:
    assert encode_frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert encode_frame(b"") == b"\x00\x00\x00\x00"
    assert encode_frame(memoryview(b"xy")) == b"\x00\x00\x00\x02xy"


def test_two_frames_in_one_read_and_a_partial_third() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(b"\x00\x00\x00\x02hi\x00\x00\x00\x01!\x00\x00\x00\x05ab") == [b"hi", b"!"]
    assert decoder.buffered == 6
    assert decoder.feed(b"c") == []
    assert decoder.feed(b"de\x00") == [b"abcde"]
    assert decoder.buffered == 1


def test_frame_prefix_split_across_reads() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(b"\x00") == []
    assert decoder.feed(b"\x00\x00") == []
    assert decoder.feed(bytearray(b"\x03ab")) == []
    assert decoder.feed(memoryview(b"c")) == [b"abc"]
    assert decoder.buffered == 0


def test_empty_frame_is_returned_for_the_header_parser_to_refuse() -> None:
    assert FrameDecoder().feed(b"\x00\x00\x00\x00") == [b""]


def test_oversize_prefix_is_refused_before_the_body_arrives() -> None:
    decoder = FrameDecoder(max_request_bytes=1000)
    with pytest.raises(FrameTooLarge) as refused:
        decoder.feed((1001).to_bytes(4, "big"))
    assert refused.value.size == 1001
    assert refused.value.limit == 1000
    assert "1001" in str(refused.value) and "1000" in str(refused.value)


def test_frame_at_the_limit_is_accepted() -> None:
    assert FrameDecoder(max_request_bytes=3).feed(encode_frame(b"abc")) == [b"abc"]


def test_default_limit_is_kafkas_socket_request_max_bytes() -> None:
    with pytest.raises(FrameTooLarge, match="104857600"):
        FrameDecoder().feed((104857601).to_bytes(4, "big"))


def test_oversize_prefix_after_a_good_frame_is_still_refused() -> None:
    with pytest.raises(FrameTooLarge):
        FrameDecoder(max_request_bytes=10).feed(encode_frame(b"ok") + (11).to_bytes(4, "big"))


def test_negative_size_is_an_invalid_frame() -> None:
    with pytest.raises(InvalidFrame, match="-1"):
        FrameDecoder().feed(b"\xff\xff\xff\xff")


def test_http_request_is_not_mistaken_for_a_frame() -> None:
    with pytest.raises(FrameTooLarge):
        FrameDecoder().feed(b"GET / HTTP/1.1\r\n")


def test_large_frame_in_small_pieces() -> None:
    payload = bytes(range(256)) * 4096
    stream = encode_frame(payload)
    decoder = FrameDecoder()
    frames = [frame for start in range(0, len(stream), 4093) for frame in decoder.feed(stream[start : start + 4093])]
    assert frames == [payload]


def test_a_frame_arriving_a_byte_a_read_holds_about_its_bytes() -> None:
    """Each read was kept as a piece: 43 bytes of objects per byte the partial-frame budget counted."""
    payload = bytes(range(256)) * 400  # under OWN_BUFFER_FROM: joined from the reads, not read into its own buffer
    stream = encode_frame(payload)
    decoder = FrameDecoder()
    tracemalloc.start()
    try:
        for index in range(len(stream) - 1):
            assert decoder.feed(stream[index : index + 1]) == []
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert decoder.buffered == len(stream) - 1
    assert held < 2 * len(stream), f"{held} bytes held for {len(stream)} buffered"
    assert decoder.feed(stream[-1:]) == [payload]
    assert decoder.feed(stream[:3]) == [] and decoder.feed(stream[3:]) == [payload], "and the next frame reads as ever"


@given(
    frames=st.lists(st.binary(max_size=300), max_size=20),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=30),
)
def test_any_chunking_returns_the_same_frames(frames: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(encode_frame(frame) for frame in frames)
    points = sorted({cut % (len(stream) + 1) for cut in cuts} | {0, len(stream)})
    decoder = FrameDecoder()
    received: list[bytes] = []
    for start, end in zip(points, points[1:], strict=False):
        received += decoder.feed(stream[start:end])
    assert received == frames
    assert decoder.buffered == 0


def test_frame_pieces_join_small_parts_and_pass_large_ones_on_uncopied() -> None:
    batch = bytes(range(256)) * 100
    parts = [b"\x00\x00\x00\x07", b"\x00", batch, b"\x01\x02", batch, b"\x00"]
    pieces = frame_pieces(parts)
    assert b"".join(pieces) == encode_frame(b"".join(parts))
    assert len(pieces) == 5 and pieces[1] is batch and pieces[3] is batch


def test_frame_pieces_of_small_bytes_only_are_one_piece_and_a_small_part_of_another_kind_stays_apart() -> None:
    """The fast path (everything small and bytes) must not swallow a range of a batch file, whatever its size."""

    class Range:
        def __len__(self) -> int:
            return 10

    small = [b"\x00\x00\x00\x07", b"\x00" * 100, b"\x01\x02"]
    assert frame_pieces(small) == [encode_frame(b"".join(small))]
    sent = Range()
    pieces = frame_pieces([*small, sent, memoryview(b"\x05"), b"\x06"])
    assert pieces[1] is sent and len(pieces) == 3
    assert pieces[0] == (106 + 10 + 2).to_bytes(4, "big") + b"".join(small) and pieces[2] == b"\x05\x06"


def test_small_parts_are_joined_into_pieces_of_a_quarter_mib_at_most() -> None:
    """A 50 MB Fetch answer of small stored batches joined whole was a fresh 50 MB allocation a Fetch, page-faulted
    in anew each time; joined a quarter MiB at a time it reuses the heap. Large parts still pass uncopied."""
    batch = bytes(range(256)) * 40  # 10 KB: below the size passed on by reference
    large = bytes(20_000)
    parts = [b"\x00\x01", *([batch] * 100), large, *([b"\x02", batch] * 60)]
    pieces = frame_pieces(parts)
    assert b"".join(pieces) == encode_frame(b"".join(parts))
    assert max(map(len, pieces)) < 256 * 1024 + len(batch), "no piece joined past the cap by more than a part"
    assert len(pieces) == 8 and pieces[4] is large  # 1 MB before it in 4 pieces, 600 KB after it in 3
    small = [b"\x00" * 1_000] * 300
    assert len(frame_pieces(small)) == 2, "the all-small path joins at the cap too (300 KB)"


def test_an_encoded_entity_met_again_in_an_answer_is_passed_on_by_reference() -> None:
    """DescribeGroups naming groups again and again (`answered_once`): the first copy of each is joined with its
    neighbours, every later one is the same object, whatever the order; unrelated small parts are still joined."""
    first, second = Encoded(b"g" * 10_000), Encoded(b"h" * 3_000)  # 32 KB in all: not joined at once
    parts = [b"\x00\x00\x00\x07", first, second, first, b"\x01", second, second, Encoded(b"h" * 3_000)]
    pieces = frame_pieces(parts)
    assert b"".join(pieces) == encode_frame(b"".join(parts))
    assert [piece is first for piece in pieces].count(True) == 1
    assert [piece is second for piece in pieces].count(True) == 2
    assert len(pieces) == 6  # joined, first, b"\x01" (joined), second, second, the last (a distinct object) joined


def test_a_small_entity_answered_again_is_copied_with_its_neighbours() -> None:
    """A million repeats of an 18-byte unknown group were a million pieces for the server to walk one by one."""
    small, large = Encoded(b"s" * 18), Encoded(b"l" * 300)
    parts = [b"\x00\x00\x00\x07", small, large, *([small] * 2_000), large, b"x" * 20_000]
    pieces = frame_pieces(parts)
    assert b"".join(pieces) == encode_frame(b"".join(parts))
    assert [piece is large for piece in pieces].count(True) == 1, "the 300-byte one again: by reference"
    assert len(pieces) == 3  # the prefix, small, large and the 2,000 small repeats joined; large again; 20 KB part


def test_answered_once_describes_each_name_once_and_repeats_its_bytes() -> None:
    described: list[str] = []

    def describe(name: str) -> ApiVersionsRequest:
        described.append(name)
        return ApiVersionsRequest(client_software_name=name, client_software_version="1")

    answers = answered_once(["a", "b", "a", "a", "b", "c"], describe)
    assert described == ["a", "b", "c"]
    assert answers[0] == describe("a") and answers[1] == describe("b") and answers[5] == describe("c")
    assert isinstance(answers[2], Encoded) and answers[2] is answers[3]
    assert answers[2] == encode_entity(answers[0]) and answers[4] == encode_entity(answers[1])


@given(st.lists(st.binary(max_size=20_000), max_size=6))
def test_frame_pieces_are_the_frame(parts: list[bytes]) -> None:
    assert b"".join(frame_pieces(parts)) == encode_frame(b"".join(parts))


def _read_into(decoder: FrameDecoder, stream: bytes, reads: list[int]) -> list[bytes | bytearray]:
    """What a BufferedProtocol does: each read fills at most what `get_buffer` offers."""
    frames: list[bytes | bytearray] = []
    position = 0
    for size in reads:
        if position == len(stream):
            break
        buffer = decoder.get_buffer()
        assert len(buffer) > 0
        count = min(size, len(buffer), len(stream) - position)
        buffer[:count] = stream[position : position + count]
        position += count
        frames += decoder.buffer_updated(count)
    if position < len(stream):
        frames += _read_into(decoder, stream[position:], [len(stream)] * (len(stream) // 1024 + 2))
    return frames


@given(sizes=st.lists(st.sampled_from([0, 1, 3, 700, OWN_BUFFER_FROM - 1, OWN_BUFFER_FROM, OWN_BUFFER_FROM + 5,
                                        3 * OWN_BUFFER_FROM]), min_size=1, max_size=5),
       reads=st.lists(st.integers(1, 3 * OWN_BUFFER_FROM), min_size=1, max_size=30))
@settings(max_examples=60, deadline=None)
def test_reading_into_its_buffers_gives_the_frames_feed_gives(sizes: list[int], reads: list[int]) -> None:
    payloads = [bytes([n % 251]) * size + n.to_bytes(2, "big") for n, size in enumerate(sizes)]
    stream = b"".join(encode_frame(payload) for payload in payloads)
    decoder = FrameDecoder()
    frames = _read_into(decoder, stream, reads)
    assert frames == payloads
    assert decoder.buffered == 0
    larger_than_a_read = [frame for frame in frames if len(frame) > READ_BUFFER_BYTES]
    assert all(type(frame) is bytearray for frame in larger_than_a_read), "read into their own buffers"


def test_a_large_frame_is_read_into_its_own_buffer_from_its_size_prefix_on() -> None:
    decoder = FrameDecoder()
    payload = bytes(range(256)) * (OWN_BUFFER_FROM // 256 + 1)
    stream = b"\x00\x00\x00\x01!" + encode_frame(payload)
    assert _read_into(decoder, stream[:7], [7]) == [b"!"]  # the next frame's prefix, half of it
    assert decoder.buffered == 2
    assert _read_into(decoder, stream[7:12], [5]) == []
    assert len(decoder.get_buffer()) == len(payload) - 3, "the rest of the frame, and no more"
    assert decoder.buffered == 7
    assert _read_into(decoder, stream[12:] + encode_frame(b"next"), [len(payload)]) == [payload, b"next"]


def test_a_frame_over_the_own_buffer_cap_is_joined_from_the_reads() -> None:
    decoder = FrameDecoder()
    assert _read_into(decoder, (OWN_BUFFER_UP_TO + 1).to_bytes(4, "big") + b"abc", [7]) == []
    assert len(decoder.get_buffer()) == READ_BUFFER_BYTES, "no buffer of the announced size before the body"
    assert decoder.buffered == 7


@given(sizes=st.lists(st.sampled_from([0, 1, 3, 700, OWN_BUFFER_FROM - 1, OWN_BUFFER_FROM + 5]), min_size=1,
                      max_size=4),
       reads=st.lists(st.tuples(st.booleans(), st.integers(1, 2 * OWN_BUFFER_FROM)), min_size=1, max_size=40))
@settings(max_examples=60, deadline=None)
def test_decoders_sharing_one_read_buffer_keep_nothing_in_it(sizes: list[int], reads: list[tuple[bool, int]]) -> None:
    """Two connections' decoders over one buffer (as the server's), reads taking turns at random; after each read
    the buffer is scribbled over, so a frame or a frame's start kept as a view into it would come out wrong."""
    shared = memoryview(bytearray(READ_BUFFER_BYTES))
    streams = [b"".join(encode_frame(bytes([side * 100 + n]) * size + n.to_bytes(2, "big"))
                        for n, size in enumerate(sizes[side::2] or [5])) for side in (0, 1)]
    expected = [FrameDecoder().feed(stream) for stream in streams]
    decoders = [FrameDecoder(read_buffer=shared), FrameDecoder(read_buffer=shared)]
    positions, frames = [0, 0], [[], []]  # type: ignore[var-annotated]
    schedule = reads + [(side, len(streams[side])) for side in (0, 1) for _ in range(len(streams[side]) // 1024 + 2)]
    for which, size in schedule:
        side = int(which)
        stream, position = streams[side], positions[side]
        if position == len(stream):
            continue
        buffer = decoders[side].get_buffer()
        count = min(size, len(buffer), len(stream) - position)
        buffer[:count] = stream[position : position + count]
        positions[side] += count
        frames[side] += decoders[side].buffer_updated(count)
        shared[:] = b"\xee" * len(shared)
    assert frames == expected
