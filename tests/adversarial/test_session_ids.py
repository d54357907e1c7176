"""Session ids never become paths outside their place (issue 11, path traversal).

One pattern (evcli.contracts.SESSION_ID_PATTERN) holds for every id: a parsed
document, `import --new-id`, a session argument, and every file `export` writes.
Each probe goes through the real CLI against a real SQLite file.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from evcli.contracts import RunRecord
from tests.cli._util import assert_clean_error, evcli, load_json, sample_files, snapshot
from tests.conftest import sample

BAD_IDS = [
    "/x",
    "../../x",
    "../x",
    "a/b",
    "..",
    ".",
    "",
    ".hidden",
    "a\\b",
    "x\n",
    "x\x00y",
    "-rf",
    " x",
    "x" * 129,
    "c:x",
    "ｘ/..",
    "x/",
]
GOOD_IDS = ["20250101T000000-abcdef", "sample-narrow-payment-highcpu", "copy-1", "other", "old-1", "a.b_c-9"]


def _document_with_id(tmp_path, session_id: str):
    data = load_json(sample("narrow-payment-highcpu"))
    data["run"]["session_id"] = session_id
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
def test_import_of_a_document_with_a_bad_id_stores_nothing(bad, tmp_path):
    db = tmp_path / "x.db"
    path = _document_with_id(tmp_path, bad)

    assert_clean_error(evcli("import", path, "--db", db), 2, "run.session_id")
    assert not db.exists() or snapshot(db)["diagnosis_run"] == []


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
def test_import_new_id_must_match_the_pattern(bad, tmp_path):
    db = tmp_path / "x.db"

    assert_clean_error(evcli("import", sample("narrow-payment-highcpu"), "--db", db, "--new-id", bad), 2, "session id")
    assert not db.exists() or snapshot(db)["diagnosis_run"] == []


@pytest.mark.parametrize("bad", BAD_IDS[:4], ids=repr)
def test_a_parsed_document_never_carries_a_bad_id(bad):
    with pytest.raises(ValueError):
        RunRecord(session_id=bad)


@pytest.mark.parametrize("good", GOOD_IDS)
def test_generated_sample_and_test_ids_stay_valid(good):
    assert RunRecord(session_id=good).session_id == good


def test_every_shipped_sample_and_a_generated_id_are_valid(tmp_path):
    from evcli.store.db import new_session_id

    for path in sample_files():
        RunRecord.model_validate(load_json(path)["run"])
    RunRecord(session_id=new_session_id())


def _store_with_row_id(tmp_path, session_id: str):
    """A store whose row carries a hostile id, as an older evcli or a hand edit could leave it."""
    db = tmp_path / "x.db"
    assert evcli("import", sample("narrow-payment-highcpu"), "--db", db).exit_code == 0
    with sqlite3.connect(db) as conn:
        for table in ("diagnosis_run", "agent_step", "tool_invocation", "stage_output", "gate_result"):
            conn.execute(f"UPDATE {table} SET session_id = ?", [session_id])
    return db


@pytest.mark.parametrize("bad", ["../../escaped", "/tmp/evcli-escaped-abs"], ids=repr)
def test_export_all_never_writes_outside_its_directory(bad, tmp_path):
    db = _store_with_row_id(tmp_path, bad.replace("/tmp/", str(tmp_path) + "/") if bad.startswith("/") else bad)
    out_dir = tmp_path / "a" / "b" / "exports"

    def files() -> list:  # the store's own files (its WAL, its remembered integrity check) are its place
        return sorted(p for p in tmp_path.rglob("*") if p.is_file() and not p.name.startswith(db.name))

    before = files()
    assert_clean_error(evcli("export", "--all", "-o", out_dir, "--db", db), 2, "session id")
    assert files() == before


def test_export_all_refuses_a_symlink_leading_outside(tmp_path):
    db = tmp_path / "x.db"
    assert evcli("import", sample("narrow-payment-highcpu"), "--db", db).exit_code == 0
    out_dir = tmp_path / "exports"
    out_dir.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me", encoding="utf-8")
    (out_dir / "sample-narrow-payment-highcpu.json").symlink_to(victim)

    assert_clean_error(evcli("export", "--all", "-o", out_dir, "--db", db), 2, "outside")
    assert victim.read_text(encoding="utf-8") == "keep me"


@pytest.mark.parametrize("command", ["export", "trace", "gate"])
def test_a_bad_session_argument_is_a_usage_error(command, tmp_path):
    db = tmp_path / "x.db"
    assert evcli("import", sample("narrow-payment-highcpu"), "--db", db).exit_code == 0

    assert_clean_error(evcli(command, "../../x", "--db", db), 2, "session id")
