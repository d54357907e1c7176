"""`extract_scope`: what a question asks about, read by code (issue 10, DESIGN §2).

`extract_scope` runs the extractors in a fixed order over one `Spans`, each consuming the text it
reads, so every piece of the question is read once: quoted phrases (verbatim, nothing inside them
is read again), the time range, count, when ("when did it start": the onset word), which-address ("which IP …") and
alert-state cues, the environment's alert names (before
tokens: the 401 of "high http 401 rate"), distinctive tokens (before names: /api/login is no service
"api"), hosts, service-like names, known services, "service X" names, well-known software named as
the subject (evcli.scope.software: an unknown service that stays a term), CamelCase alert names, levels,
CamelCase/UPPER-CASE tokens, and last the remaining content words.
Deterministic, never raises on any text, never depends on a model.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

from evcli.contracts import Query
from evcli.scope.answers import answer_of
from evcli.scope.baselines import find_baseline
from evcli.scope.cues import (
    alert_state,
    breakdown_cue,
    common_cue,
    detect_language,
    is_broad,
    is_narrow,
    wants_count,
    when_cue,
)
from evcli.scope.entities import (
    alias_pairs,
    find_alertnames,
    find_camel_alertnames,
    find_hosts,
    find_services,
    find_unknown_services,
    normal_name,
)
from evcli.scope.levels import find_levels
from evcli.scope.match import Spans, distinct
from evcli.scope.software import find_software
from evcli.scope.terms import find_terms
from evcli.scope.times import find_range
from evcli.scope.tokens import find_name_tokens, find_phrases, find_tokens, in_order

__all__ = ["extract_scope"]


def extract_scope(
    question: str,
    *,
    services: list[str],
    aliases: dict[str, list[str]] | dict[str, str] | dict[str, Any],
    alertnames: list[str],
    clock: datetime,
    tz: tzinfo,
    hosts: list[str] | tuple[str, ...] = (),
    alerts_served: bool = True,
) -> Query:
    """The scope of `question` in an environment with these services, aliases ({alias: service}
    or {service: [aliases]}), alert names and hosts, on its clock (aware) and zone. Where no alerts
    are served (a snapshot of logs alone), a CamelCase word with an alert word (FetchFailed) is a
    token searched in the logs, not an alert name."""
    spans = Spans()
    phrases = find_phrases(question, spans)
    baseline = find_baseline(question, spans)  # before the range: "from yesterday" is no range asked
    asked_range = find_range(question, spans, clock=clock, tz=tz)
    count = wants_count(question, spans)
    when_cue(question, spans)
    breakdown_cue(question, spans)
    common_cue(question, spans)
    # an alert state asked of a snapshot holding no alerts ("did payments-worker recover?") asks the logs
    state = alert_state(question, spans) if alerts_served else None
    known_alerts = find_alertnames(question, alertnames, spans)
    tokens = find_tokens(question, spans)
    known = {normal_name(name) for name in (*services, *(name for pair in alias_pairs(aliases) for name in pair))}
    found_hosts = find_hosts(question, list(hosts), services, known, spans)
    spelled = find_unknown_services(question, known, spans, spelled=True)
    found_services = find_services(question, services, aliases, spans)
    unknown = spelled + find_unknown_services(question, known, spans, spelled=False)
    alone = not (found_services or found_hosts or unknown)
    unknown += find_software(question, known | {normal_name(host) for host in hosts}, spans, alone=alone)
    unknown = _in_question_order(question, distinct(unknown))
    found_alerts = distinct(known_alerts + (find_camel_alertnames(question, spans) if alerts_served else []))
    levels = find_levels(question, spans)
    names = find_name_tokens(question, spans)
    narrow = is_narrow(question) or _asks_alert_state(found_alerts, state, question)
    answer = answer_of(question, narrow=narrow, wants_count=count)
    return Query(
        language=detect_language(question),
        task_scope="narrow" if narrow else "broad",
        services=found_services,
        unknown_services=unknown,
        hosts=found_hosts,
        alertnames=found_alerts,
        alert_state=state,
        range=asked_range,
        baseline=baseline,
        levels=levels,
        phrases=phrases,
        tokens=in_order(tokens, names),
        terms=find_terms(question, spans),
        wants_count=count,
        answer=answer.answer,
        kinds=list(answer.kinds),
        by=answer.by,
        sources=list(answer.sources),
        cues=list(answer.cues),
    )


def _asks_alert_state(alerts: list[str], state: str | None, question: str) -> bool:
    """Whether one named alert still fires ("is X still firing?", "X 告警现在还在吗？") is one thing to confirm."""
    return len(alerts) == 1 and state == "still_firing" and not is_broad(question)


def _in_question_order(question: str, names: list[str]) -> list[str]:
    return sorted(names, key=lambda name: question.find(name))
