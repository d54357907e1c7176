"""evcli/agents/preflight.py: the model configuration is checked before litellm or a session."""

from __future__ import annotations

import socket
import sys
import time

import pytest

from evcli.agents import preflight
from evcli.agents.preflight import ModelUnreachable, check_models, key_variable, local_server
from evcli.core.errors import BadInput
from tests.agents.scripted_server import ScriptedServer

ALL = ("planner", "executor", "verifier", "composer")


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(autouse=True)
def no_keys(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_API_BASE"):
        monkeypatch.delenv(name, raising=False)


def test_offline_needs_nothing():
    check_models(dict.fromkeys(ALL, "offline"))


def test_a_missing_key_names_the_variable_and_the_roles_it_blocks():
    roles = {"planner": "offline", "executor": "anthropic/claude-3-5-haiku", "verifier": "anthropic/claude-3-5-haiku"}

    with pytest.raises(BadInput) as caught:
        check_models(roles)

    assert caught.value.message == (
        "ANTHROPIC_API_KEY is not set: the executor and verifier model anthropic/claude-3-5-haiku needs it"
    )
    assert "--executor-model" in caught.value.hint


def test_a_set_key_passes_and_bare_model_names_map_to_their_provider(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    check_models({"planner": "openai/gpt-4o-mini", "verifier": "gpt-4o"})
    assert key_variable("claude-3-opus", None) == "ANTHROPIC_API_KEY"
    assert key_variable("some-provider-we-do-not-know/x", None) is None  # left to the first call


def test_an_openai_compatible_server_needs_no_key_but_must_answer():
    with ScriptedServer([]) as server:
        check_models({"planner": "openai/local"}, server.url + "/v1")
    url = f"http://127.0.0.1:{closed_port()}/v1"

    started = time.perf_counter()
    with pytest.raises(ModelUnreachable) as caught:
        check_models({"planner": "openai/local", "composer": "openai/local"}, url)

    assert time.perf_counter() - started < 1.0
    assert (
        caught.value.message == f"nothing answers at {url} (connection refused): the planner and composer model server"
    )
    assert caught.value.exit_code == 1


def test_ollama_uses_ollama_api_base_and_names_it(monkeypatch):
    url = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("OLLAMA_API_BASE", url)
    assert local_server("ollama/qwen2.5", None) == url
    assert key_variable("ollama/qwen2.5", None) is None

    with pytest.raises(ModelUnreachable, match=f"^nothing answers at {url} "):
        check_models({"executor": "ollama/qwen2.5"})


def test_ollama_defaults_to_localhost_and_api_base_wins():
    assert local_server("ollama/qwen2.5", None) == "http://localhost:11434"
    assert local_server("ollama/qwen2.5", "http://gpu-box:11434") == "http://gpu-box:11434"
    assert local_server("anthropic/claude-x", None) is None


def test_without_the_llm_extra_a_model_is_a_usage_error_with_the_install_command(monkeypatch):
    monkeypatch.setattr(preflight.importlib.util, "find_spec", lambda name: None)  # litellm not installed

    with pytest.raises(BadInput) as caught:
        check_models({"planner": "openai/gpt-4o-mini"})

    assert caught.value.message == "model openai/gpt-4o-mini needs the llm extra, which is not installed"
    assert caught.value.hint == "pip install 'evcli[llm]'"
    check_models(dict.fromkeys(ALL, "offline"))  # offline never needs it


def test_the_check_imports_nothing_heavy(monkeypatch):
    for name in [name for name in sys.modules if name == "litellm" or name.startswith("litellm.")]:
        monkeypatch.delitem(sys.modules, name)

    with pytest.raises(BadInput):
        check_models({"planner": "openai/gpt-4o-mini"})

    assert "litellm" not in sys.modules
