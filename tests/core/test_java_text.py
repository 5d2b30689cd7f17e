"""`core.java_text`: a string as Java's UTF-8 encoder writes it."""

from __future__ import annotations

import json

from logwright.core.java_text import java_utf8


def test_each_unpaired_surrogate_is_written_as_a_question_mark() -> None:
    assert java_utf8("al\udc7ace") == "al?ce"
    assert java_utf8("\ud800\ud800x\udfff") == "??x?"


def test_text_java_writes_as_it_is_comes_back_unchanged() -> None:
    for text in ["", "alice", "é ü 日本", "\U0001f600", "a\x00b"]:
        assert java_utf8(text) == text


def test_a_json_escaped_pair_is_one_character_and_half_a_pair_is_not() -> None:
    """Python's JSON reader joins an escaped pair, as Jackson's string holds it as one code point's two chars."""
    assert java_utf8(json.loads('"\\ud83d\\ude00"')) == "\U0001f600"
    assert java_utf8(json.loads('"\\ud83dx"')) == "?x"
