"""Reading a stage's payload and writing the engine's reply.

The offline engine reads only the structured payload a stage builds, never the
prompt text; a call is compared by its validated parameters, defaults filled
in, exactly as the store records it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evcli.agents.engine import EngineReply, Usage
from evcli.backends.base import LEVELS
from evcli.contracts import Query
from evcli.core.canonical import canonical_json
from evcli.core.errors import BadInput
from evcli.core.time import parse_range_text
from evcli.scope.answers import Answer, answer_of
from evcli.scope.terms import singular, stem
from evcli.tools.registry import validate_params

MODEL = "offline"


def reply(document: dict[str, Any]) -> EngineReply:
    return EngineReply(text=json.dumps(document, ensure_ascii=False), usage=Usage(), model=MODEL)


@dataclass(frozen=True)
class Ask:
    """What the offline engine searches for: the question's scope (DESIGN §2), or for a session stored
    before scopes existed the pipeline's intent. `terms` is everything asked, strongest first: phrases
    and tokens verbatim (`exact`), the content words the environment's logs contain (searched in logs),
    then the other content words (matched against metric names and runbooks only)."""

    language: str
    narrow: bool
    services: tuple[str, ...]
    alertnames: tuple[str, ...]
    terms: tuple[str, ...]
    window: str | None
    exact: tuple[str, ...] = ()
    unknown_services: tuple[str, ...] = ()
    mentioned: tuple[str, ...] = ()  # names asked as services that are none here but that the logs write
    hosts: tuple[str, ...] = ()  # hosts the question names
    stems: tuple[str, ...] = ()  # terms searched as the stem of a word asked ("fail" for "failing"), not words asked
    alert_state: str | None = None
    since: str | None = None
    until: str | None = None
    instant: bool = False  # the range is around one moment the question names ("at/around 09:14")
    baseline: str | None = None  # what a comparison compares with: "day", or the length of the stretch before ("1h")
    levels: tuple[str, ...] = ()
    wants_count: bool = False
    kinds: tuple[str, ...] = ()  # the answer kinds the question asks for (evcli/scope/answers.toml)
    by: str | None = None  # what a breakdown counts the matching lines by
    sources: tuple[str, ...] = ()  # the evidence sources the question names ("logs")
    vocabulary: dict[str, dict[str, int]] | None = None  # None: not known (a session stored before scopes)
    capabilities: tuple[str, ...] | None = None  # what the backends serve; None: not known (all)

    @property
    def serves_logs(self) -> bool:
        return self.capabilities is None or "logs" in self.capabilities

    @property
    def serves_metrics(self) -> bool:
        """Alerts or metric series: what query_metrics reads."""
        return self.capabilities is None or bool({"alerts", "metrics"} & set(self.capabilities))

    @property
    def serves_knowledge(self) -> bool:
        """Runbooks to look up (a snapshot directory without markdown files has none)."""
        return self.capabilities is None or "knowledge" in self.capabilities

    def asks(self, *kinds: str) -> bool:
        """Whether the question asks for an answer of any of these kinds."""
        return any(kind in self.kinds for kind in kinds)

    @property
    def names_logs(self) -> bool:
        """The question asks about logs or errors by name ("any exceptions in billing?")."""
        return "logs" in self.sources

    @property
    def level(self) -> str | None:
        """The lowest level asked for explicitly, else None (no level filter on what was asked)."""
        return min(self.levels, key=LEVELS.index) if self.levels else None

    @property
    def names_only_unknown(self) -> bool:
        """The question names services or hosts, none of them known: asking others instead answers
        another question (their close names are the answer)."""
        return bool(self.unknown_services) and not self.services and not self.alertnames

    def found_in(self, term: str) -> dict[str, int]:
        return (self.vocabulary or {}).get(term) or {}

    def in_logs(self, term: str) -> bool:
        """Whether the environment's logs contain the word; with no vocabulary known, every word is searched."""
        return self.vocabulary is None or bool(self.found_in(term))


def intent_of(payload: dict[str, Any]) -> Ask:
    """The question's scope; an alert-driven run takes service and alert from the alert."""
    raw = payload.get("intent") or {}
    scope = payload.get("scope")
    services, alertnames = (
        tuple(raw.get("services") or ()),
        tuple(raw.get("alertnames") or ()),
    )
    alert = payload.get("aiops_alert")
    if isinstance(alert, dict):  # alert-driven run: the alert names what the question may not
        labels: dict[str, Any] = alert["labels"] if isinstance(alert.get("labels"), dict) else alert
        services = services or tuple(str(labels[key]) for key in ("service",) if labels.get(key))
        alertnames = alertnames or tuple(str(labels[key]) for key in ("alertname",) if labels.get(key))
    base: dict[str, Any] = {
        "language": payload.get("language") or "en",
        "narrow": payload.get("task_scope") == "narrow",
        "services": services,
        "alertnames": alertnames,
    }
    if not isinstance(scope, dict):  # a session stored before question scopes
        answer = answer_of(payload.get("question") or "", narrow=base["narrow"], wants_count=False)
        return Ask(
            **base,
            terms=tuple(raw.get("terms") or ()),
            window=raw.get("window"),
            kinds=answer.kinds,
            by=answer.by,
            sources=answer.sources,
        )
    return _from_scope(Query.model_validate(scope), base, payload)


