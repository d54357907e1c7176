"""Checking the model configuration before anything heavy is imported or any session is created.

Invariant: this module imports nothing beyond the standard library and evcli.core.errors,
so a missing key, a missing llm extra or a local model server nobody answers at is
reported in well under a second (litellm's import alone takes seconds). It checks:
litellm installed (else a usage error naming the install command); each role's
provider key present, for providers whose key variable is known (the message names
the variable and the roles); and for a local server (`ollama/…`, or an
OpenAI-compatible `api_base`) that something accepts connections at its URL (the
message names the URL). What it cannot know (a wrong key, an unknown model) is left
to the first call, which reports it as clearly.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from collections.abc import Mapping
from urllib.parse import urlsplit

from evcli.core.errors import BadInput, EvcliError

INSTALL_HINT = "pip install 'evcli[llm]'"
OLLAMA_DEFAULT = "http://localhost:11434"
CONNECT_TIMEOUT = 0.5  # seconds: a local server that does not accept a connection in this time is down

# provider prefix -> the variable litellm reads its key from (providers whose key is required)
KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "cohere": "COHERE_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "fireworks_ai": "FIREWORKS_AI_API_KEY",
    "xai": "XAI_API_KEY",
    "perplexity": "PERPLEXITYAI_API_KEY",
    "cerebras": "CEREBRAS_API_KEY",
    "deepinfra": "DEEPINFRA_API_KEY",
    "azure": "AZURE_API_KEY",
}
# model names litellm routes without a provider prefix
_BARE_PREFIXES = {"gpt-": "openai", "o1": "openai", "o3": "openai", "o4": "openai", "chatgpt-": "openai"}
_BARE_PREFIXES |= {"claude-": "anthropic"}


class ModelUnreachable(EvcliError):
    """A local model server does not accept connections (a runtime failure: exit 1)."""


def provider_of(model: str) -> str:
    """The provider litellm would use for `model` ('' when it cannot be told without litellm)."""
    if "/" in model:
        return model.split("/", 1)[0].lower()
    return next((provider for prefix, provider in _BARE_PREFIXES.items() if model.startswith(prefix)), "")


def local_server(model: str, api_base: str | None) -> str | None:
    """The URL of the local server a model is served by, or None for a hosted provider."""
    if api_base:
        return api_base
    if provider_of(model) in ("ollama", "ollama_chat"):
        return os.environ.get("OLLAMA_API_BASE") or OLLAMA_DEFAULT
    return None


def key_variable(model: str, api_base: str | None) -> str | None:
    """The environment variable that must hold this model's key (None: no key needed or not known)."""
    provider = provider_of(model)
    if api_base and provider in ("openai", ""):
        return None  # an OpenAI-compatible local server ignores the key
    return KEY_VARIABLES.get(provider)


def check_models(roles: Mapping[str, str], api_base: str | None = None) -> None:
    """Raise the first configuration problem of the role -> model mapping (offline roles need nothing)."""
    by_model: dict[str, list[str]] = {}
    for role, model in roles.items():
        if model != "offline":
            by_model.setdefault(model, []).append(role)
    if not by_model:
        return
    if importlib.util.find_spec("litellm") is None:
        raise BadInput(f"model {next(iter(by_model))} needs the llm extra, which is not installed", hint=INSTALL_HINT)
    for model, model_roles in by_model.items():
        _check_key(model, model_roles, api_base)
    for url in dict.fromkeys(u for m in by_model if (u := local_server(m, api_base))):
        _check_reachable(url, [r for m, rs in by_model.items() if local_server(m, api_base) == url for r in rs])


def _check_key(model: str, roles: list[str], api_base: str | None) -> None:
    variable = key_variable(model, api_base)
    if variable and not os.environ.get(variable):
        raise BadInput(
            f"{variable} is not set: the {_roles(roles)} model {model} needs it",
            hint=f"export {variable}=..., or choose another model (--model, --{roles[0]}-model, or offline)",
        )


def _check_reachable(url: str, roles: list[str]) -> None:
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if not parts.hostname:
        raise BadInput(f"the {_roles(roles)} model server URL {url} names no host")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or type(exc).__name__).lower()
        raise ModelUnreachable(
            f"nothing answers at {url} ({reason}): the {_roles(roles)} model server",
            hint="start the server, or point --api-base (or OLLAMA_API_BASE for ollama/…) at it",
        ) from None


def _roles(roles: list[str]) -> str:
    return roles[0] if len(roles) == 1 else ", ".join(roles[:-1]) + " and " + roles[-1]
