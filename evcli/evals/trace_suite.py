"""`evcli eval incidents --traces`: trace questions on generated incidents, scored from the claims citing query_traces.

Only an incident whose snapshot has traces/ has trace questions (evcli.evals.incidents.questions);
each is asked through the whole chain (evcli.evals.incident_suite.each_question). Each answer is read
from its allowed claims and the recorded invocations they cite, never from its wording alone:
  - a trace claim cites a `query_traces` `$.edges[i]` or `$.spans[i]`; its cited items are read from
    the invocation's recorded output (an edge names its caller and callee, a span its service and its
    parent's service);
  - slow_origin / error_origin: the answer's service is the one its first trace claim (the first
    root-cause claim among them, else the first) names first among the services its cited items name
    (names and aliases of the incident's services, as whole words); correct when it is the expected one;
  - callers: the services the trace claims' items show calling the subject (an edge into it: its
    caller; a span of it: its parent's service); correct when they are exactly the expected set;
  - and in every case the gate's verdict is PASS.
Totals per split (the held-out split reported apart, never used for tuning), kind and language.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evcli.agents.roles import Models
from evcli.core.errors import EvcliError
from evcli.evals.incident_suite import Progress, answered, each_question
from evcli.gatekeeper.rules import RuleSet
from evcli.pipeline import Pipeline
from evcli.store.db import TraceStore

TRACE_TOOL = "query_traces"
CITED_ARRAYS = ("edges", "spans")  # what a trace claim cites: $.edges[i] or $.spans[i]
_CITED = re.compile(rf"^\$\.(?P<array>{'|'.join(CITED_ARRAYS)})\[(?P<index>\d+)\]$")
_NAME_CHARACTER = r"[A-Za-z0-9_-]"  # a service name inside a longer name is not that service


def cited_items(claim: Mapping[str, Any], outputs: Mapping[Any, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(array, item) of every `query_traces` edge or span a claim cites, read from the recorded outputs."""
    found = []
    for evidence in claim.get("evidence") or []:
        match = _CITED.match(str(evidence.get("raw_path") or ""))
        if evidence.get("tool_name") != TRACE_TOOL or match is None:
            continue
        items = (outputs.get(evidence.get("source_invocation_id")) or {}).get(match["array"]) or []
        index = int(match["index"])
        if index < len(items) and isinstance(items[index], dict):
            found.append((match["array"], items[index]))
    return found


def item_services(array: str, item: Mapping[str, Any]) -> list[str]:
    """The services an edge (caller, callee) or a span (service, its parent's) names."""
    keys = ("caller", "callee") if array == "edges" else ("service", "parent_service")
    return [str(item[key]) for key in keys if item.get(key)]


def named_services(text: str, names: Mapping[str, str]) -> list[str]:
    """The services `text` names, in the order it first names them; `names` maps a name or alias to its service."""
    if not names:
        return []
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=lambda name: (-len(name), name)))
    pattern = re.compile(rf"(?<!{_NAME_CHARACTER})(?:{alternatives})(?!{_NAME_CHARACTER})", re.IGNORECASE)
    lowered = {name.lower(): service for name, service in names.items()}
    found: list[str] = []
    for match in pattern.finditer(text):
        service = lowered[match.group(0).lower()]
        if service not in found:
            found.append(service)
    return found


def trace_claims(claims: Iterable[Mapping[str, Any]], outputs: Mapping[Any, Any]) -> list[Mapping[str, Any]]:
    return [claim for claim in claims if cited_items(claim, outputs)]


def answered_origin(
    claims: Sequence[Mapping[str, Any]], outputs: Mapping[Any, Any], names: Mapping[str, str]
) -> str | None:
    """The service the first trace claim (a root-cause one first) names first among those its cited items name."""
    traced = trace_claims(claims, outputs)
    ordered = [claim for claim in traced if claim.get("claim_type") == "root_cause"] + traced
    if not ordered:
        return None
    claim = ordered[0]
    shown = {service for array, item in cited_items(claim, outputs) for service in item_services(array, item)}
    return next(
        (service for service in named_services(str(claim.get("claim_text") or ""), names) if service in shown), None
    )