def _answer(scope: Query, payload: dict[str, Any]) -> Answer:
    """The answer kinds read with the scope; of a scope stored before answer kinds, read from its question."""
    if scope.answer is not None:
        return Answer(scope.answer, tuple(scope.kinds), scope.by, tuple(scope.cues), tuple(scope.sources))
    narrow = scope.task_scope == "narrow"
    return answer_of(payload.get("question") or "", narrow=narrow, wants_count=scope.wants_count)


def _from_scope(scope: Query, base: dict[str, Any], payload: dict[str, Any]) -> Ask:
    vocabulary = (payload.get("environment") or {}).get("vocabulary") or {}
    known = set((payload.get("environment") or {}).get("services") or ())
    exact = tuple(dict.fromkeys([*scope.phrases, *scope.tokens]))
    # a host the environment knows as a service is searched as one; another is a token its logs may name
    hosts = [host for host in scope.hosts if host not in known]
    services = tuple(dict.fromkeys([*base["services"], *scope.services, *(h for h in scope.hosts if h in known)]))
    exact += tuple(host for host in hosts if host in vocabulary and host not in exact)
    # a name that is no service here but that logs write ("nova-api" in the public OpenStack logs, whose
    # lines name the file they came from) is searched as a token there, as a host is
    # (well-known software asked about, "postgres", is a term too: a few lines naming it are no source)
    mentioned = tuple(name for name in scope.unknown_services if name in vocabulary and name not in scope.terms)
    exact += tuple(name for name in mentioned if name not in exact)
    unknown = tuple(
        dict.fromkeys(
            [*(n for n in scope.unknown_services if n not in mentioned), *(h for h in hosts if h not in vocabulary)]
        )
    )
    # content words the logs have, strongest first; a plural or inflected word is searched by its stem when
    # the logs write that ("authentication failures": "failure" also matches the lines writing the plural)
    held = [_searched_form(term, vocabulary, services) for term in scope.terms]
    found = list(dict.fromkeys(term for term in held if term in vocabulary))
    others = [term for term in scope.terms if term not in vocabulary and term not in found]  # metrics, runbooks
    since = until = None
    if scope.range is not None and not scope.range.relative:
        asked = parse_range_text(scope.range.range)
        since = asked.start.isoformat() if asked.start else None
        until = asked.end.isoformat() if asked.end else None
    answer = _answer(scope, payload)
    return Ask(
        **base | {"services": services, "alertnames": tuple(dict.fromkeys([*base["alertnames"], *scope.alertnames]))},
        terms=tuple(dict.fromkeys([*exact, *found, *others])),
        window=scope.range.relative if scope.range is not None else None,  # "last 20m": the same range, as asked
        exact=exact,
        unknown_services=unknown,
        mentioned=mentioned,
        hosts=tuple(scope.hosts),
        stems=tuple(
            base for term, base in zip(scope.terms, held, strict=True) if base != term and base != singular(term)
        ),
        alert_state=scope.alert_state,
        since=since,
        until=until,
        instant=scope.range is not None and scope.range.instant is not None,
        baseline=None if scope.baseline is None else (scope.baseline.length or scope.baseline.mode),
        levels=tuple(scope.levels),
        wants_count=scope.wants_count,
        kinds=answer.kinds,
        by=answer.by,
        sources=answer.sources,
        vocabulary=vocabulary,
        capabilities=_capabilities(payload),
    )


def _capabilities(payload: dict[str, Any]) -> tuple[str, ...] | None:
    served = (payload.get("environment") or {}).get("capabilities")
    return None if served is None else tuple(served)


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]

    @property
    def key(self) -> str:
        return call_key(self.name, self.arguments)

    def signature(self) -> str:
        params = ", ".join(f"{key}={value!r}" for key, value in self.arguments.items())
        return f"{self.name}({params})"


def call_key(name: str, arguments: dict[str, Any]) -> str:
    """Calls compare by their validated parameters, defaults filled in, as the store records them."""
    try:
        arguments = validate_params(name, arguments).model_dump(exclude_none=True)
    except BadInput:
        pass
    return name + canonical_json(arguments)


def _searched_form(term: str, vocabulary: dict[str, dict[str, int]], services: tuple[str, ...] = ()) -> str:
    """A question's word as searched: a plural's singular when the logs hold that (a keyword matches inside
    words: "failure" finds "failures" too); a word the logs (of the services asked, when it names some) do
    not hold, its stem when they hold that ("kill" finds "Killing", "abnormal" "exited with abnormal code");
    else the word as asked."""

    def holds(word: str, within: tuple[str, ...]) -> bool:
        where = vocabulary.get(word) or {}
        return bool(where) and (not within or any(service in where for service in within))

    for within in dict.fromkeys([services, ()]):  # the services asked first, then any log ("kill" in the events)
        base = singular(term) or (None if holds(term, within) else stem(term))
        if base and holds(base, within):
            return base
        if holds(term, within):
            return term
    return term
