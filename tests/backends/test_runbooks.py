"""The runbooks knowledge backend over real directories and a real index file: several directories
searched together, an edited runbook seen by the next lookup, no directory is a failed lookup."""

from __future__ import annotations

import pytest

from evcli.backends.runbooks import RunbooksBackend
from evcli.core.errors import BackendError


def _runbook(directory, name: str, title: str, body: str) -> None:
    (directory / "runbooks").mkdir(parents=True, exist_ok=True)
    (directory / "runbooks" / f"{name}.md").write_text(f"---\nskill: {name}\n---\n# {title}\n\n{body}\n")


def test_several_directories_are_searched_together(tmp_path):
    _runbook(tmp_path / "a", "disk", "Disk full", "Delete old journal files when the disk is full.")
    _runbook(tmp_path / "b", "redis", "Redis latency", "Look for hot keys when redis latency grows.")
    backend = RunbooksBackend([tmp_path / "a", tmp_path / "b"], tmp_path / "kb.db")

    docs = {
        block["title"] for block in backend.search("disk full redis latency", limit=5, alertname=None, service=None)
    }

    assert docs == {"Disk full", "Redis latency"}
    assert sorted(skill["name"] for skill in backend.skills()) == ["disk", "redis"]


def test_an_edited_runbook_is_seen_by_the_next_lookup(tmp_path):
    _runbook(tmp_path, "disk", "Disk full", "Delete old journal files.")
    backend = RunbooksBackend(tmp_path, tmp_path / "kb.db")
    assert backend.search("inode exhaustion", limit=3, alertname=None, service=None) == []

    _runbook(tmp_path, "disk", "Disk full", "Inode exhaustion: find directories with millions of small files.")

    (block,) = backend.search("inode exhaustion", limit=3, alertname=None, service=None)
    assert "millions of small files" in block["text"]


def test_no_directory_is_a_failed_lookup_not_an_empty_one(tmp_path):
    with pytest.raises(BackendError, match="no runbooks configured"):
        RunbooksBackend([], tmp_path / "kb.db").search("disk", limit=3, alertname=None, service=None)
