"""A model's reading of the question (the Planner's optional `reading`), checked by code before it is used.

The Planner may propose its own reading of the question in `Query`'s schema, limited to
READING_FIELDS. Code keeps of it only what it can check, and uses what it keeps only to widen its own
reading: the model can add a service, phrase or kind the code missed, never remove or narrow what the
code read, so it cannot loosen what the Gatekeeper's scope rules demand (they keep checking the code's
reading stored with the session).

Invariants (pure functions, no I/O):
- a phrase, token, term or host is kept only when it occurs in the question (`normalize`: NFKC,
  casefolded); the environment overview lists no hosts, so a host is checked like a phrase;
- a service is kept only when the environment names it or one of its aliases (kept as the service),
  an alert name only when an alert of the environment or the code's reading has it (kept as spelled there);
- `answer` and `kinds` only as rows of the answer table, `by` only as a breakdown field of a reading
  that names a breakdown and agrees with the code's, `levels` only as known levels added to a level
  filter the code read (one added where the code read none would narrow the search);
- everything else, an unknown field too, is dropped and named in one line (`ReadingReview.dropped`);
- `widened` keeps every value of the code's reading, in its order, then adds what was kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field

from evcli.contracts import AnswerKind, Breakdown, EnvironmentOverview, Query, ScopeLevel
from evcli.core.text import normalize

READING_FIELDS = ("services", "hosts", "alertnames", "phrases", "tokens", "terms", "levels", "answer", "kinds", "by")
_IN_QUESTION = ("hosts", "phrases", "tokens", "terms")


class Reading(BaseModel):
    """The part of a question's reading a model may propose (a subset of Query's fields)."""

    model_config = ConfigDict(extra="forbid")

    services: list[str] = Field(default_factory=list)
    hosts: list[str] = Field(default_factory=list)
    alertnames: list[str] = Field(default_factory=list)
    phrases: list[str] = Field(default_factory=list)
    tokens: list[str] = Field(default_factory=list)
    terms: list[str] = Field(default_factory=list)
    levels: list[ScopeLevel] = Field(default_factory=list)
    answer: AnswerKind | None = None
    kinds: list[AnswerKind] = Field(default_factory=list)
    by: Breakdown | None = None


class ReadingReview(BaseModel):
    """What code kept of a proposed reading, and one line for each value it dropped."""

    model_config = ConfigDict(extra="forbid")

    accepted: Reading = Field(default_factory=Reading)
    dropped: list[str] = Field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """As stored with the plan stage: only the accepted fields that hold something."""
        return {"accepted": self.accepted.model_dump(mode="json", exclude_defaults=True), "dropped": self.dropped}


@dataclass(frozen=True)
class _Known:
    """What a proposed value is checked against."""

    question: str  # normalised
    services: dict[str, str]  # normal name of a service or alias -> the service
    alertnames: dict[str, str]  # casefolded -> as the environment spells it
    scope: Query


def review_reading(proposal: Any, scope: Query, question: str, environment: EnvironmentOverview) -> ReadingReview:
    """The values of `proposal` that pass their checks (module docstring), and why each other one failed."""
    if not isinstance(proposal, Mapping):
        return ReadingReview(dropped=[f"reading: not an object (got {type(proposal).__name__})"])
    known = _known(scope, question, environment)
    accepted: dict[str, Any] = {}
    dropped = [f"{name}: not a field of a reading" for name in proposal if name not in READING_FIELDS]
    for name in READING_FIELDS:
        if name in proposal and proposal[name] is not None:
            value, reasons = _CHECKS[name](proposal[name], known, accepted)
            accepted[name] = value
            dropped += reasons
    return ReadingReview(accepted=Reading.model_validate(accepted), dropped=dropped)


def widened(scope: Query, accepted: Reading) -> Query:
    """The code's reading with what the model's accepted reading adds; nothing of the code's is removed."""
    update: dict[str, Any] = {
        name: _union(getattr(scope, name), getattr(accepted, name))
        for name in ("services", "hosts", "alertnames", "phrases", "tokens", "terms", "levels")
    }
    kinds = _merged_kinds(scope.kinds, [*filter(None, [accepted.answer]), *accepted.kinds])
    if kinds != list(scope.kinds):
        update |= {"kinds": kinds, "answer": kinds[0], "wants_count": scope.wants_count or "count" in kinds}
    if scope.by is None and accepted.by is not None:
        update["by"] = accepted.by
    return scope.model_copy(update=update)


def described(review: ReadingReview) -> str:
    """One line for `trace`: `accepted services order-service, phrases "x"; dropped service 'y': …`."""
    kept = review.accepted.model_dump(exclude_defaults=True)
    accepted = ", ".join(f"{name} {_listed(name, value)}" for name, value in kept.items()) or "nothing"
    return f"accepted {accepted}" + (f"; dropped {'; '.join(review.dropped)}" if review.dropped else "")


# --- checks, one per kind of field ----------------------------------------------------------------------


Check = Callable[[Any, _Known, Mapping[str, Any]], tuple[Any, list[str]]]


