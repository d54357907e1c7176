"""Helpers shared by the CLI tests: run the Typer app, read the store, write rules files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sqlite_utils import Database
from typer.testing import CliRunner

from evcli.cli import app
from tests.conftest import REPO, SAMPLES

RULES = REPO / "rules.toml"
EXIT_BY_SEVERITY = {"none": 0, "low_confid": 3, "reject": 4}
TABLES = ("diagnosis_run", "agent_step", "tool_invocation", "stage_output", "gate_result")

# A very wide console: no line of the human output is wrapped, so a line can be matched whole.
_ENV = {"COLUMNS": "4000", "NO_COLOR": "1"}
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Run:
    """One CLI invocation: exit code and the two streams, ANSI codes removed."""

    def __init__(self, result) -> None:
        self.result = result
        self.exit_code: int = result.exit_code
        self.stdout: str = _ANSI.sub("", result.stdout)
        self.stderr: str = _ANSI.sub("", result.stderr)
        self.exception = result.exception

    def json(self) -> Any:
        return json.loads(self.stdout)

    def __repr__(self) -> str:  # shown by pytest when an assertion fails
        return f"Run(exit_code={self.exit_code}, stdout={self.stdout[:2000]!r}, stderr={self.stderr[:2000]!r}, exception={self.exception!r})"


def evcli(*args: Any) -> Run:
    return Run(CliRunner().invoke(app, [str(a) for a in args], env=_ENV))


def assert_clean_error(run: Run, code: int, *fragments: str) -> str:
    """Exit `code`, nothing on stdout, exactly one stderr line `error: …` holding every fragment, no traceback."""
    assert run.exit_code == code, run
    assert isinstance(run.exception, SystemExit) or run.exception is None, run
    assert "Traceback" not in run.stderr, run
    assert run.stdout == "", run
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run
    assert lines[0].startswith("error: "), run
    for fragment in fragments:
        assert fragment in lines[0], (fragment, run)
    return lines[0]


# --- samples -------------------------------------------------------------------------


def sample_files() -> list[Path]:
    return sorted(SAMPLES.glob("*.json"))


def load_json(path: Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def session_id_of(path: Path) -> str:
    return load_json(path)["run"]["session_id"]


def expected_gate(path: Path) -> dict[str, Any]:
    return load_json(path)["run"]["annotations"]["expected_gate"]


def kind_of(path: Path) -> str:
    return load_json(path)["run"]["annotations"]["sample"]["kind"]


def import_sample(path: Path, db: Path, *extra: str) -> str:
    run = evcli("import", path, "--db", db, *extra)
    assert run.exit_code == 0, run
    return run.stdout.strip()


# --- the store ---------------------------------------------------------------------------


def _open(db: Path) -> Database:
    assert Path(db).exists(), f"{db} does not exist"
    return Database(db)


def gate_rows(db: Path, session_id: str) -> list[dict[str, Any]]:
    database = _open(db)
    try:
        return list(database["gate_result"].rows_where("session_id = ?", [session_id], order_by="seq"))
    finally:
        database.close()


def raw_rows(db: Path, table: str) -> list[tuple]:
    """Every row of a table as stored, in a stable order, for byte-for-byte comparisons."""
    database = _open(db)
    try:
        return database.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
    finally:
        database.close()


def counts(db: Path) -> dict[str, int]:
    database = _open(db)
    try:
        return {table: database[table].count for table in TABLES}
    finally:
        database.close()


def snapshot(db: Path) -> dict[str, list[tuple]]:
    return {table: raw_rows(db, table) for table in TABLES}


# --- rules files ---------------------------------------------------------------------------


def rules_with(
    tmp_path: Path,
    rule_id: str,
    *,
    enabled: bool | None = None,
    severity: str | None = None,
    name: str = "rules.toml",
    source: Path = RULES,
) -> Path:
    """A copy of `source` (default: the shipped rules.toml) with one rule's `enabled` or `default_severity` changed."""
    text = source.read_text(encoding="utf-8")
    blocks = text.split("[[rules]]")
    hits = [i for i, block in enumerate(blocks) if f'id = "{rule_id}"\n' in block]
    assert len(hits) == 1, f"{rule_id} not found exactly once in {RULES}"
    block = blocks[hits[0]]
    if enabled is not None:
        block, n = re.subn(r"(?m)^enabled = (true|false)$", f"enabled = {str(enabled).lower()}", block)
        assert n == 1
    if severity is not None:
        block, n = re.subn(r'(?m)^default_severity = "[a-z_]+"$', f'default_severity = "{severity}"', block)
        assert n == 1
    blocks[hits[0]] = block
    changed = "[[rules]]".join(blocks)
    assert changed != text, "the rules file was not changed"
    path = tmp_path / name
    path.write_text(changed, encoding="utf-8")
    return path


def rules_text(tmp_path: Path, text: str, name: str = "bad-rules.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- fresh sessions --------------------------------------------------------------------------


def export_offline_session(home: Path, question: str, env_dir: Path) -> Path:
    """Ask `question` offline on the snapshot env_dir in a store under `home` and export the session to a file."""
    env = {**_ENV, "EVCLI_HOME": str(home)}
    asked = CliRunner().invoke(app, ["ask", question, "--env", str(env_dir), "--json"], env=env)
    assert asked.exit_code == 0, asked.output
    session_id = json.loads(asked.stdout)["session_id"]
    path = home / f"{session_id}.json"
    exported = CliRunner().invoke(app, ["export", session_id, "-o", str(path)], env=env)
    assert exported.exit_code == 0, exported.output
    return path
