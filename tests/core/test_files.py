"""evcli.core.files: containment, regular files only, bounded reads and the read deadline."""

from __future__ import annotations

import io
import os
import time

import pytest

from evcli.core.errors import BadInput
from evcli.core.files import (
    Deadline,
    DeadlineExceeded,
    Lines,
    ReadLimits,
    RefusedFile,
    deadline_scope,
    open_text,
    read_bytes,
    walk,
)


def test_a_symlink_inside_is_followed_and_one_leading_out_is_refused(tmp_path):
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir(), elsewhere.mkdir()
    (root / "a.log").write_text("inside\n")
    (elsewhere / "b.log").write_text("outside\n")
    (root / "in.log").symlink_to("a.log")
    (root / "out.log").symlink_to(elsewhere / "b.log")
    assert read_bytes(root / "in.log", root) == b"inside\n"
    with pytest.raises(RefusedFile, match="refused: a symlink leading outside"):
        read_bytes(root / "out.log", root)


def test_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.log")
    started = time.monotonic()
    with pytest.raises(RefusedFile, match=r"not a regular file \(a FIFO\)"):
        open_text(tmp_path / "pipe.log", tmp_path)
    assert time.monotonic() - started < 1


def test_a_document_over_the_size_limit_is_refused(tmp_path):
    (tmp_path / "alerts.json").write_bytes(b"x" * 101)
    assert len(read_bytes(tmp_path / "alerts.json", tmp_path, limit=101)) == 101
    with pytest.raises(RefusedFile, match="larger than 100 bytes"):
        read_bytes(tmp_path / "alerts.json", tmp_path, limit=100)


def test_lines_cuts_an_overlong_line_and_counts_it():
    lines = Lines(io.StringIO("short\n" + "y" * 50 + "\nlast"), max_chars=10)
    assert list(lines) == ["short\n", "y" * 10, "last"]
    assert lines.cut == 1


def test_a_cut_whose_kept_part_ends_in_a_carriage_return_still_skips_the_rest_of_its_line():
    text = "x" * 9 + "\r" + "y" * 20 + "\r\nnext\r\n"
    lines = Lines(io.TextIOWrapper(io.BytesIO(text.encode()), encoding="utf-8", newline="\n"), max_chars=10)
    assert list(lines) == ["x" * 9 + "\r", "next\r\n"]  # the line numbers grep -n gives: 1, 2
    assert lines.cut == 1


def test_lines_stop_when_the_deadline_passes():
    deadline = Deadline(60)
    with deadline_scope(deadline):
        lines = iter(Lines(io.StringIO("z" * 100_000 + "\n" + "line\n" * 100_000)))
        next(lines)
        deadline.cancel()
        with pytest.raises(DeadlineExceeded, match="timed out after 60s"):
            list(lines)


def test_walk_lists_wanted_files_others_and_refused_entries(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n")
    (tmp_path / "docs" / "notes.txt").write_text("x")
    (tmp_path / "docs" / "loop").symlink_to(tmp_path / "docs", target_is_directory=True)
    os.mkfifo(tmp_path / "docs" / "pipe.md")
    found = walk(tmp_path, suffix=".md")
    assert found.files == [tmp_path / "docs" / "a.md"]
    assert found.others == [tmp_path / "docs" / "notes.txt"]
    assert [(path.name, "FIFO" in why) for path, why in found.refused] == [("pipe.md", True)]


def test_walk_limits_hold_up_to_the_last_entry(tmp_path):
    for number in range(3):
        (tmp_path / f"{number}.md").write_text("# x\n")
    assert len(walk(tmp_path, suffix=".md", limits=ReadLimits(max_files=3)).files) == 3
    with pytest.raises(BadInput, match=r"more than 2 \.md files"):
        walk(tmp_path, suffix=".md", limits=ReadLimits(max_files=2))
    with pytest.raises(BadInput, match="more than 2 entries"):
        walk(tmp_path, suffix=".md", limits=ReadLimits(max_entries=2))
