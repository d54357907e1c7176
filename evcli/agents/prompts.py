"""Prompt files (`prompts/*.md`): a version in front matter, the text below it.

Lists of tools, raw_path forms, Gatekeeper rules and answer kinds are not written in the files:
`{{tool_names}}` and `{{raw_paths}}` are filled from the tool registry, `{{gate_rules}}` from
rules.toml, `{{answer_kinds}}` from the answer table (evcli/scope/answers.toml) with the rule that
checks each kind's shape, `{{reading_fields}}` and `{{levels}}` from the fields a model's reading of
the question may hold (evcli.agents.reading), when a prompt is loaded.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import get_args

from evcli.agents.engine import Prompt
from evcli.core.errors import EvcliError
from evcli.resources import data_path


def load_prompt(name: str) -> Prompt:
    """The prompt with its tool placeholders filled from the tool registry (see `_tool_text`)."""
    prompt = _read_prompt(name)
    text = prompt.text
    for placeholder, value in _tool_text().items():
        text = text.replace(placeholder, value)
    return replace(prompt, text=text) if text != prompt.text else prompt


def _tool_text() -> dict[str, str]:
    """Every placeholder's text: `{{tool_names}}`: the registered tools; `{{raw_paths}}`: the raw_path forms
    their refs can have; the others as the module docstring says."""
    from evcli.agents.reading import READING_FIELDS
    from evcli.contracts import NO_EVIDENCE_PATH, ScopeLevel
    from evcli.tools import registry

    paths = [f"`{array.raw_path_form}`" for spec in registry.specs() for array in spec.arrays]
    return {
        "{{tool_names}}": ", ".join(registry.names()),
        "{{raw_paths}}": f"{', '.join(paths)} or `{NO_EVIDENCE_PATH}`",
        "{{gate_rules}}": _gate_rules(),
        "{{answer_kinds}}": _answer_kinds(),
        "{{reading_fields}}": ", ".join(READING_FIELDS),
        "{{levels}}": ", ".join(get_args(ScopeLevel)),
    }


@cache
def _gate_rules() -> str:
    """`{{gate_rules}}`: every enabled rule of the shipped rules.toml with its severity, so the prompt says
    what the Gatekeeper checks and cannot drift from it."""
    from evcli.gatekeeper.rules import load_rules

    rules = load_rules()
    return "\n".join(
        f"- {rule.id} ({rule.default_severity}): {rule.description}" for rule in rules.rules.values() if rule.enabled
    )


@cache
def _answer_kinds() -> str:
    """`{{answer_kinds}}`: every row of the answer table in priority order, with the fields a breakdown
    counts by and the enabled Gatekeeper rule that checks an answer of that kind, if one does."""
    from evcli.gatekeeper.rules import load_rules
    from evcli.scope.answers import rows

    rules = load_rules().rules
    lines = []
    for row in rows():
        by = f" (by {', '.join(row.by)})" if row.by else ""
        rule = rules.get(row.scope_rule) if row.scope_rule else None
        checked = f" — checked by {rule.id}: {rule.description}" if rule is not None and rule.enabled else ""
        lines.append(f"- {row.name}{by}{checked}")
    return "\n".join(lines)


@cache
def _read_prompt(name: str) -> Prompt:
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
