"""`evcli --help`, `gate` and `trace` must never import a model client, nor the log index's engine (polars,
pyarrow: loaded only when a log index is built or queried); `gate` reads the specs of the tools a session
cited, never the backends their calls use (issue 27)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import SAMPLES

HEAVY = ("litellm", "openai", "httpx", "polars", "pyarrow")  # top-level packages the fast paths must not load
# What a tool imports only when one of its calls runs: the backends, the time parser, SQLite (the index builders).
CALL_ONLY = ("evcli.backends", "evcli.core.time", "sqlite3")


@pytest.fixture
def tripwire_litellm(tmp_path):
    """A `litellm` package that fails loudly if anything imports it."""
    package = tmp_path / "tripwire" / "litellm"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('TRIPWIRE: litellm was imported')\n")
    return tmp_path / "tripwire"


def _run(args, tripwire, evcli_home, watched=HEAVY):
    """`evcli ARGS` in a fresh interpreter; its stderr ends with `LOADED [...]`: the modules it had imported at
    exit that are one of `watched` or inside one of them (a package's submodules)."""
    env = dict(
        os.environ, PYTHONPATH=f"{tripwire}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", EVCLI_HOME=str(evcli_home)
    )
    code = (
        f"import sys, runpy; WATCHED = {watched!r}; sys.argv = ['evcli'] + sys.argv[1:]\n"
        "try:\n    runpy.run_module('evcli', run_name='__main__')\n"
        "except SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
        "inside = lambda m: any(m == w or m.startswith(w + '.') for w in WATCHED)\n"
        "print('LOADED', sorted(m for m in sys.modules if inside(m)), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env)


def test_tripwire_works(tripwire_litellm, evcli_home):
    completed = subprocess.run(
        [sys.executable, "-c", "import litellm"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(tripwire_litellm)),
    )
    assert "TRIPWIRE" in completed.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["gate", str(SAMPLES / "narrow-payment-highcpu.json")],
        ["gate", str(SAMPLES / "fault-fabricated-invocation-id.json"), "--json"],
        ["trace", str(SAMPLES / "broad-order-service.json")],
        ["sessions"],
    ],
)
def test_fast_paths_import_no_model_client_nor_the_log_engine(args, tripwire_litellm, evcli_home):
    completed = _run(args, tripwire_litellm, evcli_home)
    assert "TRIPWIRE" not in completed.stderr
    assert "LOADED []" in completed.stderr
    assert completed.returncode in (0, 4), completed.stderr


@pytest.mark.parametrize(
    ("sample", "cited"),
    [
        ("narrow-payment-highcpu.json", ["query_metrics"]),
        ("broad-order-service.json", ["lookup_knowledge", "query_logs", "query_metrics"]),
    ],
)
def test_gate_of_a_file_loads_no_backend(sample, cited, tripwire_litellm, evcli_home):
    """The Gatekeeper reads the evidence arrays of the tools a session cited from their specs; the backends,
    the time parser and SQLite that the tools' calls use are not imported (~8 ms of `gate FILE`'s start)."""
    tools = tuple(f"evcli.tools.{name}" for name in cited)
    completed = _run(["gate", str(SAMPLES / sample)], tripwire_litellm, evcli_home, watched=(*CALL_ONLY, *tools))
    assert completed.returncode in (0, 4), completed.stderr
    assert f"LOADED {sorted(tools)}" in completed.stderr, completed.stderr  # the cited tools, and nothing of CALL_ONLY


def test_reading_every_tool_spec_loads_no_backend():
    """Every built-in tool's spec (name, evidence arrays, parameter model) loads without what its calls use,
    so gating a session that cites any tool stays as fast."""
    code = (
        "import sys; from evcli.tools import registry\n"
        "shown = [(spec.name, spec.array_names, spec.single_names, list(spec.params.model_fields)) for spec in registry.specs()]\n"
        f"CALL_ONLY = {CALL_ONLY!r}\n"
        "print(len(shown), sorted(m for m in sys.modules if any(m == w or m.startswith(w + '.') for w in CALL_ONLY)))\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "6 []", completed.stdout


def test_store_reads_load_no_write_or_masking_code(tmp_path, evcli_home):
    """`sessions` and `trace ID` only read the store: sqlite-utils (writes, migrations) and the
    masking rules (applied when a session is written or read from a file) stay unloaded."""
    db = tmp_path / "store.db"
    env = dict(os.environ, EVCLI_HOME=str(evcli_home), COLUMNS="4000")  # wide: the table folds no id
    imported = subprocess.run(
        [sys.executable, "-m", "evcli", "import", str(SAMPLES / "broad-order-service.json"), "--db", str(db)],
        capture_output=True,
        text=True,
        env=env,
    )
    session_id = imported.stdout.strip()
    assert imported.returncode == 0 and session_id, imported.stderr
    code = (
        "import sys, runpy; sys.argv = ['evcli'] + sys.argv[1:]\n"
        "try:\n    runpy.run_module('evcli', run_name='__main__')\n"
        "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print('LOADED', sorted(m for m in ('sqlite_utils', 'evcli.core.redaction') if m in sys.modules), file=sys.stderr)\n"
    )
    for args in (["sessions", "--db", str(db)], ["trace", session_id, "--db", str(db)]):
        completed = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env)
        assert completed.returncode == 0, completed.stderr
        assert session_id in completed.stdout
        assert "LOADED []" in completed.stderr, (args, completed.stderr)


@pytest.mark.parametrize(
    ("args", "module"),
    [
        (["trace", str(SAMPLES / "broad-order-service.json")], "evcli.cli.trace"),
        (["--debug", "gate", str(SAMPLES / "narrow-payment-highcpu.json")], "evcli.cli.gate"),
        (["sessions", "-q", "nothing"], "evcli.cli.sessions"),
    ],
)
def test_a_command_imports_its_own_module_alone(args, module, evcli_home):
    """Running one command builds that command alone: no other command module is imported (each one's
    imports and Typer's reading of each signature were most of a short command's start-up)."""
    code = (
        "import sys, runpy; sys.argv = ['evcli'] + sys.argv[1:]\n"
        "try:\n    runpy.run_module('evcli', run_name='__main__')\n"
        "except SystemExit as exc:\n    pass\n"
        "print('COMMANDS', sorted(m for m in sys.modules if m.startswith('evcli.cli.') and m != 'evcli.cli._common'),"
        " file=sys.stderr)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, EVCLI_HOME=str(evcli_home)),
    )
    assert f"COMMANDS ['{module}']" in completed.stderr, completed.stderr


def test_the_root_help_and_an_unknown_command_see_every_command(evcli_home):
    env = dict(os.environ, EVCLI_HOME=str(evcli_home), COLUMNS="200")
    helped = subprocess.run([sys.executable, "-m", "evcli", "--help"], capture_output=True, text=True, env=env)
    assert all(f" {name} " in helped.stdout for name in ("ask", "trace", "gate", "sessions", "eval", "config"))
    unknown = subprocess.run([sys.executable, "-m", "evcli", "trac", "x"], capture_output=True, text=True, env=env)
    assert unknown.returncode == 2 and "No such command 'trac'" in unknown.stderr, unknown.stderr
