"""`evcli config show|init`, and commands taking their environment and models from the configuration."""

from __future__ import annotations

import json

from sqlite_utils import Database

from evcli.config.template import TEMPLATE
from tests.cli._util import assert_clean_error, evcli


def test_init_writes_the_commented_file_once_and_show_reads_it_back(evcli_home):
    written = evcli("config", "init")
    again = evcli("config", "init")
    forced = evcli("config", "init", "--force")
    shown = evcli("config", "show", "--json")

    path = evcli_home / "evcli.toml"
    assert written.exit_code == 0 and written.stdout.strip() == str(path)
    assert path.read_text(encoding="utf-8") == TEMPLATE
    assert_clean_error(again, 2, "exists", "--force")
    assert forced.exit_code == 0
    data = shown.json()
    assert data["config_file"] == str(path)
    assert {"key": "env", "value": "demo", "source": f"file:{path}"} in data["values"]


def test_show_names_the_source_of_every_value(tmp_path, monkeypatch):
    config = tmp_path / "c.toml"
    config.write_text(
        '[backends.loki]\nurl = "http://file-loki:3100"\nheaders = { "X-Scope-OrgID" = "team-a" }\n'
        '[profiles.prod.backends.loki]\nservice_label = "app"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("EVCLI_PROMETHEUS", "http://env-prom:9090")

    run = evcli("config", "show", "--config", config, "--profile", "prod", "--alertmanager", "http://am:9093")

    assert run.exit_code == 0, run
    lines = run.stdout.splitlines()
    assert lines[0] == f"config file: {config}, profile prod"

    def source_of(key: str) -> str:
        line = next(line for line in lines if line.split()[0] == key)
        return line.rsplit("(", 1)[1].rstrip(")")

    assert source_of("backends.loki.url") == f"file:{config}"
    assert source_of("backends.loki.headers.X-Scope-OrgID") == f"file:{config}"
    assert source_of("backends.loki.service_label") == "profile:prod"
    assert source_of("backends.prometheus.url") == "env:EVCLI_PROMETHEUS"
    assert source_of("backends.alertmanager.url") == "flag"
    assert source_of("models.default") == "default"


def test_a_literal_secret_is_one_error_line_without_the_secret(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('[backends.prometheus.auth]\nkind = "bearer"\ntoken = "tok-123"\n', encoding="utf-8")

    run = evcli("config", "show", "--config", config)

    line = assert_clean_error(run, 2, "backends.prometheus.auth.token", 'token_env = "NAME"')
    assert "tok-123" not in line


def test_a_command_takes_its_environment_and_models_from_the_configuration(tmp_path, db_path):
    """`--config FILE` with a [models] table keeps working, and now also names the environment."""
    config = tmp_path / "c.toml"
    config.write_text('env = "edge"\n[models]\ndefault = "offline"\n', encoding="utf-8")

    run = evcli("plan", "why is the edge slow?", "--config", config, "--db", db_path, "--json")

    assert run.exit_code == 0, run
    stored = json.loads(next(iter(Database(db_path)["diagnosis_run"].rows))["config"])
    assert stored["env"]["env_dir"].endswith("envs/edge")
    assert set(stored["models"].values()) == {"offline"}


def test_a_flag_wins_over_the_configured_environment(tmp_path, db_path, monkeypatch):
    monkeypatch.setenv("EVCLI_ENV", "edge")

    run = evcli("plan", "why is checkout slow?", "--env", "host", "--db", db_path, "--json")

    assert run.exit_code == 0, run
    stored = json.loads(next(iter(Database(db_path)["diagnosis_run"].rows))["config"])
    assert stored["env"]["env_dir"].endswith("envs/host")


def test_help_gate_and_trace_never_load_the_configuration(evcli_home):
    """The configuration (and pydantic-settings) loads only in commands that take an environment."""
    import os
    import subprocess
    import sys

    from tests.conftest import SAMPLES

    code = (
        "import sys, runpy; sys.argv = ['evcli'] + sys.argv[1:]\n"
        "try:\n    runpy.run_module('evcli', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('LOADED', sorted(m for m in sys.modules if m.startswith(('evcli.config', 'pydantic_settings'))))\n"
    )
    sample = str(SAMPLES / "narrow-payment-highcpu.json")
    for args in (["--help"], ["gate", sample], ["trace", sample], ["doctor", "--help"]):
        completed = subprocess.run(
            [sys.executable, "-c", code, *args],
            capture_output=True,
            text=True,
            env=dict(os.environ, EVCLI_HOME=str(evcli_home)),
        )
        assert completed.stdout.splitlines()[-1] == "LOADED []", (args, completed.stderr)


def test_the_models_of_the_configuration_with_the_model_flags_on_top(tmp_path):
    """`--config FILE` with the first [models] shape still names the models; flags win over it."""
    from evcli.cli.ask import _models
    from evcli.config import load

    config = tmp_path / "c.toml"
    config.write_text(
        '[models]\ndefault = "ollama/qwen"\nplanner = "openai/p"\napi_base = "http://127.0.0.1:8080/v1"\n',
        encoding="utf-8",
    )
    loaded = load(config, None, {}, {})

    from_file = _models(loaded, None, None, None, None, None, None)
    flagged = _models(loaded, None, None, None, "openai/v", None, "http://127.0.0.1:9/v1")
    every_role = _models(loaded, "openai/all", None, None, None, None, None)

    assert (from_file.for_role("planner"), from_file.for_role("executor")) == ("openai/p", "ollama/qwen")
    assert from_file.api_base == "http://127.0.0.1:8080/v1"
    assert (flagged.for_role("verifier"), flagged.for_role("planner"), flagged.api_base) == (
        "openai/v",
        "openai/p",
        "http://127.0.0.1:9/v1",
    )
    assert {every_role.for_role(role) for role in ("planner", "executor", "verifier", "composer")} == {"openai/all"}


def test_init_onto_a_symlink_needs_force_and_then_replaces_the_link_not_its_target(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "lk").mkdir()
    link = tmp_path / "lk" / "evcli.toml"
    link.symlink_to(tmp_path / "gone.toml")  # dangling: writing through it would create gone.toml

    assert_clean_error(evcli("config", "init", "-o", link), 2, "exists", "--force")
    assert not (tmp_path / "gone.toml").exists()
    link.unlink()
    link.symlink_to(victim)
    forced = evcli("config", "init", "-o", link, "--force")

    assert forced.exit_code == 0, forced
    assert victim.read_text() == "keep me"
    assert not link.is_symlink() and link.read_text(encoding="utf-8") == TEMPLATE
