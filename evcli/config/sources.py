"""Where settings come from, and which source gave each value.

Layers, weakest first: defaults < the TOML file < its active profile (`[profiles.NAME]`) <
environment variables < command-line flags. The file is `--config FILE`, else `$EVCLI_CONFIG`, else
`evcli.toml` in `$EVCLI_HOME` or the user config dir (`typer.get_app_dir("evcli")`); an explicitly
named file must exist, the default one may not. The profile is `--profile`, else `$EVCLI_PROFILE`.

The file is read by pydantic-settings' TOML source and the environment variables by a settings
source of ours (the names are short, not pydantic-settings' nested `EVCLI_A__B`); the layers are
merged here, leaf by leaf, so every value keeps the name of its source: `default`, `file:PATH`,
`profile:NAME`, `env:VAR` or `flag`.

Invariants: one environment per layer wins whole. A layer naming `env` drops the backend URLs of
weaker layers, and one naming a backend URL drops their `env` (a snapshot and live backends are never
mixed by accident); a layer naming `models.default` drops weaker per-role model names (`--model`
means every role). A literal secret in the file is an error naming the key and what to write
instead; relative paths in the file are relative to the file. A file anyone can write is read with a
warning (`evcli.core.userfiles.warn_if_exposed`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError
from pydantic_settings import PydanticBaseSettingsSource, TomlConfigSettingsSource

from evcli.config.model import Settings
from evcli.contracts import ROLES
from evcli.core.errors import BadInput
from evcli.core.paths import data_dir
from evcli.core.userfiles import warn_if_exposed

CONFIG_FILENAME = "evcli.toml"
KeyPath = tuple[str, ...]
DEFAULT = "default"
FLAG = "flag"

# Keys that would hold a secret, and what to write instead.
_SECRET_KEYS = {
    "token": 'token_env = "NAME" (the environment variable holding it) or token_file = "PATH"',
    "password": 'password_env = "NAME" (the environment variable holding it) or password_file = "PATH"',
    "secret": 'a *_env = "NAME" key naming the environment variable that holds it',
    "api_key": "nothing: put the key in the provider's environment variable (e.g. OPENAI_API_KEY)",
    "apikey": "nothing: put the key in the provider's environment variable (e.g. OPENAI_API_KEY)",
}
_SECRET_HEADERS = {"authorization", "proxy-authorization", "cookie", "x-api-key"}
_FILE_PATHS = {("env",), ("runbooks",), ("ca_bundle",), ("token_file",), ("password_file",)}


@dataclass(frozen=True)
class Layer:
    """One source's values as leaves: key path -> (value, source label)."""

    leaves: dict[KeyPath, tuple[Any, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, data: Mapping[str, Any], source: str) -> Layer:
        return cls({path: (value, source) for path, value in _leaves(_normalised(data))})


@dataclass(frozen=True)
class Loaded:
    """The effective settings, the source of each value, and what was read."""

    settings: Settings
    sources: dict[KeyPath, str]
    config_file: Path | None  # the file read, None when there was none
    profile: str | None
    layers: tuple[Layer, ...]

    def source_of(self, path: KeyPath) -> str:
        return self.sources.get(path, DEFAULT)

    def with_flags(self, flags: Mapping[str, Any]) -> Loaded:
        """These settings with more flags on top (a command's own options, e.g. `--model`)."""
        layers = (*self.layers, Layer.of(flags, FLAG))
        settings, sources = _settle(layers)
        return Loaded(settings, sources, self.config_file, self.profile, layers)


def default_config_path() -> Path:
    """`evcli.toml` in the data directory (`$EVCLI_HOME`, else the user config dir)."""
    return data_dir() / CONFIG_FILENAME


def load(
    config_file: Path | None = None,
    profile: str | None = None,
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Loaded:
    """The settings of the file, its profile, the environment variables and `flags` (nested like the file)."""
    environ = os.environ if environ is None else environ
    path = config_file or (Path(environ["EVCLI_CONFIG"]) if environ.get("EVCLI_CONFIG") else None)
    explicit = path is not None
    path = path or default_config_path()
    raw = _read_file(path, explicit)
    profile = profile or environ.get("EVCLI_PROFILE") or None
    file_data = {key: value for key, value in raw.items() if key != "profiles"}
    layers = [Layer.of(_relative_to(file_data, path.parent), f"file:{path}")] if raw else []
    if profile:
        layers.append(Layer.of(_relative_to(_profile(raw, profile, path), path.parent), f"profile:{profile}"))
    layers.append(EnvVarSource(Settings, environ).layer())
    layers.append(Layer.of(flags or {}, FLAG))
    settings, sources = _settle(tuple(layers))
    return Loaded(settings, sources, path if raw or explicit else None, profile, tuple(layers))


def _read_file(path: Path, explicit: bool) -> dict[str, Any]:
    import tomllib

    if not path.is_file():
        if explicit:
            raise BadInput(f"no such config file: {path}", hint="write one with `evcli config init`")
        return {}
    warn_if_exposed(path, "config file", secret=False)
    try:
        # The source only reads the file; the layers are validated together in _settle.
        data = TomlConfigSettingsSource(cast(Any, Settings), toml_file=path)()
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BadInput(f"cannot read config {path}: {exc}") from None
    if "profiles" in data and not isinstance(data["profiles"], dict):
        raise BadInput(f"config {path}: profiles must be tables: [profiles.NAME]")
    for prefix, table in [
        ((), data),
        *((("profiles", name), table) for name, table in data.get("profiles", {}).items()),
    ]:
        _reject_secrets(table if isinstance(table, dict) else {}, prefix, path)
    return data


def _profile(raw: Mapping[str, Any], name: str, path: Path) -> dict[str, Any]:
    profiles = raw.get("profiles", {})
    if name not in profiles or not isinstance(profiles[name], dict):
        known = ", ".join(profiles) or "none"
        raise BadInput(f"no profile {name!r} in {path} (profiles: {known})", hint=f"add a [profiles.{name}] table")
    return dict(profiles[name])


def _reject_secrets(table: Mapping[str, Any], prefix: KeyPath, path: Path) -> None:
    """A literal secret in the file is an error naming the key and what to write instead."""
    for key_path, value in _leaves(table):
        where = ".".join(prefix + key_path)
        name = key_path[-1].lower()
        if not value or not isinstance(value, str):
            continue
        if name in _SECRET_KEYS or name.endswith(tuple(f"_{key}" for key in _SECRET_KEYS)):
            instead = _SECRET_KEYS.get(name, 'a *_env = "NAME" key naming the environment variable that holds it')
            raise BadInput(f"config {path}: {where} holds a literal secret; write {instead} instead")
        if len(key_path) >= 2 and key_path[-2] == "headers" and name in _SECRET_HEADERS:
            raise BadInput(
                f"config {path}: header {where} holds a literal secret; use an [auth] table "
                '(kind = "bearer", token_env = "NAME") instead'
            )
        if name == "url" and "@" in value.partition("://")[2].partition("/")[0]:
            raise BadInput(
                f"config {path}: {where} holds credentials (user:pass@); use an [auth] table "
                '(kind = "basic", username = "...", password_env = "NAME") instead'
            )


class EnvVarSource(PydanticBaseSettingsSource):
    """The environment variables: EVCLI_ENV, EVCLI_RUNBOOKS (paths separated by the OS path separator),
    EVCLI_<BACKEND> (each registered live backend's URL: EVCLI_PROMETHEUS, EVCLI_ALERTMANAGER,
    EVCLI_LOKI), EVCLI_MODEL, EVCLI_<ROLE>_MODEL, EVCLI_API_BASE, EVCLI_MODEL_TIMEOUT, EVCLI_MAX_TOKENS."""

    def __init__(self, settings_cls: type[Any], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self.environ = environ

    def names(self) -> dict[str, KeyPath]:
        from evcli.backends.registry import live_backends

        names: dict[str, KeyPath] = {"EVCLI_ENV": ("env",), "EVCLI_RUNBOOKS": ("runbooks",)}
        names |= {f"EVCLI_{kind.name.upper()}": ("backends", kind.name, "url") for kind in live_backends()}
        names |= {"EVCLI_MODEL": ("models", "default"), "EVCLI_API_BASE": ("models", "api_base")}
        names |= {"EVCLI_MODEL_TIMEOUT": ("models", "timeout"), "EVCLI_MAX_TOKENS": ("models", "max_tokens")}
        names |= {"EVCLI_CONTEXT_TOKENS": ("models", "context_tokens")}
        names |= {f"EVCLI_{role.upper()}_MODEL": ("models", role, "model") for role in ROLES}
        return names

    def layer(self) -> Layer:
        leaves: dict[KeyPath, tuple[Any, str]] = {}
        for name, path in self.names().items():
            value = self.environ.get(name)
            if value:
                parsed: Any = [part for part in value.split(os.pathsep) if part] if path == ("runbooks",) else value
                leaves[path] = (parsed, f"env:{name}")
        return Layer(leaves)

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # values come whole from __call__

    def __call__(self) -> dict[str, Any]:
        return _nested({path: value for path, (value, _) in self.layer().leaves.items()})


def _settle(layers: tuple[Layer, ...]) -> tuple[Settings, dict[KeyPath, str]]:
    """Merge the layers weakest first and validate; a bad value is an error naming its key and source."""
    merged: dict[KeyPath, tuple[Any, str]] = {}
    for layer in layers:
        keys = layer.leaves.keys()
        if ("env",) in keys:
            merged = {path: leaf for path, leaf in merged.items() if not _backend_url(path)}
        if any(_backend_url(path) for path in keys):
            merged.pop(("env",), None)
        if ("models", "default") in keys:
            merged = {path: leaf for path, leaf in merged.items() if not _role_model(path)}
        merged.update(layer.leaves)
    try:
        settings = Settings.model_validate(_nested({path: value for path, (value, _) in merged.items()}))
    except ValidationError as exc:
        error = exc.errors()[0]
        where = tuple(str(part) for part in error["loc"])
        source = next((label for path, (_, label) in merged.items() if path[: len(where)] == where), DEFAULT)
        message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
        raise BadInput(f"config: {'.'.join(where)} ({source}): {message}") from None
    return settings, {path: label for path, (_, label) in merged.items()}


def _backend_url(path: KeyPath) -> bool:
    return len(path) == 3 and path[0] == "backends" and path[2] == "url"


def _role_model(path: KeyPath) -> bool:
    return len(path) == 3 and path[0] == "models" and path[1] in ROLES and path[2] == "model"


def _normalised(data: Mapping[str, Any]) -> dict[str, Any]:
    """`[models] planner = "NAME"` as `[models.planner] model = "NAME"`, so both shapes merge alike."""
    models = data.get("models")
    if not isinstance(models, dict):
        return dict(data)
    roles = {role: {"model": value} for role, value in models.items() if role in ROLES and isinstance(value, str)}
    return {**data, "models": {**models, **roles}}


def _relative_to(data: Mapping[str, Any], directory: Path) -> dict[str, Any]:
    """Paths written in the file, relative to the file (a packaged environment's name stays a name)."""
    from evcli.backends.spec import packaged_env_dir

    def resolve(key: str, value: Any) -> Any:
        if isinstance(value, dict):
            return {inner: resolve(inner, item) for inner, item in value.items()}
        if (key,) not in _FILE_PATHS or not value:
            return value
        if isinstance(value, list):
            return [str(directory / Path(item).expanduser()) for item in value]
        if key == "env" and packaged_env_dir(str(value)) is not None and not (directory / value).is_dir():
            return value
        return str(directory / Path(str(value)).expanduser())

    return {key: resolve(key, value) for key, value in data.items()}


def _leaves(data: Mapping[str, Any], prefix: KeyPath = ()) -> list[tuple[KeyPath, Any]]:
    found: list[tuple[KeyPath, Any]] = []
    for key, value in data.items():
        if isinstance(value, dict):  # an empty table sets nothing
            found += _leaves(value, (*prefix, str(key)))
        else:
            found.append(((*prefix, str(key)), value))
    return found


def _nested(leaves: Mapping[KeyPath, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for path, value in leaves.items():
        table = nested
        for key in path[:-1]:
            table = table.setdefault(key, {})
        table[path[-1]] = value
    return nested
