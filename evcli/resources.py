"""Files evcli ships: found inside the installed package, or in a checkout.

Imports nothing heavy: help texts read the packaged environments' names at start-up.
Sample sessions are the `sample_sessions/*.json` files (named by their file stem); sample
environments are the packaged snapshot directories (`demo`, and each of evcli/envs).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def packaged_env_names() -> list[str]:
    """The packaged environments' names: `demo`, then each directory of evcli/envs with an env.toml."""
    envs = _PACKAGE_DIR / "envs"
    return ["demo", *sorted(path.name for path in envs.iterdir() if (path / "env.toml").is_file())]


def packaged_envs_text() -> str:
    """`demo, cluster, edge, host, mesh`: for help texts."""
    return ", ".join(packaged_env_names())


def package_path(*parts: str) -> Path:
    """A file inside the package (`package_path("gatekeeper", "facts.toml")`): what a compiled module, whose
    `__file__` is not its source's (evcli/native.py), reads its data files by."""
    return _PACKAGE_DIR.joinpath(*parts)


def data_path(name: str) -> Path:
    """`rules.toml` or `sample_sessions` as installed (wheel) or checked out (repo root)."""
    packaged = _PACKAGE_DIR / "_data" / name
    if packaged.exists():
        return packaged
    return _PACKAGE_DIR.parent / name


@dataclass(frozen=True)
class Sample:
    """One shipped sample: a session file or an environment directory."""

    name: str
    kind: str  # environment, or the session's annotated sample kind (base, fault)
    path: Path
    summary: str  # a session's expected gate outcome and question; an environment's first comment line

    def as_json(self) -> dict[str, str]:
        return {"name": self.name, "kind": self.kind, "path": str(self.path), "summary": self.summary}


def shipped_samples() -> list[Sample]:
    """The packaged environments, then every sample session, by name."""
    from evcli.backends.spec import packaged_env_dir

    environments = [_environment(name, packaged_env_dir(name)) for name in packaged_env_names()]
    sessions = [_session(path) for path in sorted(data_path("sample_sessions").glob("*.json"))]
    return environments + sessions


def shipped_sample(name: str) -> Sample:
    """The shipped sample called `name`; an unknown name is a usage error listing what exists."""
    from evcli.core.errors import NotFound

    samples = shipped_samples()
    for sample in samples:
        if sample.name == name or sample.name == name.removesuffix(".json"):
            return sample
    raise NotFound(f"no shipped sample {name!r}", hint="list them with `evcli samples list`")


def _environment(name: str, directory: Path | None) -> Sample:
    assert directory is not None  # names come from the packaged directories themselves
    comments = [
        line.lstrip("# ").strip()
        for line in (directory / "env.toml").read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    ]
    return Sample(name=name, kind="environment", path=directory, summary=comments[0] if comments else "")


def _session(path: Path) -> Sample:
    run = json.loads(path.read_text(encoding="utf-8"))["run"]
    annotations = run.get("annotations", {})
    kind = annotations.get("sample", {}).get("kind", "session")
    gate = annotations.get("expected_gate", {})
    what = annotations.get("sample", {}).get("description") or run.get("question", "")
    summary = f"gate {gate.get('severity', '?')}: {what}"
    return Sample(name=path.stem, kind=kind, path=path, summary=summary)
