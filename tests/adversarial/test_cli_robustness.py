"""Expected failures are expected: one `error:` line and the documented exit code, never "unexpected".

One probe per class: usage errors, empty text, hostile input documents, a bad store, a bad target,
a bad environment, a misspelt rules file, a full disk.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from evcli.store.db import TraceStore
from tests.cli._util import RULES, assert_clean_error, evcli, sample_files

SAMPLE = sample_files()[0]


def _document(**run_changes):
    data = json.loads(SAMPLE.read_text(encoding="utf-8"))
    data["run"].update(run_changes)
    return data


def _write(tmp_path, name, data) -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("ask", "--zzyzx", "x"), "No such option: --zzyzx (try '"),  # no option is like it: no suggestion
        (("trace",), "Missing argument"),
        (("sessions", "-n", "abc"), "Invalid value for '--limit'"),
        (("tool", "query_logs", "--bogus"), "No such option: --bogus"),
    ],
)
def test_option_errors_are_one_line_with_exit_2(args, fragment):
    assert_clean_error(evcli(*args), 2, fragment)


@pytest.mark.parametrize(
    "args", [("ask", ""), ("ask", "  \t "), ("plan", " "), ("kb", "search", ""), ("kb", "search", "   ")]
)
def test_empty_question_or_query_is_a_usage_error(args, db_path):
    assert_clean_error(evcli(*args), 2, "is empty")


def test_100000_deep_json_is_bad_input(tmp_path, db_path):
    deep = _write(tmp_path, "deep.json", "[" * 100_000 + "]" * 100_000)
    for args in (("import", deep), ("trace", deep), ("gate", deep), ("aiops", deep)):
        assert_clean_error(evcli(*args), 2, "nested too deeply")


def test_hostile_documents_are_bad_input(tmp_path, db_path):
    duplicate = _document(session_id="dup-1")
    duplicate["invocations"].append(dict(duplicate["invocations"][0]))
    huge = _document(session_id="huge-1")
    huge["invocations"][0]["invocation_id"] = 10**30
    surrogate = json.dumps(_document(session_id="sur-1")).replace('"question": "', '"question": "\\ud800', 1)
    for name, data in (("dup.json", duplicate), ("huge.json", huge), ("sur.json", surrogate)):
        run = evcli("import", _write(tmp_path, name, data))
        line = assert_clean_error(run, 2)
        assert "unexpected" not in line, run


def test_huge_limit_is_taken_as_no_limit(db_path):
    TraceStore(db_path).close()
    run = evcli("sessions", "-n", str(10**30), "--db", db_path)
    assert run.exit_code == 0, run


def test_a_corrupt_store_or_a_directory_as_store_is_one_line(tmp_path):
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"not sqlite " * 500)
    assert_clean_error(evcli("ask", "why is payment-service slow", "--db", corrupt), 1, "not a database")
    assert_clean_error(evcli("sessions", "--db", tmp_path), 2, "is a directory")


def test_a_bad_export_target_is_a_runtime_error(tmp_path, db_path):
    assert evcli("import", SAMPLE).exit_code == 0
    session_id = _document()["run"]["session_id"]
    for target in (tmp_path, SAMPLE / "x.json", "/proc/x.json"):
        line = assert_clean_error(evcli("export", session_id, "-o", target), 1)
        assert "unexpected" not in line
    line = assert_clean_error(evcli("export", "--all", "-o", SAMPLE), 1)
    assert "unexpected" not in line


def test_a_broken_environment_is_a_runtime_error(tmp_path, db_path):
    env = tmp_path / "env"
    env.mkdir()
    (env / "env.toml").write_text("[[[", encoding="utf-8")
    assert_clean_error(evcli("ask", "why is payment-service slow", "--env", env), 1, "env.toml")


def test_a_read_only_store_says_so(tmp_path):
    db_path = tmp_path / "ro.db"
    TraceStore(db_path).close()
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", db_path], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here")
    try:
        assert_clean_error(evcli("ask", "why is payment-service slow", "--db", db_path), 1, "read-only")
    finally:
        subprocess.run(["chattr", "-i", db_path], check=True)


@pytest.mark.parametrize(
    "mutation, fragment",
    [
        (lambda text: text.replace("[composer]", "[composr]"), "'composr'"),
        (lambda text: text.replace('id = "binding.unique_item"', 'id = ["binding.unique_item"]'), "unknown id"),
        (lambda text: text.replace("default_severity", "severity = 'reject'\ndefault_severity", 1), "'severity'"),
        (lambda text: text.replace("overstatement_phrases", "overstatment_phrases", 1), "'overstatment_phrases'"),
        (lambda text: "x = " + "[" * 50_000 + "]" * 50_000 + "\n" + text, "nested too deeply"),
    ],
)
def test_a_misspelt_rules_file_is_an_error_naming_file_and_key(tmp_path, db_path, mutation, fragment):
    rules = _write(tmp_path, "rules.toml", mutation(RULES.read_text(encoding="utf-8")))
    line = assert_clean_error(evcli("gate", SAMPLE, "--rules", rules), 2, fragment)
    assert "rules.toml" in line


def test_a_full_disk_says_disk_full(tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mount], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        db_path = mount / "evcli.db"
        TraceStore(db_path).close()
        big = _write(tmp_path, "big.json", _document(session_id="big-1", annotations={"pad": "x" * 400_000}))
        env = dict(os.environ, EVCLI_HOME=str(mount), NO_COLOR="1")
        done = subprocess.run(
            [sys.executable, "-m", "evcli", "import", big, "--db", str(db_path)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 1, done
        assert done.stderr.strip().splitlines() == [f"error: disk full: cannot write trace store {db_path}"], (
            done.stderr
        )
    finally:
        subprocess.run(["umount", mount], check=False)
