"""Layered configuration: file < profile < EVCLI_* variables < flags, each value with its source."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evcli.config import default_config_path, load
from evcli.config.template import TEMPLATE
from evcli.core.errors import BadInput

FILE = """\
env = "host"
runbooks = ["rb"]

[backends.prometheus]
url = "http://file:9090"
service_label = "app"
headers = { "X-Scope-OrgID" = "team-a" }

[backends.prometheus.auth]
kind = "bearer"
token_env = "PROM_TOKEN"

[models]
default = "offline"
planner = "openai/gpt-4o-mini"

[profiles.prod.backends.prometheus]
url = "https://prod:9090"
timeout = 3
"""


def _file(tmp_path: Path, text: str = FILE) -> Path:
    path = tmp_path / "evcli.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_each_value_comes_from_the_strongest_layer_and_names_it(tmp_path):
    path = _file(tmp_path)
    environ = {"EVCLI_PROFILE": "prod", "EVCLI_MODEL_TIMEOUT": "5"}

    loaded = load(path, None, {"backends": {"prometheus": {"url": "http://flag:9090"}}}, environ)

    prometheus = loaded.settings.backends["prometheus"]
    assert prometheus.url == "http://flag:9090"
    assert prometheus.timeout == 3  # from the profile
    assert prometheus.service_label == "app"  # from the file
    assert loaded.settings.models.timeout == 5
    assert loaded.source_of(("backends", "prometheus", "url")) == "flag"
    assert loaded.source_of(("backends", "prometheus", "timeout")) == "profile:prod"
    assert loaded.source_of(("backends", "prometheus", "service_label")) == f"file:{path}"
    assert loaded.source_of(("models", "timeout")) == "env:EVCLI_MODEL_TIMEOUT"
    assert loaded.source_of(("models", "retries")) == "default"
    assert loaded.profile == "prod" and loaded.config_file == path


def test_a_backend_url_replaces_the_weaker_env_and_an_env_replaces_weaker_backend_urls(tmp_path):
    path = _file(tmp_path)

    live = load(path, None, {}, {"EVCLI_LOKI": "http://loki:3100"})
    snapshot = load(path, None, {"env": "edge"}, {})

    assert live.settings.env is None  # the file's env gave way to a backend URL
    assert {name for name, b in live.settings.backends.items() if b.url} == {"prometheus", "loki"}
    assert snapshot.settings.env == "edge"
    assert snapshot.settings.backends["prometheus"].url is None  # its auth stays, its URL went
    assert snapshot.settings.environment_spec().backends == {}
    assert snapshot.settings.environment_spec().env_dir.name == "edge"


def test_model_for_every_role_replaces_weaker_role_models_and_the_first_models_shape_still_loads(tmp_path):
    path = _file(tmp_path)

    from_file = load(path, None, {}, {})
    flagged = load(path, None, {"models": {"default": "openai/gpt-4o"}}, {})

    assert from_file.settings.models.for_role("planner").model == "openai/gpt-4o-mini"
    assert from_file.settings.models.for_role("verifier").model == "offline"
    assert from_file.source_of(("models", "planner", "model")) == f"file:{path}"
    assert {settings.model for settings in flagged.settings.models.roles().values()} == {"openai/gpt-4o"}


def test_role_tables_override_the_models_table_field_by_field(tmp_path):
    path = _file(
        tmp_path,
        '[models]\ndefault = "ollama/qwen"\ntimeout = 20\nmax_tokens = 256\n'
        '[models.verifier]\nmodel = "openai/x"\napi_base = "http://127.0.0.1:8080/v1"\ntimeout = 90\n',
    )

    models = load(path, None, {}, {}).settings.models
    verifier, planner = models.for_role("verifier"), models.for_role("planner")
    pipeline = models.pipeline_models()

    assert (verifier.model, verifier.api_base, verifier.timeout, verifier.max_tokens) == (
        "openai/x",
        "http://127.0.0.1:8080/v1",
        90,
        256,
    )
    assert (planner.model, planner.timeout) == ("ollama/qwen", 20)
    assert pipeline.for_role("verifier") == "openai/x" and pipeline.for_role("planner") == "ollama/qwen"
    assert pipeline.api_base == "http://127.0.0.1:8080/v1" and pipeline.timeout == 20


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        (
            '[backends.prometheus.auth]\nkind = "bearer"\ntoken = "s3cr3t"\n',
            ["backends.prometheus.auth.token", "token_env"],
        ),
        ('[backends.loki.auth]\nkind = "basic"\npassword = "pw"\n', ["backends.loki.auth.password", "password_env"]),
        ('[models]\napi_key = "sk-1"\n', ["models.api_key", "OPENAI_API_KEY"]),
        ('[backends.loki]\nheaders = { Authorization = "Bearer x" }\n', ["Authorization", "token_env"]),
        ('[backends.loki]\nurl = "http://u:pw@loki:3100"\n', ["backends.loki.url", "password_env"]),
        ('[profiles.prod.backends.loki]\nclient_secret = "x"\n', ["profiles.prod.backends.loki.client_secret"]),
    ],
)
def test_a_literal_secret_in_the_file_is_an_error_naming_the_key_and_what_to_write(tmp_path, text, fragments):
    path = _file(tmp_path, text)

    with pytest.raises(BadInput) as raised:
        load(path, None, {}, {})

    assert "literal secret" in raised.value.message or "credentials" in raised.value.message
    for fragment in fragments:
        assert fragment in raised.value.message
    for secret in ("s3cr3t", "sk-1", "Bearer x", "u:pw"):
        assert secret not in raised.value.message


@pytest.mark.parametrize(
    ("text", "profile", "fragment"),
    [
        ('colour = "red"\n', None, "colour"),
        ('[backends.graphite]\nurl = "http://g"\n', None, "unknown backend 'graphite'"),
        ("[backends.prometheus]\ntimeout = -1\n", None, "backends.prometheus.timeout"),
        ("[profiles.prod]\n", "staging", "no profile 'staging'"),
        ("env = [\n", None, "cannot read config"),
    ],
)
def test_a_bad_file_is_a_usage_error_naming_what_is_wrong(tmp_path, text, profile, fragment):
    path = _file(tmp_path, text)

    with pytest.raises(BadInput) as raised:
        load(path, profile, {}, {})

    assert fragment in raised.value.message
    assert raised.value.exit_code == 2


def test_which_file_is_read(tmp_path, evcli_home):
    named = _file(tmp_path, 'env = "edge"\n')

    assert default_config_path() == evcli_home / "evcli.toml"
    assert load(None, None, {}, {}).config_file is None  # no default file: the defaults
    assert load(None, None, {}, {"EVCLI_CONFIG": str(named)}).settings.env == "edge"
    with pytest.raises(BadInput, match="no such config file"):
        load(tmp_path / "missing.toml", None, {}, {})
    evcli_home.mkdir(exist_ok=True)
    (evcli_home / "evcli.toml").write_text('env = "host"\n', encoding="utf-8")
    assert load(None, None, {}, {}).settings.env == "host"


def test_paths_in_the_file_are_relative_to_it_but_a_packaged_environment_stays_a_name(tmp_path):
    (tmp_path / "snap").mkdir()
    (tmp_path / "other").mkdir()
    snapshot = _file(tmp_path, 'env = "snap"\n')
    packaged = _file(tmp_path / "other", 'env = "host"\nrunbooks = ["rb"]\n')

    assert load(snapshot, None, {}, {}).settings.env == str(tmp_path / "snap")
    settings = load(packaged, None, {}, {}).settings
    assert settings.env == "host"
    assert settings.runbooks == [str(tmp_path / "other" / "rb")]


def test_runbooks_from_the_environment_are_separated_like_paths(tmp_path):
    environ = {"EVCLI_RUNBOOKS": os.pathsep.join(["/a", "/b"]), "EVCLI_PLANNER_MODEL": "ollama/x"}

    loaded = load(None, None, {}, environ)

    assert loaded.settings.runbooks == ["/a", "/b"]
    assert loaded.settings.models.for_role("planner").model == "ollama/x"
    assert loaded.source_of(("runbooks",)) == "env:EVCLI_RUNBOOKS"


def test_the_starting_file_loads_back_as_the_defaults(tmp_path):
    path = _file(tmp_path, TEMPLATE)

    loaded = load(path, None, {}, {})

    assert loaded.settings.env == "demo"
    assert loaded.settings.models.for_role("executor").model == "offline"
    assert loaded.settings.environment_spec().knowledge_dirs()[0].name == "demo"


def test_the_starting_file_examples_load_when_uncommented(tmp_path):
    """Every `# key = value` example line of the template, uncommented, is a valid setting."""
    lines = []
    for line in TEMPLATE.splitlines():
        body = line[2:] if line.startswith("# ") else line
        looks_like_setting = body.startswith("[") or ("=" in body and not body.startswith(("evcli", "Never")))
        lines.append(body if line.startswith("# ") and looks_like_setting and "Precedence" not in body else line)
    text = "\n".join(lines).replace("runbooks = []", 'runbooks = ["rb"]')
    path = _file(tmp_path, text)

    loaded = load(path, "prod", {}, {})

    prometheus = loaded.settings.backends["prometheus"]
    assert prometheus.url == "https://prometheus.prod.example.com"
    assert prometheus.auth is not None and prometheus.auth.token_env == "PROD_PROMETHEUS_TOKEN"
    assert loaded.settings.backends["loki"].headers == {"X-Scope-OrgID": "team-a"}
    assert loaded.settings.models.for_role("verifier").model == "ollama/qwen2.5:7b"


def test_the_readme_example_loads(tmp_path):
    from tests.conftest import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    example = next(block for block in readme.split("```toml\n")[1:] if "[backends.prometheus]" in block)
    path = _file(tmp_path, example.split("```")[0])

    settings = load(path, "prod", {}, {}).settings

    assert settings.backends["prometheus"].url == "https://prometheus.prod:9090"
    assert settings.backends["prometheus"].spec().options["service_label"] == "app"
    assert settings.models.for_role("verifier").timeout == 120
    assert settings.runbooks == [str(tmp_path / "runbooks")]


def test_evcli_context_tokens_sets_every_roles_input_budget(tmp_path):
    loaded = load(_file(tmp_path), None, {}, {"EVCLI_CONTEXT_TOKENS": "16000"})

    assert loaded.settings.models.context_tokens == 16000
    assert loaded.source_of(("models", "context_tokens")) == "env:EVCLI_CONTEXT_TOKENS"
    assert loaded.settings.models.pipeline_models().limits_for("executor").context_tokens == 16000
