"""bench/machine_effects.py reads py-spy's raw output to find the share of samples a line takes as the innermost
frame; a stack that only passes through that line must not count."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from machine_effects import _leaf_share, kept_page_cache, write_file  # noqa: E402


def test_only_samples_whose_innermost_frame_is_the_line_count(tmp_path: Path) -> None:
    raw = tmp_path / "raw.txt"
    raw.write_text(
        "<module> (spin.py:13);spin (spin.py:11) 3\n"
        "<module> (spin.py:13);spin (spin.py:10);work (spin.py:5) 90\n"
        "<module> (spin.py:13);spin (spin.py:11);inner (other.py:2) 7\n"
        "\n"
    )
    assert _leaf_share(raw, "spin.py:11)") == 0.03


def test_an_empty_profile_has_no_share(tmp_path: Path) -> None:
    raw = tmp_path / "raw.txt"
    raw.write_text("")
    assert _leaf_share(raw, "spin.py:11)") == 0.0


def test_writing_a_file_reports_kernel_seconds_per_gb_and_leaves_the_bytes(tmp_path: Path) -> None:
    path = tmp_path / "touch.bin"
    seconds_per_gb = write_file(path, 2)
    assert seconds_per_gb >= 0.0
    assert path.stat().st_size == 2 << 20


def test_the_kept_page_cache_probe_writes_each_chunk_kept_then_one_after_the_drop(tmp_path: Path) -> None:
    sizes: list[int] = []

    def drop() -> bool:
        sizes.append(sum(path.stat().st_size for path in tmp_path.iterdir()))
        return True

    figures = kept_page_cache(1, 3, tmp_path, drop)
    assert list(figures) == ["0 GB kept s/GB", "0.000976562 GB kept s/GB", "0.00195312 GB kept s/GB", "dropped s/GB"]
    assert sizes == [3 << 20], "the drop comes after every chunk was written and kept"
    assert not list(tmp_path.iterdir()), "the probe removes its files"


def test_without_leave_to_drop_the_probe_says_nothing_of_a_drop(tmp_path: Path) -> None:
    figures = kept_page_cache(1, 2, tmp_path, lambda: False)
    assert "dropped s/GB" not in figures and len(figures) == 2
