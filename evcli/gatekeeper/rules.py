"""Loading the rule catalogue (rules.toml).

The file only configures rules; their implementation is the deterministic code
in `checks.py` (the `scope.*` rules: `scope.py`). A rule the code knows must be present in the file (turn it off
with `enabled = false`), and the file may not name rules the code does not
know: a typo must not silently disable a check.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from evcli.contracts import RuleMeta, RuleSeverity
from evcli.core.canonical import content_hash
from evcli.core.errors import BadInput
from evcli.resources import data_path

SEVERITIES: tuple[RuleSeverity, ...] = get_args(RuleSeverity)
# The file's vocabulary: a misspelt table or key is an error, never a silently empty setting.
TOP_LEVEL_KEYS = ("version", "rules", "composer")
RULE_KEYS = ("id", "description", "enabled", "default_severity", "params")
COMPOSER_KEYS = ("overstatement_phrases",)

# Every rule the code implements, with the parameters it reads and their types.
KNOWN_RULES: dict[str, dict[str, type]] = {
    "contract.answer_version": {},
    "contract.forbidden_fields": {},
    "claim.bindings_present": {},
    "binding.fields_present": {},
    "binding.invocation_backfill": {},
    "binding.invocation_exists": {},
    "binding.tool_name_match": {},
    "binding.raw_path_format": {},
    "binding.invocation_has_refs": {},
    "binding.raw_path_exists": {},
    "binding.excerpt_supported": {"min_similarity": float},
    "binding.excerpt_informative": {"min_chars": int},
    "claim.facts_in_excerpts": {},
    "claim.facts_match": {},
    "claim.observes_only": {"asserting_phrases": list},
    "claim.plain_text": {},
    "binding.unique_item": {},
    "claim.negative_requires_no_evidence": {},
    "invocation.ids_unique": {},
    "binding.invocation_succeeded": {},
    "invocation.refs_derivable": {},
    "invocation.recorded_by_run": {},
    "provenance.source_matches": {},
    # scope rules (evcli/gatekeeper/scope.py): what was searched covers what the question asked
    "scope.services_covered": {},
    "scope.terms_covered": {},
    "scope.range_covered": {},
    "scope.level_not_narrower": {},
    "scope.count_claimed": {},
    "scope.breakdown_claimed": {},
    "scope.why_answered": {},
    "scope.alert_state_covered": {},
    "scope.negative_within_searched": {"widening_words": list},
}


@dataclass(frozen=True)
class Rule:
    id: str
    description: str
    enabled: bool
    default_severity: RuleSeverity
    params: dict[str, Any] = field(default_factory=dict)

    def meta(self) -> RuleMeta:
        return RuleMeta(
            id=self.id,
            description=self.description,
            enabled=self.enabled,
            default_severity=self.default_severity,
        )


@dataclass(frozen=True)
class RuleSet:
    version: str
    file_hash: str
    source: str
    rules: dict[str, Rule]
    # Composer post-guard (the `[composer]` table): phrases an answer may never use.
    overstatement_phrases: tuple[str, ...] = ()

    def enabled(self, rule_id: str) -> bool:
        return self.rules[rule_id].enabled

    def severity(self, rule_id: str) -> RuleSeverity:
        return self.rules[rule_id].default_severity

    def param(self, rule_id: str, name: str) -> Any:
        return self.rules[rule_id].params[name]


def default_rules_path() -> Path:
    return data_path("rules.toml")


def load_rules(path: Path | None = None) -> RuleSet:
    """Read and validate a rules file; any problem is a one-line BadInput."""
    from evcli.core.userfiles import RULES_FILE, read_input

    path = path or default_rules_path()
    try:  # a regular file of at most 1 MiB: a FIFO or a device named by --rules is refused, never read
        raw = read_input(path, RULES_FILE)
    except BadInput as exc:
        raise BadInput(f"cannot read rules file {path}: {exc.message}", hint=exc.hint) from exc
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"rules file {path} is not valid TOML: {exc}") from exc
    except RecursionError as exc:
        raise BadInput(f"rules file {path} is nested too deeply") from exc
    return parse_rules(document, file_hash=content_hash(raw), source=str(path))


def parse_rules(document: dict[str, Any], *, file_hash: str, source: str) -> RuleSet:
    def bad(message: str) -> BadInput:
        return BadInput(f"rules file {source}: {message}")

    _check_keys(document, TOP_LEVEL_KEYS, "top-level key or table", bad)
    version = document.get("version")
    if not isinstance(version, str) or not version.strip():
        raise bad("missing top-level `version` string")
    entries = document.get("rules")
    if not isinstance(entries, list) or not entries:
        raise bad("missing [[rules]] entries")

    rules: dict[str, Rule] = {}
    for position, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            raise bad(f"rule #{position} is not a table")
        rule_id = entry.get("id")
        if not isinstance(rule_id, str) or rule_id not in KNOWN_RULES:
            raise bad(f"rule #{position} has unknown id {rule_id!r}; known ids: {', '.join(KNOWN_RULES)}")
        if rule_id in rules:
            raise bad(f"rule {rule_id} is listed twice")
        _check_keys(entry, RULE_KEYS, f"key in rule {rule_id}", bad)
        enabled = entry.get("enabled", True)
        if not isinstance(enabled, bool):
            raise bad(f"rule {rule_id}: `enabled` must be true or false")
        severity = entry.get("default_severity")
        if severity not in SEVERITIES:
            raise bad(f"rule {rule_id}: default_severity must be one of {', '.join(SEVERITIES)}, got {severity!r}")
        params = entry.get("params", {})
        if not isinstance(params, dict):
            raise bad(f"rule {rule_id}: params must be a table")
        rules[rule_id] = Rule(
            id=rule_id,
            description=str(entry.get("description", "")),
            enabled=enabled,
            default_severity=severity,
            params=_check_params(rule_id, params, bad),
        )

    missing = [rule_id for rule_id in KNOWN_RULES if rule_id not in rules]
    if missing:
        raise bad(f"rules missing: {', '.join(missing)} (set enabled = false to turn a rule off)")
    composer = document.get("composer", {})
    if isinstance(composer, dict):
        _check_keys(composer, COMPOSER_KEYS, "key in [composer]", bad)
    phrases = composer.get("overstatement_phrases", []) if isinstance(composer, dict) else None
    if not isinstance(phrases, list) or not all(isinstance(p, str) and p.strip() for p in phrases):
        raise bad("[composer] overstatement_phrases must be a list of non-empty strings")
    return RuleSet(
        version=version,
        file_hash=file_hash,
        source=source,
        rules=rules,
        overstatement_phrases=tuple(p.strip() for p in phrases),
    )


def _check_keys(table: dict[str, Any], known: tuple[str, ...], what: str, bad) -> None:
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise bad(f"unknown {what} {unknown[0]!r} (expected one of: {', '.join(known)})")


def _check_params(rule_id: str, params: dict[str, Any], bad) -> dict[str, Any]:
    expected = KNOWN_RULES[rule_id]
    unknown = set(params) - set(expected)
    if unknown:
        raise bad(f"rule {rule_id}: unknown params {', '.join(sorted(unknown))}")
    checked: dict[str, Any] = {}
    for name, kind in expected.items():  # a float is a ratio in (0, 1], an int a count >= 1
        if name not in params:
            raise bad(f"rule {rule_id}: missing param {name}")
        value = params[name]
        if kind is list:
            if not isinstance(value, list) or not all(isinstance(w, str) and w.strip() for w in value):
                raise bad(f"rule {rule_id}: {name} must be a list of non-empty strings")
            checked[name] = tuple(w.strip() for w in value)
            continue
        if kind is int:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise bad(f"rule {rule_id}: {name} must be a whole number >= 1, got {value!r}")
            checked[name] = value
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad(f"rule {rule_id}: {name} must be a number")
        if not 0.0 < value <= 1.0:
            raise bad(f"rule {rule_id}: {name} must be in (0, 1], got {value}")
        checked[name] = float(value)
    return checked