def answered_callers(claims: Sequence[Mapping[str, Any]], outputs: Mapping[Any, Any], subject: str) -> list[str]:
    """The services the trace claims' cited items show calling `subject`, in the order first cited."""
    found: list[str] = []
    for claim in trace_claims(claims, outputs):
        for array, item in cited_items(claim, outputs):
            caller = item.get("caller") if array == "edges" else item.get("parent_service")
            callee = item.get("callee") if array == "edges" else item.get("service")
            if callee == subject and caller and caller not in found:
                found.append(str(caller))
    return found


def score(
    question: Any, report: Mapping[str, Any], outputs: Mapping[Any, Any], names: Mapping[str, str]
) -> dict[str, Any]:
    """What the answer says to one trace question and whether that is the expected answer with a PASS verdict."""
    claims = list(report.get("claims") or [])
    if question.kind == "callers":
        named = answered_callers(claims, outputs, question.subject)
        right = bool(named) and set(named) == set(question.expected)
    else:
        origin = answered_origin(claims, outputs, names)
        named = [origin] if origin else []
        right = named == list(question.expected)
    return {"verdict": report.get("verdict"), "named": named, "correct": right and report.get("verdict") == "PASS"}


def service_names(incident: Any) -> dict[str, str]:
    """Every name of the incident's services a claim may use: the names, then the aliases env.toml gives."""
    names = {service: service for service in incident.services}
    for service, aliases in incident.aliases.items():
        names.update(dict.fromkeys(aliases, service))
    return names


def run_trace_question(pipeline: Pipeline, store: TraceStore, question: Any, truth: Any) -> dict[str, Any]:
    started = time.perf_counter()
    result: dict[str, Any] = {"incident": truth.id, "question": question.text, "language": question.language}
    result.update(kind=question.kind, subject=question.subject, expected=list(question.expected))
    result.update(truth=truth.root_cause, fault=truth.fault_kind, traces=truth.traces)
    try:
        report, document = answered(pipeline, store, question.text)
    except EvcliError as error:
        return result | {"error": error.message, "verdict": None, "named": [], "correct": False}
    outputs = {invocation.invocation_id: invocation.output for invocation in document.invocations}
    scored = score(question, report, outputs, service_names(truth))
    return (
        result
        | scored
        | {"error": None, "session_id": report["session_id"], "seconds": round(time.perf_counter() - started, 3)}
    )


def run_traces(
    seeds: list[int], *, rules: RuleSet, models: Models, progress: Progress | None = None, questions: int | None = None
) -> dict[str, Any]:
    """Generate every seed's incident and ask the trace questions of those with traces; totals per split,
    kind and language."""
    from evcli.evals.incidents import split_of
    from evcli.evals.incidents.questions import TRACE_KINDS

    started = time.perf_counter()
    results: list[dict[str, Any]] = []
    for pipeline, store, truth, question in each_question(
        seeds, rules=rules, models=models, questions_of=lambda truth: truth.trace_questions[:questions]
    ):
        result = run_trace_question(pipeline, store, question, truth) | {"split": split_of(truth.seed)}
        results.append(result)
        if progress is not None:
            progress(result)
    return {
        "seeds": seeds,
        "results": results,
        "totals": trace_totals(results),
        "by_split": {split: trace_totals([r for r in results if r["split"] == split]) for split in ("tune", "holdout")},
        "by_kind": {kind: trace_totals([r for r in results if r["kind"] == kind]) for kind in TRACE_KINDS},
        "by_language": {lang: trace_totals([r for r in results if r["language"] == lang]) for lang in ("en", "zh")},
        "seconds": round(time.perf_counter() - started, 3),
    }


def trace_totals(results: list[dict[str, Any]]) -> dict[str, Any]:
    count = len(results)
    return {
        "questions": count,
        "incidents": len({r["incident"] for r in results}),
        "correct": round(sum(bool(r["correct"]) for r in results) / count, 4) if count else None,
        "passed": sum(r.get("verdict") == "PASS" for r in results),
        "errors": sum(r.get("error") is not None for r in results),
    }