def _known(scope: Query, question: str, environment: EnvironmentOverview) -> _Known:
    from evcli.scope.entities import alias_pairs, normal_name

    services = {normal_name(service): service for service in environment.services}
    for alias, service in alias_pairs(environment.aliases):
        services.setdefault(normal_name(alias), services.get(normal_name(service), service))
    alerts = [str(a["alertname"]) for a in environment.alerts if a.get("alertname")] + scope.alertnames
    return _Known(normalize(question), services, {name.casefold(): name for name in alerts}, scope)


def _in_question(field: str) -> Check:
    singular = field.removesuffix("s")

    def check(value: Any, known: _Known, _: Mapping[str, Any]) -> tuple[list[str], list[str]]:
        strings, dropped = _strings(field, value)
        kept = [text for text in strings if normalize(text) and normalize(text) in known.question]
        dropped += [f"{singular} {text!r}: not in the question" for text in strings if text not in kept]
        return kept, dropped

    return check


def _services(value: Any, known: _Known, _: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    from evcli.scope.entities import normal_name

    strings, dropped = _strings("services", value)
    kept = [known.services[normal_name(text)] for text in strings if normal_name(text) in known.services]
    dropped += [
        f"service {text!r}: no service or alias of this environment"
        for text in strings
        if normal_name(text) not in known.services
    ]
    return kept, dropped


def _alertnames(value: Any, known: _Known, _: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    strings, dropped = _strings("alertnames", value)
    kept = [known.alertnames[text.casefold()] for text in strings if text.casefold() in known.alertnames]
    dropped += [
        f"alertname {text!r}: no alert of this environment"
        for text in strings
        if text.casefold() not in known.alertnames
    ]
    return kept, dropped


def _levels(value: Any, known: _Known, _: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    strings, dropped = _strings("levels", value)
    levels = get_args(ScopeLevel)
    dropped += [f"level {text!r}: not a level ({', '.join(levels)})" for text in strings if text.upper() not in levels]
    kept = [text.upper() for text in strings if text.upper() in levels]
    if kept and not known.scope.levels:
        dropped += [
            f"level {level!r}: the question asks for no level; a level filter would narrow it" for level in kept
        ]
        return [], dropped
    return kept, dropped


def _kinds(value: Any, known: _Known, _: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    strings, dropped = _strings("kinds", value)
    names = _table_kinds()
    return [text for text in strings if text in names], dropped + [
        f"kind {text!r}: not an answer kind ({', '.join(names)})" for text in strings if text not in names
    ]


def _answer(value: Any, known: _Known, _: Mapping[str, Any]) -> tuple[str | None, list[str]]:
    names = _table_kinds()
    if value in names:
        return value, []
    return None, [f"answer {value!r}: not an answer kind ({', '.join(names)})"]


def _by(value: Any, known: _Known, accepted: Mapping[str, Any]) -> tuple[str | None, list[str]]:
    fields = get_args(Breakdown)
    kinds = {*known.scope.kinds, *(accepted.get("kinds") or ()), accepted.get("answer")}
    if value not in fields:
        return None, [f"by {value!r}: not a breakdown field ({', '.join(fields)})"]
    if "breakdown" not in kinds:
        return None, [f"by {value!r}: the reading names no breakdown"]
    if known.scope.by not in (None, value):
        return None, [f"by {value!r}: the question's breakdown counts by {known.scope.by}"]
    return value, []


_CHECKS: dict[str, Check] = {
    "services": _services,
    "alertnames": _alertnames,
    "levels": _levels,
    "answer": _answer,
    "kinds": _kinds,
    "by": _by,
    **{field: _in_question(field) for field in _IN_QUESTION},
}


# --- helpers -------------------------------------------------------------------------------------------


def _strings(field: str, value: Any) -> tuple[list[str], list[str]]:
    """The strings of a list field (one string counts as a list of it), and a line for anything else."""
    values = [value] if isinstance(value, str) else value if isinstance(value, list) else None
    if values is None:
        return [], [f"{field}: not a list (got {type(value).__name__})"]
    dropped = [f"{field}: {item!r} is not a string" for item in values if not isinstance(item, str)]
    return [item for item in values if isinstance(item, str)], dropped


def _table_kinds() -> tuple[str, ...]:
    from evcli.scope.answers import rows

    return tuple(row.name for row in rows())


def _union(code: Iterable[str], added: Iterable[str]) -> list[str]:
    """The code's values in order, then the added ones it does not hold (compared in normal form)."""
    merged: dict[str, str] = {}
    for text in [*code, *added]:
        merged.setdefault(normalize(text), text)
    return list(merged.values())


def _merged_kinds(code: Iterable[str], added: Iterable[str]) -> list[str]:
    """Every kind of either reading in table order; the fallback (lookup) only when no other is named."""
    from evcli.scope.answers import FALLBACK

    named = {*code, *added}
    kinds = [kind for kind in _table_kinds() if kind in named]
    return [kind for kind in kinds if kind != FALLBACK] or kinds


def _listed(name: str, value: Any) -> str:
    values = value if isinstance(value, list) else [value]
    return ", ".join(f'"{v}"' if name == "phrases" else str(v) for v in values)
