"""The settings evcli reads from its configuration: what the layered sources (evcli/config/sources.py)
are validated into.

Invariants: nothing here holds a secret. A backend's credentials are named by `BackendAuth` (an
environment variable or a file to read them from); a model's key is its provider's environment
variable. Every field has a default, so an empty configuration is the first-run behaviour (the
packaged demo snapshot, the offline engine). A backend is used when it has a URL; its other
settings (auth, headers, service label) may come from a layer that names no URL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evcli.contracts import DEFAULT_BACKEND_TIMEOUT, ROLES, BackendAuth, BackendSpec

DEFAULT_MODEL_TIMEOUT = 60.0  # seconds per model call
SERVICE_LABEL_OPTION = "service_label"  # BackendSpec.options key: the label that names a service
SERVICE_ALIASES_OPTION = "service_aliases"  # BackendSpec.options key: "alias=name,alias=name"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BackendSettings(_Strict):
    """One backend's table, `[backends.NAME]`."""

    url: str | None = None
    timeout: float = Field(default=DEFAULT_BACKEND_TIMEOUT, gt=0)
    retries: int = Field(default=2, ge=0, le=10)
    service_label: str | None = None  # the label naming a service: service, app, job, app.kubernetes.io/name
    service_aliases: dict[str, str] = Field(default_factory=dict)  # name a user writes -> name in the data
    auth: BackendAuth | None = None
    headers: dict[str, str] = Field(default_factory=dict)  # e.g. X-Scope-OrgID for a multi-tenant Loki
    ca_bundle: str | None = None
    insecure_skip_verify: bool = False

    def spec(self) -> BackendSpec:
        """The `BackendSpec` a backend is built from (only for a backend with a URL)."""
        options: dict[str, str] = {}
        if self.service_label:
            options[SERVICE_LABEL_OPTION] = self.service_label
        if self.service_aliases:
            options[SERVICE_ALIASES_OPTION] = ",".join(
                f"{alias}={name}" for alias, name in self.service_aliases.items()
            )
        return BackendSpec(
            url=self.url or "",
            timeout=self.timeout,
            options=options,
            auth=self.auth,
            headers=self.headers,
            ca_bundle=self.ca_bundle,
            insecure_skip_verify=self.insecure_skip_verify,
            retries=self.retries,
        )


class ModelSettings(_Strict):
    """What one role's model calls use: the model string, its server, limits and retries."""

    model: str = "offline"
    api_base: str | None = None
    timeout: float = Field(default=DEFAULT_MODEL_TIMEOUT, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    retries: int = Field(default=2, ge=0, le=10)
    context_tokens: int | None = Field(default=None, gt=0)

    @property
    def offline(self) -> bool:
        return self.model == "offline"


class RoleOverride(_Strict):
    """`[models.ROLE]` (or `ROLE = "model"`): what differs for one role; unset fields follow `[models]`."""

    model: str | None = None
    api_base: str | None = None
    timeout: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    retries: int | None = Field(default=None, ge=0, le=10)
    context_tokens: int | None = Field(default=None, gt=0)


class ModelsSettings(_Strict):
    """`[models]`: the default for every role, and per-role overrides (`planner = "openai/gpt-4o-mini"`)."""

    default: str = "offline"
    api_base: str | None = None
    timeout: float = Field(default=DEFAULT_MODEL_TIMEOUT, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    retries: int = Field(default=2, ge=0, le=10)
    context_tokens: int | None = Field(default=None, gt=0)  # a request's input budget (evcli.agents.llm)
    planner: RoleOverride = Field(default_factory=RoleOverride)
    executor: RoleOverride = Field(default_factory=RoleOverride)
    verifier: RoleOverride = Field(default_factory=RoleOverride)
    composer: RoleOverride = Field(default_factory=RoleOverride)

    @model_validator(mode="before")
    @classmethod
    def _role_as_model_name(cls, data: Any) -> Any:
        """`planner = "NAME"` (the first `[models]` shape) is `[models.planner] model = "NAME"`."""
        if not isinstance(data, dict):
            return data
        return {
            key: {"model": value} if key in ROLES and isinstance(value, str) else value for key, value in data.items()
        }

    def for_role(self, role: str) -> ModelSettings:
        override: RoleOverride = getattr(self, role)
        return ModelSettings(
            model=override.model or self.default,
            api_base=override.api_base or self.api_base,
            timeout=override.timeout or self.timeout,
            max_tokens=override.max_tokens or self.max_tokens,
            retries=self.retries if override.retries is None else override.retries,
            context_tokens=override.context_tokens or self.context_tokens,
        )

    def roles(self) -> dict[str, ModelSettings]:
        return {role: self.for_role(role) for role in ROLES}

    def pipeline_models(self) -> Any:
        """The `evcli.agents.roles.Models` these settings stand for: one api_base (the first role's that has one),
        the `[models]` timeout, max_tokens and retries, and each role's own limits where it sets any."""
        from evcli.agents.roles import CallLimits, Models

        roles = self.roles()
        defaults = CallLimits(self.timeout, self.max_tokens, self.retries, self.context_tokens)
        role_limits = {
            role: limits
            for role, settings in roles.items()
            if (limits := CallLimits(settings.timeout, settings.max_tokens, settings.retries, settings.context_tokens))
            != defaults
        }
        per_role = {role: settings.model for role, settings in roles.items() if settings.model != self.default}
        api_base = next((settings.api_base for settings in roles.values() if settings.api_base), None)
        return Models(
            default=self.default,
            per_role=per_role,
            api_base=api_base,
            timeout=self.timeout,
            max_tokens=self.max_tokens,
            retries=self.retries,
            context_tokens=self.context_tokens,
            role_limits=role_limits,
        )


class Settings(_Strict):
    """The whole configuration: the default environment, runbooks, backends and models."""

    env: str | None = None  # a snapshot directory or a packaged environment (evcli.resources.packaged_env_names)
    runbooks: list[str] = Field(default_factory=list)
    backends: dict[str, BackendSettings] = Field(default_factory=dict)
    models: ModelsSettings = Field(default_factory=ModelsSettings)

    @field_validator("backends")
    @classmethod
    def _registered(cls, backends: dict[str, BackendSettings]) -> dict[str, BackendSettings]:
        from evcli.backends.registry import live_backends

        known = [kind.name for kind in live_backends()]
        for name in backends:
            if name not in known:
                raise ValueError(f"unknown backend {name!r}; known: {', '.join(known)}")
        return backends

    def environment_spec(self) -> Any:
        """The `EnvironmentSpec` of these settings: the backends that have a URL, else `env`."""
        from evcli.backends.spec import EnvironmentSpec

        return EnvironmentSpec(
            env_dir=Path(self.env) if self.env else None,
            runbooks=tuple(Path(directory) for directory in self.runbooks),
            backends={name: backend.spec() for name, backend in self.backends.items() if backend.url},
        )
