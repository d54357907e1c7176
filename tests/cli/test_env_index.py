"""`evcli env index DIR` (issue 27): the log index of every log file and the trace index built ahead of the
first query, in real processes on real files: a later `evcli tool query_logs` builds nothing (the index
files keep their inode and mtime), a second run reuses everything and says so, `--json`, a file that cannot
be read (exit 1, the others still built), a bad directory (exit 2, one line), and a progress bar on a
terminal only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evcli.backends.logindex import SUFFIX
from tests.backends.test_trace_index import write_calls
from tests.cli._util import assert_clean_error, evcli
from tests.terminal import stderr_on_a_terminal
from tests.tools.test_query_logs_first_use import grep_count, write_log


def run(home: Path, *args: object) -> subprocess.CompletedProcess[str]:
    """`python -m evcli ARGS` as its own process, stdout and stderr piped."""
    environment = {**os.environ, "EVCLI_HOME": str(home), "COLUMNS": "200", "NO_COLOR": "1"}
    command = [sys.executable, "-m", "evcli", *map(str, args)]
    return subprocess.run(command, env=environment, capture_output=True, text=True, timeout=300)


def index_state(home: Path) -> dict[str, tuple[int, int]]:
    """Every file of the index directory: name → (inode, mtime_ns)."""
    return {path.name: (path.stat().st_ino, path.stat().st_mtime_ns) for path in (home / "logindex").iterdir()}


@pytest.fixture
def env(tmp_path) -> Path:
    root = tmp_path / "env"
    write_log(root / "logs" / "app.log", 3_000)
    write_log(root / "logs" / "db.log", 800)
    write_calls(root / "traces" / "calls.jsonl", 200)
    return root


def test_a_query_after_env_index_builds_nothing_and_a_second_index_run_reuses_everything(env, evcli_home):
    first = run(evcli_home, "env", "index", env)
    assert first.returncode == 0, first
    lines = first.stdout.splitlines()
    assert lines[0] == "traces/ (1 file): built, 600 spans in " + lines[0].split(" in ")[-1]
    assert [line.split(":")[0] for line in lines[2:4]] == ["logs/app.log", "logs/db.log"]
    assert "logs/app.log: built, 3000 lines (iso8601) in " in first.stdout
    assert lines[-1] == "ok 3 built, 0 reused, 0 failed"
    built = index_state(evcli_home)
    extensions = sorted(name.rsplit(".", 1)[-1] for name in built if not name.startswith("stat-"))
    assert extensions == ["db", SUFFIX[1:], SUFFIX[1:]]  # the trace index, and a store per log file

    query = run(evcli_home, "tool", "query_logs", "--env", env, "--service", "app", "--query", "timeout", "--json")
    assert query.returncode == 0, query
    assert json.loads(query.stdout)["output"]["total"] == grep_count(env / "logs" / "app.log", "timeout") > 0
    assert index_state(evcli_home) == built  # no index built again, none added

    again = run(evcli_home, "env", "index", env)
    assert again.returncode == 0, again
    entries = [line for line in again.stdout.splitlines() if not line.startswith(("  ", "ok "))]
    assert [entry.split(": ")[1].split(",")[0] for entry in entries] == ["reused"] * 3, again.stdout
    assert again.stdout.splitlines()[-1] == "ok 0 built, 3 reused, 0 failed"
    assert index_state(evcli_home) == built


def test_json_states_each_index_and_the_totals(env):
    evcli("env", "index", env)
    data = evcli("env", "index", env, "--json").json()
    assert set(data) == {"directory", "name", "logs", "traces", "built", "reused", "failed", "ok"}
    assert (data["built"], data["reused"], data["failed"], data["ok"]) == (0, 3, 0, True)
    assert [(log["path"], log["action"], log["lines"], log["format"], log["error"]) for log in data["logs"]] == [
        ("logs/app.log", "reused", 3_000, "iso8601", None),
        ("logs/db.log", "reused", 800, "iso8601", None),
    ]
    assert all(isinstance(log["seconds"], float) for log in data["logs"])
    traces = data["traces"]
    assert (traces["action"], traces["spans"], traces["error"]) == ("reused", 600, None)
    assert traces["files"] == [{"path": "traces/calls.jsonl", "spans": 600, "format": "otlp", "error": None}]


def test_a_file_that_cannot_be_read_is_named_exit_1_and_the_others_are_still_built(env, tmp_path):
    outside = tmp_path / "outside.log"
    outside.write_text("2026-07-08T00:00:00Z ERROR not in the snapshot\n")
    (env / "logs" / "away.log").symlink_to(outside)  # leads out of the directory: refused, never read
    done = evcli("env", "index", env, "--json")
    assert done.exit_code == 1, done
    data = done.json()
    assert (data["ok"], data["built"], data["failed"]) == (False, 3, 1)
    failed = [log for log in data["logs"] if log["action"] == "failed"]
    assert [log["path"] for log in failed] == ["logs/away.log"] and "logs/away.log" in failed[0]["error"]
    text = evcli("env", "index", env)
    assert text.exit_code == 1 and "logs/away.log: failed logs/away.log: cannot read" in text.stdout, text


def test_a_bad_directory_is_one_line_and_exit_2(tmp_path):
    assert_clean_error(evcli("env", "index", tmp_path / "nosuch"), 2, "does not exist or is not a directory")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "env.toml").write_text("timezone = [\n")
    assert_clean_error(evcli("env", "index", tmp_path / "broken"), 2, "env.toml: invalid TOML")


def _stderr_on_a_terminal(home: Path, env: Path) -> str:
    environment = {**os.environ, "EVCLI_HOME": str(home), "COLUMNS": "100"}
    return stderr_on_a_terminal([sys.executable, "-m", "evcli", "env", "index", str(env)], environment)


def test_a_progress_bar_shows_while_a_big_log_is_indexed_on_a_terminal_only(tmp_path):
    env = tmp_path / "env"
    write_log(env / "logs" / "app.log", 120_000)  # over 8 MiB: a build long enough for a bar
    assert (env / "logs" / "app.log").stat().st_size > 8 << 20
    assert "indexing app.log" in _stderr_on_a_terminal(tmp_path / "home-tty", env)
    piped = run(tmp_path / "home-pipe", "env", "index", env)
    assert piped.returncode == 0 and piped.stderr == "", piped
    assert piped.stdout.startswith("logs/app.log: built, 120000 lines")
