"""Where evidence comes from: one environment spec, built from the shared command options
or from a session's stored config, and resolved into a backend here and nowhere else.

Invariants: a spec names a snapshot directory or live backends, never both (checked when it is
resolved, a usage error); nothing named means the packaged demo snapshot, and `--env NAME` with
the name of a packaged environment (`demo`, `edge`, `host`) means that one unless a directory of
that name exists where it is given (a real directory always wins). Its stored form
(`as_config`) is flat: `env_dir`, `runbooks` (one path, or a list of several; a stored single path
still loads) and one key per backend, holding its URL, or `{url, timeout, options}` when options
differ from the defaults. Credentials never live in the spec apart from a URL's `user:pass@`, which
the stored config masks.

Knowledge: the `runbooks` directories; without any, a snapshot's own directory (or the demo's).
A live spec never falls back to the demo runbooks: without runbooks its knowledge backend answers
every lookup with `no runbooks configured` (a failed lookup, not "found nothing").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evcli.backends.registry import DIRECTORIES_OPTION, INDEX_OPTION, Capability, live_backends, providers
from evcli.contracts import BackendSpec
from evcli.core.errors import BadInput

PACKAGED_ENVS = (
    Path(__file__).resolve().parent.parent / "envs"
)  # one directory each (evcli.resources.packaged_env_names)


def packaged_env_dir(name: str) -> Path | None:
    """The packaged environment a bare name stands for: `demo` (evcli/demo) or a directory of
    evcli/envs with an env.toml (`edge`, `host`); None for any other name or for a path."""
    if name == "demo":
        from evcli.backends.snapshot import demo_env_dir

        return demo_env_dir()
    if name not in (".", "..") and Path(name).name == name and (PACKAGED_ENVS / name / "env.toml").is_file():
        return PACKAGED_ENVS / name
    return None


def resolve_env_dir(env_dir: Path) -> Path:
    """`env_dir` as given when it is a directory, else the packaged environment it names (`host`),
    else unchanged (so the caller's "no such directory" names what the user wrote)."""
    if env_dir.is_dir():
        return env_dir
    return packaged_env_dir(str(env_dir)) or env_dir


class EnvironmentSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    env_dir: Path | None = None
    runbooks: tuple[Path, ...] = ()
    backends: dict[str, BackendSpec] = Field(default_factory=dict)  # registry name -> spec

    @model_validator(mode="before")
    @classmethod
    def _flat_config(cls, data: Any) -> Any:
        """Accept the stored flat shape: a key naming a backend holds its URL or its spec."""
        if not isinstance(data, dict) or "backends" in data:
            return data
        backends = {key: value for key, value in data.items() if key not in ("env_dir", "runbooks")}
        named = {key: value for key, value in data.items() if key in ("env_dir", "runbooks")}
        return {
            **named,
            "backends": {
                key: {"url": value} if isinstance(value, str) else value for key, value in backends.items() if value
            },
        }

    @field_validator("runbooks", mode="before")
    @classmethod
    def _one_or_several(cls, runbooks: Any) -> Any:
        """A single directory (the stored form before several were allowed) is a list of one."""
        if runbooks is None:
            return ()
        return (runbooks,) if isinstance(runbooks, str | Path) else runbooks

    @field_validator("env_dir")
    @classmethod
    def _packaged_name(cls, env_dir: Path | None) -> Path | None:
        """`--env host` names the packaged environment unless `host` is a directory here."""
        return None if env_dir is None else resolve_env_dir(env_dir)

    @classmethod
    def from_options(
        cls,
        env: Path | None = None,
        runbooks: Path | Sequence[Path] | None = None,
        urls: Mapping[str, str | None] | None = None,
    ) -> EnvironmentSpec:
        """The spec the shared command options describe (`--env`, `--runbooks`, `--<backend> URL`)."""
        backends = {name: BackendSpec(url=url) for name, url in (urls or {}).items() if url}
        directories = (runbooks,) if isinstance(runbooks, Path) else tuple(runbooks or ())
        return cls(env_dir=env, runbooks=directories, backends=backends)

    @classmethod
    def from_config(cls, stored: Mapping[str, Any] | None) -> EnvironmentSpec:
        """The spec a session stored in its config (`as_config`); a bad one is a usage error."""
        from pydantic import ValidationError

        try:
            return cls.model_validate(dict(stored or {}))
        except ValidationError as exc:
            raise BadInput(f"the session's environment spec is not valid: {exc.errors()[0]['msg']}") from None

    def as_config(self) -> dict[str, Any]:
        """The flat form stored in a session's config; paths absolute so a replay finds them anywhere."""
        stored: dict[str, Any] = {}
        if self.env_dir is not None:
            stored["env_dir"] = str(self.env_dir.resolve())
        if self.runbooks:
            paths = [str(directory.resolve()) for directory in self.runbooks]
            stored["runbooks"] = paths[0] if len(paths) == 1 else paths
        for name, backend in self.backends.items():
            plain = backend == BackendSpec(url=backend.url)
            stored[name] = backend.url if plain else backend.model_dump()
        return stored

    @property
    def live(self) -> bool:
        return bool(self.backends)

    def evidence_backend(self) -> Any:
        """The live backends this spec names, else its snapshot directory (default: the demo)."""
        if self.env_dir is not None and self.live:
            flags = "/".join(kind.flag for kind in live_backends())
            raise BadInput(f"use either --env DIR or backend URLs ({flags}), not both")
        if self.live:
            from evcli.backends.live import LiveBackend

            known = [kind.name for kind in live_backends()]
            unknown = [name for name in self.backends if name not in known]
            if unknown:
                raise BadInput(f"unknown backend {unknown[0]!r}; known: {', '.join(known)}")
            return LiveBackend.from_specs(self.backends)
        from evcli.backends.snapshot import SnapshotBackend, demo_env_dir

        directory = self.env_dir or demo_env_dir()
        if not directory.is_dir():
            raise BadInput(f"no such environment directory: {directory}")
        return SnapshotBackend(directory)

    def knowledge_dirs(self) -> list[Path]:
        """Where runbooks are read: the --runbooks directories, else the snapshot directory (the
        demo's without one); none for live backends without runbooks."""
        if self.runbooks:
            return list(self.runbooks)
        if self.live:
            return []
        from evcli.backends.snapshot import demo_env_dir

        return [self.env_dir or demo_env_dir()]

    def knowledge_backend(self, index: Path | None = None) -> Any:
        """What serves the knowledge capability: the preferred live backend this spec names that
        provides it, else the preferred non-live provider (`runbooks`) built from `knowledge_dirs()`;
        `index` is the knowledge index file a directory-built backend uses (None: its default)."""
        kinds = providers(Capability.KNOWLEDGE)
        for kind in kinds:
            if kind.url_option and kind.name in self.backends:
                return kind.build(self.backends[kind.name])
        local = next(kind for kind in kinds if not kind.url_option)
        directories = [str(directory) for directory in self.knowledge_dirs()]
        options = {DIRECTORIES_OPTION: json.dumps(directories)}
        if index is not None:
            options[INDEX_OPTION] = str(index)
        return local.build(BackendSpec(url=directories[0] if directories else "-", options=options))
