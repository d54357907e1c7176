"""Which model plays which role (`offline` or any litellm model string), how long, how much and how
often each role's call may take, and the engines that play them: litellm is imported only when a real
model is used."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evcli.agents.engine import Engine
from evcli.contracts import ROLES, SessionConfig

__all__ = ["CallLimits", "Models", "build_engines"]


@dataclass(frozen=True)
class CallLimits:
    """How long (seconds), how much (tokens out; `context_tokens` in, its share before old evidence is cut to
    refs, evcli.agents.llm) and how often (retries on 429/5xx) one role's model call may take."""

    timeout: float = 60
    max_tokens: int | None = None
    retries: int = 2
    context_tokens: int | None = None  # None: the model's input window (EVCLI_CONTEXT_TOKENS overrides)


@dataclass
class Models:
    """Which model plays which role: `offline` or any litellm model string; and how long
    (`timeout` seconds), how much (`max_tokens`) and how often (`retries` on 429/5xx) a call may take."""

    default: str = "offline"
    per_role: dict[str, str] = field(default_factory=dict)
    api_base: str | None = None
    timeout: float = 60
    max_tokens: int | None = None
    retries: int = 2
    context_tokens: int | None = None
    role_limits: dict[str, CallLimits] = field(default_factory=dict)  # a role's own timeout/max_tokens/retries

    def for_role(self, role: str) -> str:
        return self.per_role.get(role) or self.default

    def limits_for(self, role: str) -> CallLimits:
        return self.role_limits.get(role) or CallLimits(
            self.timeout, self.max_tokens, self.retries, self.context_tokens
        )

    def check(self) -> None:
        """Fail fast (under a second, before litellm is imported) on a missing key, extra or local server."""
        from evcli.agents.preflight import check_models

        check_models({role: self.for_role(role) for role in ROLES}, self.api_base)

    def as_config(self) -> dict[str, Any]:
        return {role: self.for_role(role) for role in ROLES} | ({"api_base": self.api_base} if self.api_base else {})

    @classmethod
    def from_config(cls, config: SessionConfig) -> Models:
        models = dict(config.models)
        api_base = models.pop("api_base", None)
        return cls(default="offline", per_role=models, api_base=api_base)


def build_engines(models: Models) -> dict[str, Engine]:
    models.check()
    engines: dict[str, Engine] = {}
    cache: dict[tuple[str, CallLimits | None], Engine] = {}
    for role in ROLES:
        name = models.for_role(role)
        key = (name, None if name == "offline" else models.limits_for(role))
        if key not in cache:
            if name == "offline":
                from evcli.agents.offline import OfflineEngine

                cache[key] = OfflineEngine()
            else:
                from evcli.agents.llm import (
                    LiteLLMEngine,  # imported only when a real model is used
                )

                limits = models.limits_for(role)
                cache[key] = LiteLLMEngine(
                    name,
                    api_base=models.api_base,
                    timeout=limits.timeout,
                    max_tokens=limits.max_tokens,
                    retries=limits.retries,
                    context_tokens=limits.context_tokens,
                )
        engines[role] = cache[key]
    return engines
