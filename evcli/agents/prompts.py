"""Prompt files (`prompts/*.md`): a version in front matter, the text below it."""

from __future__ import annotations

from functools import lru_cache

from evcli.agents.engine import Prompt
from evcli.errors import EvcliError
from evcli.resources import data_path


@lru_cache(maxsize=None)
def load_prompt(name: str) -> Prompt:
    path = data_path("prompts") / f"{name}.md"
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EvcliError(f"cannot read prompt {path}: {exc}") from exc
    meta: dict[str, str] = {}
    body = raw
    if raw.startswith("---\n"):
        header, _, body = raw[4:].partition("\n---\n")
        for line in header.splitlines():
            key, _, value = line.partition(":")
            meta[key.strip()] = value.strip()
    if not meta.get("version"):
        raise EvcliError(f"prompt {path} has no version in its front matter")
    return Prompt(name=name, version=meta["version"], resource=f"prompts/{name}.md", text=body.strip())
