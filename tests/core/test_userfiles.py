"""Files named on the command line: read only when regular and small enough, written by rename."""

from __future__ import annotations

import json
import os
import stat

import pytest

from evcli.core.errors import BadInput
from evcli.core.userfiles import ALERT_PAYLOAD, SESSION_DOCUMENT, DocumentKind, read_input, read_json, write_output


def test_a_document_is_read_whole(tmp_path):
    path = tmp_path / "doc.json"
    path.write_text('{"a": [1, "é"]}', encoding="utf-8")
    assert read_json(path, SESSION_DOCUMENT) == {"a": [1, "é"]}


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/null"])
def test_a_device_is_refused_before_any_read(special):
    with pytest.raises(BadInput, match=r"cannot read /dev/\w+: refused: not a regular file \(a character device\)"):
        read_input(special, ALERT_PAYLOAD)  # type: ignore[arg-type]


def test_a_fifo_is_refused_without_blocking(fifo):
    with pytest.raises(BadInput, match=r"refused: not a regular file \(a FIFO\)") as refused:
        read_json(fifo, SESSION_DOCUMENT)
    assert refused.value.hint == "give a session document as a regular file"


def test_a_symlink_to_a_device_is_refused_and_to_a_file_followed(tmp_path):
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    with pytest.raises(BadInput, match="a character device"):
        read_input(tmp_path / "zero.json", SESSION_DOCUMENT)
    (tmp_path / "real.json").write_text("[]")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    assert read_json(tmp_path / "link.json", SESSION_DOCUMENT) == []


def test_a_file_over_the_cap_is_refused_from_its_size_before_reading(tmp_path):
    sparse = tmp_path / "sparse.json"
    with sparse.open("wb") as handle:
        handle.truncate(3 << 30)  # 3 GiB of holes: reading it would take seconds and gigabytes
    with pytest.raises(BadInput, match=r"sparse.json is larger than 64 MiB, the limit for a session document"):
        read_json(sparse, SESSION_DOCUMENT)
    with pytest.raises(BadInput, match=r"larger than 8 MiB, the limit for an alert payload"):
        read_json(sparse, ALERT_PAYLOAD)


def test_a_file_exactly_at_the_cap_is_read(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text("[1, 2]")
    assert read_json(path, DocumentKind("a tiny document", 6)) == [1, 2]
    with pytest.raises(BadInput, match="larger than 5 bytes, the limit for a tiny document"):
        read_json(path, DocumentKind("a tiny document", 5))


@pytest.mark.parametrize(
    "content, message",
    [
        (b"not json", r"is not valid JSON: Expecting value at line 1 column 1"),
        (b'["\xff"]', r"cannot read .*: not UTF-8 \(invalid start byte at byte 2\)"),
        (b"[" * 100_000 + b"]" * 100_000, "is nested too deeply to be an alert payload"),
    ],
)
def test_what_is_not_json_is_bad_input(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(BadInput, match=message):
        read_json(path, ALERT_PAYLOAD)


def test_a_missing_file_and_a_directory_are_bad_input(tmp_path):
    with pytest.raises(BadInput, match="no such file: .*gone.json"):
        read_input(tmp_path / "gone.json", SESSION_DOCUMENT)
    with pytest.raises(BadInput, match=r"refused: not a regular file \(a directory\)"):
        read_input(tmp_path, SESSION_DOCUMENT)


# --- writing -------------------------------------------------------------------------------------


def test_writing_onto_a_symlink_replaces_the_link_and_leaves_its_target(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    link = tmp_path / "out" / "report.html"
    link.parent.mkdir()
    link.symlink_to(victim)

    write_output(link, "<html>")

    assert victim.read_text() == "keep me"
    assert not link.is_symlink() and link.read_text() == "<html>"
    assert os.listdir(link.parent) == ["report.html"]  # no temporary file left behind


def test_writing_onto_a_dangling_symlink_creates_nothing_at_its_target(tmp_path):
    link = tmp_path / "export.json"
    link.symlink_to(tmp_path / "elsewhere")
    write_output(link, b"{}")
    assert not (tmp_path / "elsewhere").exists() and link.read_bytes() == b"{}" and not link.is_symlink()


def test_a_directory_is_refused_and_left_alone(tmp_path):
    target = tmp_path / "taken"
    target.mkdir()
    (tmp_path / "link").symlink_to(target)
    for path in (target, tmp_path / "link"):
        with pytest.raises(IsADirectoryError):
            write_output(path, "x")
    assert os.listdir(target) == [] and sorted(os.listdir(tmp_path)) == ["link", "taken"]


def test_an_existing_file_keeps_its_mode_and_a_new_one_gets_the_umasks(tmp_path):
    private = tmp_path / "private.json"
    private.write_text("old")
    private.chmod(0o600)
    write_output(private, "new")
    assert private.read_text() == "new" and stat.S_IMODE(private.stat().st_mode) == 0o600

    previous = os.umask(0o027)
    try:
        write_output(tmp_path / "fresh.json", "x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "fresh.json").stat().st_mode) == 0o640


def test_a_failed_write_leaves_the_target_and_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "report.md"
    target.write_text("before")

    def no_space(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(OSError, match="No space left"):
        write_output(target, "after")
    assert target.read_text() == "before" and os.listdir(tmp_path) == ["report.md"]
    with pytest.raises(FileNotFoundError) as missing:
        write_output(tmp_path / "missing" / "x.json", json.dumps({}))
    assert missing.value.filename == str(tmp_path / "missing" / "x.json")  # not the temporary file's name
