"""The settings model: backends become BackendSpecs, roles resolve their model settings."""

from __future__ import annotations

import pytest

from evcli.config.model import BackendSettings, ModelsSettings, Settings
from evcli.contracts import BackendAuth, BackendSpec


def test_a_backend_with_only_a_url_is_the_plain_spec():
    assert BackendSettings(url="http://p:9090").spec() == BackendSpec(url="http://p:9090")


def test_a_backend_spec_carries_label_aliases_auth_headers_and_tls():
    auth = BackendAuth(kind="basic", username="evcli", password_env="LOKI_PASSWORD")
    backend = BackendSettings(
        url="https://loki:3100",
        timeout=4,
        retries=0,
        service_label="app.kubernetes.io/name",
        service_aliases={"payments": "payment-service", "orders": "order-service"},
        auth=auth,
        headers={"X-Scope-OrgID": "team-a"},
        ca_bundle="/etc/ca.pem",
    )

    spec = backend.spec()

    assert spec.options == {
        "service_label": "app.kubernetes.io/name",
        "service_aliases": "payments=payment-service,orders=order-service",
    }
    assert (spec.timeout, spec.retries, spec.auth, spec.headers, spec.ca_bundle) == (
        4,
        0,
        auth,
        {"X-Scope-OrgID": "team-a"},
        "/etc/ca.pem",
    )


def test_the_environment_spec_uses_backends_with_a_url_and_every_runbooks_directory(tmp_path):
    settings = Settings(
        runbooks=[str(tmp_path), str(tmp_path / "more")],
        backends={"prometheus": BackendSettings(url="http://p:9090"), "loki": BackendSettings(service_label="app")},
    )

    spec = settings.environment_spec()

    assert list(spec.backends) == ["prometheus"]
    assert spec.knowledge_dirs() == [tmp_path, tmp_path / "more"]


def test_a_role_without_overrides_follows_the_models_table():
    models = ModelsSettings.model_validate({"default": "ollama/qwen", "retries": 4, "composer": {"retries": 0}})

    assert models.for_role("planner").model == "ollama/qwen" and models.for_role("planner").retries == 4
    assert models.for_role("composer").retries == 0
    assert models.pipeline_models().per_role == {}


def test_a_roles_own_limits_reach_the_pipeline_models():
    from evcli.agents.roles import CallLimits
    from evcli.config.model import ModelsSettings

    settings = ModelsSettings.model_validate(
        {"default": "openai/x", "timeout": 30, "verifier": {"timeout": 120, "max_tokens": 400}}
    )
    models = settings.pipeline_models()
    assert models.limits_for("verifier") == CallLimits(120, 400, 2)
    assert models.limits_for("planner") == CallLimits(30, None, 2)  # no override: the [models] limits


def test_a_context_budget_per_role_reaches_the_engines(monkeypatch):
    """`context_tokens` in [models] is every role's input budget, a role's own table overrides it, and
    EVCLI_CONTEXT_TOKENS sets [models] (the engines cut old evidence past 60% of it, evcli.agents.llm)."""
    from evcli.agents.llm import CHARS_PER_TOKEN, CONTEXT_SHARE
    from evcli.agents.roles import build_engines
    from evcli.config.model import ModelsSettings

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-budget-0000")
    settings = ModelsSettings.model_validate(
        {"default": "openai/x", "context_tokens": 32000, "executor": {"context_tokens": 8000}}
    )
    engines = build_engines(settings.pipeline_models())
    assert engines["executor"].context_chars() == int(8000 * CONTEXT_SHARE * CHARS_PER_TOKEN)
    assert engines["planner"].context_chars() == int(32000 * CONTEXT_SHARE * CHARS_PER_TOKEN)
    assert engines["executor"] is not engines["planner"]
    with pytest.raises(ValueError):
        ModelsSettings.model_validate({"executor": {"context_tokens": 0}})
