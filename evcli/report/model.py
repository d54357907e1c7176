"""Everything a report shows, read from one session document by one pure function.

`report_model(document)` never opens the store, the environment or the network: a report of an
exported session reads the same on any machine. Invariants:
  - citation numbers are the answer's `[n]` markers: the allowed claims of the latest execute round,
    numbered as the Composer saw them (evcli.agents.projection.allowed_claims);
  - every cited ref is shown with the full text the tool recorded, the excerpt located inside it
    (`excerpt_at`, None when the gate matched it only nearly), and its source file:line when the
    tool output names one;
  - every cited ref carries the facts the latest gate matched for its binding, each ok one located in
    the ref text (`CitedFact.at`) when its value is written there; located spans never overlap one
    another nor cross the excerpt's edges, so a renderer can nest their marks;
  - the cited traces and call edges are read into drawings by evcli.report.traces (bounded there), and
    each cited evidence they draw names its drawing (`CitedEvidence.drawing`);
  - values are verbatim: renderers escape them for their medium;
  - plain dataclasses, not pydantic: the model is built from validated contracts and never parsed,
    and `evcli report` should not pay for building validators at start-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from evcli.contracts import NO_EVIDENCE_PATH, GateResult, MatchedFact, SessionDocument, ToolInvocation
from evcli.core.time import aware_time, parse_range_text
from evcli.report.cited import ITEM_PATH, Citation, CitedEvidence, CitedFact, SeriesChart
from evcli.report.traces import CallGraph, Waterfall, call_graphs, drawn_refs, waterfalls


@dataclass
class TimelineEntry:
    time: str  # on the incident's clock
    kind: str  # log or alert
    text: str
    citations: list[int]
    anchor: str


@dataclass
class InvocationView:
    invocation_id: int
    tool_name: str
    params: str
    status: str
    service: str | None = None
    range: str | None = None
    range_origin: str | None = None
    keywords: list[str] = field(default_factory=list)
    level: str | None = None
    truncated: bool = False
    error: str | None = None
    duration_ms: float = 0.0


@dataclass
class FindingView:
    rule: str
    severity: str
    message: str
    asked: str | None = None
    searched: str | None = None


@dataclass
class GateView:
    seq: int
    round: int
    created_at: str
    status: str
    severity: str
    rule_set_version: str
    failed_rules: list[str]
    findings: list[FindingView]


@dataclass
class ClaimCheck:
    claim_id: str
    verification: str
    is_critical: bool
    note: str


@dataclass
class ReportModel:
    session_id: str
    question: str
    mode: str
    status: str
    created_at: str
    verdict: str | None
    gate_status: str | None
    gate_severity: str | None
    answer: str
    citations: list[Citation]
    timeline: list[TimelineEntry]
    invocations: list[InvocationView]
    gates: list[GateView]
    plan_skill: str | None = None
    plan_reason: str = ""
    plan: list[str] = field(default_factory=list)
    verifier_verdict: str | None = None
    groundedness: float | None = None
    rationale: str = ""
    claim_checks: list[ClaimCheck] = field(default_factory=list)
    prompts: list[tuple[str, str]] = field(default_factory=list)  # (name, version)
    models: dict[str, str] = field(default_factory=dict)
    asked: list[tuple[str, str]] = field(default_factory=list)  # evcli.scope.describe labels
    hypotheses: list[str] = field(default_factory=list)
    missing_info: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    waterfalls: list[Waterfall] = field(default_factory=list)  # cited traces (evcli.report.traces)
    call_graphs: list[CallGraph] = field(default_factory=list)  # cited call edges


def report_model(document: SessionDocument) -> ReportModel:
    """The report of a session, in whatever state it is (a session that never got an answer reports what it has)."""
    run = document.run
    execute = document.latest_stage("execute")
    latest_gate = _gate_of_round(document, execute.round if execute else None)
    invocations = {invocation.invocation_id: invocation for invocation in document.invocations}
    zone = _incident_zone(document.invocations)
    citations = _citations(document, latest_gate, invocations)
    waterfalls, call_graphs = _drawings(document.invocations, citations)
    compose = _output(document, "compose")
    verify = _output(document, "verify")
    plan = _output(document, "plan")
    executor = _output(document, "execute")
    return ReportModel(
        session_id=run.session_id,
        question=run.question,
        mode=run.mode,
        status=run.status,
        created_at=run.created_at,
        verdict=run.verdict.value if run.verdict else None,
        gate_status=latest_gate.status if latest_gate else None,
        gate_severity=latest_gate.severity.value if latest_gate else None,
        answer=str(compose.get("user_facing_answer") or ""),
        citations=citations,
        timeline=_timeline(citations, zone),
        plan_skill=plan.get("selected_skill"),
        plan_reason=str(plan.get("selection_reason") or ""),
        plan=[str(step) for step in plan.get("plan") or []],
        invocations=[_invocation_view(invocation) for invocation in document.invocations],
        gates=[
            _gate_view(stored.seq, stored.round, stored.created_at, stored.result) for stored in document.gate_results
        ],
        verifier_verdict=str(verify["verdict"]) if verify.get("verdict") else None,
        groundedness=verify.get("groundedness_score"),
        rationale=str(verify.get("rationale") or ""),
        claim_checks=[_claim_check(check) for check in verify.get("claim_checks") or [] if isinstance(check, dict)],
        prompts=[(str(p.get("name")), str(p.get("version"))) for p in run.prompt_audit.get("prompts") or []],
        models=dict(run.config.models),
        asked=_asked(document),
        hypotheses=[_text(item) for item in executor.get("hypotheses") or []],
        missing_info=[_text(item) for item in executor.get("missing_info") or []],
        actions=[
            _text(a.get("action_text", a) if isinstance(a, dict) else a)
            for a in compose.get("recommended_actions") or []
        ],
        waterfalls=waterfalls,
        call_graphs=call_graphs,
    )


def _drawings(invocations: list[ToolInvocation], citations: list[Citation]) -> tuple[list[Waterfall], list[CallGraph]]:
    """The trace drawings of the cited items, each cited evidence naming the drawing it is in."""
    traces, graphs = waterfalls(invocations, citations), call_graphs(invocations, citations)
    drawn = drawn_refs(traces, graphs)
    for citation in citations:
        for evidence in citation.evidence:
            evidence.drawing = drawn.get((evidence.invocation_id, evidence.raw_path))
    return traces, graphs


def _output(document: SessionDocument, stage: str) -> dict[str, Any]:
    stored = document.latest_stage(stage)
    return stored.output if stored and isinstance(stored.output, dict) else {}


def _text(item: Any) -> str:
    if isinstance(item, dict):
        return str(item.get("text") or item.get("hypothesis") or item.get("description") or item)
    return str(item)


def _gate_of_round(document: SessionDocument, round: int | None) -> GateResult | None:
    """The newest gate result of the execute round the answer rests on (else the newest at all)."""
    results = [stored for stored in document.gate_results if round is None or stored.round == round]
    results = results or document.gate_results
    return results[-1].result if results else None


def _citations(
    document: SessionDocument, gate_result: GateResult | None, invocations: dict[int, ToolInvocation]
) -> list[Citation]:
    from evcli.agents.projection import allowed_claims

    executor, verify = _output(document, "execute"), _output(document, "verify")
    if gate_result is None or not verify:
        return []
    ref_texts = _ref_texts(invocations)
    facts = _passed_facts(gate_result)
    return [
        Citation(
            number=claim.citation,
            claim_id=str(claim.claim_id),
            claim_type=str(claim.claim_type),
            claim_text=str(claim.claim_text),
            evidence=[
                _cited(
                    f"ev-{claim.citation}-{index}",
                    e.tool_name,
                    e.source_invocation_id,
                    e.raw_path,
                    e.text,
                    invocations,
                    ref_texts,
                    facts.get((claim.claim_id, e.source_invocation_id, e.tool_name, e.raw_path), []),
                )
                for index, e in enumerate(claim.evidence, start=1)
            ],
        )
        for claim in allowed_claims(executor, gate_result, verify)
    ]


def _cited(
    anchor: str,
    tool_name: str | None,
    invocation_id: int | None,
    raw_path: str | None,
    excerpt: str | None,
    invocations: dict[int, ToolInvocation],
    ref_texts: dict[tuple[int, str], str],
    facts: list[MatchedFact],
) -> CitedEvidence:
    invocation = invocations.get(invocation_id) if invocation_id is not None else None
    ref_text = ref_texts.get((invocation_id, raw_path or ""), "") if invocation_id is not None else ""
    excerpt = excerpt or ""
    found = ref_text.casefold().find(excerpt.casefold()) if excerpt else -1
    excerpt_at = (found, found + len(excerpt)) if found >= 0 else None
    item, kind = _item(invocation, raw_path or "")
    return CitedEvidence(
        anchor=anchor,
        tool_name=tool_name or "",
        invocation_id=invocation_id,
        raw_path=raw_path or "",
        excerpt=excerpt,
        ref_text=ref_text,
        excerpt_at=excerpt_at,
        source=_source(item),
        time=_item_time(item, kind),
        line=str(item["line"]) if kind == "logs" and item and item.get("line") else None,
        kind=kind,
        chart=_chart(item, excerpt) if kind == "series" and item else None,
        facts=_cited_facts(facts, ref_text, excerpt_at),
    )


def _passed_facts(gate_result: GateResult) -> dict[tuple[Any, ...], list[MatchedFact]]:
    """The facts of each passed binding, keyed as evcli.agents.projection keys it (the first of duplicates)."""
    facts: dict[tuple[Any, ...], list[MatchedFact]] = {}
    for b in gate_result.checked_bindings:
        if b.status == "pass":
            facts.setdefault((b.claim_id, b.source_invocation_id, b.tool_name, b.raw_path), b.facts)
    return facts


def _cited_facts(facts: list[MatchedFact], ref_text: str, excerpt_at: tuple[int, int] | None) -> list[CitedFact]:
    taken: list[tuple[int, int]] = []
    cited = []
    for fact in facts:
        at = _fact_at(fact, ref_text, excerpt_at, taken) if fact.ok else None
        if at is not None:
            taken.append(at)
        cited.append(CitedFact(claim=fact.claim, field=fact.field, evidence=fact.evidence, ok=fact.ok, at=at))
    return cited


def _fact_at(
    fact: MatchedFact, ref_text: str, excerpt_at: tuple[int, int] | None, taken: list[tuple[int, int]]
) -> tuple[int, int] | None:
    """Where the ref text writes the fact's value: as recorded, else as the claim wrote it ("91.0%" is
    "current=91%"), a whole word, free, preferably inside the excerpt; None when it is not written there."""
    placed = []
    for form, value in enumerate((fact.evidence, fact.claim)):
        for found in re.finditer(rf"(?<!\w){re.escape(value)}(?!\w)", ref_text, re.IGNORECASE) if value else []:
            start, end = found.span()
            outside = excerpt_at is None or end <= excerpt_at[0] or start >= excerpt_at[1]
            inside = excerpt_at is not None and excerpt_at[0] <= start and end <= excerpt_at[1]
            if (outside or inside) and not any(start < b and a < end for a, b in taken):
                placed.append((not inside, form, start, end))
    return min(placed)[2:] if placed else None


def fact_text(fact: MatchedFact | CitedFact) -> str:
    """One matched fact on one line: `91% = $.alerts[0].value 91.0%`, `38 ≠ $.stats.total 61` or
    `38: no field states it`."""
    if not fact.field:
        return f"{fact.claim}: no field states it"
    return f"{fact.claim} {'=' if fact.ok else '≠'} {fact.field} {fact.evidence}"


def _ref_texts(invocations: dict[int, ToolInvocation]) -> dict[tuple[int, str], str]:
    """Each recorded ref's text by (invocation, raw_path): one pass, so 500 citations are not 500 scans."""
    texts: dict[tuple[int, str], str] = {}
    for invocation_id, invocation in invocations.items():
        details = invocation.retrieval_details
        for ref in (details.evidence_refs or []) if details else []:
            texts.setdefault((invocation_id, ref.raw_path), ref.text)
    return texts


def _item(invocation: ToolInvocation | None, raw_path: str) -> tuple[dict[str, Any] | None, str]:
    """The output item a raw_path names, and the array it is in."""
    if raw_path == NO_EVIDENCE_PATH:
        return None, "no_evidence"
    if raw_path == "$.stats":
        stats = invocation.output.get("stats") if invocation else None
        return (stats if isinstance(stats, dict) else None), "stats"
    matched = ITEM_PATH.match(raw_path)
    if matched is None:
        return None, "other"
    array, index = matched.group(1), int(matched.group(2))
    items = invocation.output.get(array) if invocation else None
    if isinstance(items, list) and index < len(items) and isinstance(items[index], dict):
        return items[index], array
    return None, array


def _source(item: dict[str, Any] | None) -> str | None:
    source = item.get("source") if item else None
    if isinstance(source, dict) and source.get("path"):
        return f"{source['path']}:{source['line']}" if source.get("line") is not None else str(source["path"])
    if isinstance(source, dict) and source:  # Loki: stream labels
        return ", ".join(f"{key}={value}" for key, value in sorted(source.items()))
    return None


def _item_time(item: dict[str, Any] | None, kind: str) -> str | None:
    if not item:
        return None
    keys = {"logs": ("timestamp",), "alerts": ("active_at", "starts_at"), "patterns": ("first",)}.get(kind, ())
    return next((str(item[key]) for key in keys if item.get(key)), None)


def _chart(item: dict[str, Any], excerpt: str) -> SeriesChart:
    found = parse_range_text(item["range"]) if item.get("range") else None
    samples = [(float(time), float(value)) for time, value in item.get("samples") or []]
    marked = [
        (key, str(item[f"{key}_at"]), float(item[key]))
        for key in ("min", "max", "last")
        if f"{key}=" in excerpt and item.get(key) is not None and item.get(f"{key}_at")
    ]
    return SeriesChart(
        service=str(item.get("service") or ""),
        metric=str(item.get("metric") or ""),
        unit=str(item.get("unit") or ""),
        start=found.start.isoformat() if found and found.start else None,
        end=found.end.isoformat() if found and found.end else None,
        points=int(item.get("points") or len(samples)),
        samples=samples,
        marked=marked,
    )


def _incident_zone(invocations: list[ToolInvocation]) -> tzinfo | None:
    """The zone of the environment's clock: that of the first range a tool searched."""
    for invocation in invocations:
        searched = invocation.output.get("searched_range") or (
            invocation.retrieval_details.range if invocation.retrieval_details else None
        )
        if isinstance(searched, str) and searched:
            found = parse_range_text(searched)
            moment = found.start or found.end
            if moment is not None:
                return moment.tzinfo
    return None


def _timeline(citations: list[Citation], zone: tzinfo | None) -> list[TimelineEntry]:
    """Cited log lines and alerts in time order, on the incident's clock; a ref cited twice is one entry."""
    entries: dict[tuple[int | None, str], TimelineEntry] = {}
    moments: dict[tuple[int | None, str], datetime] = {}
    for citation in citations:
        for evidence in citation.evidence:
            key = (evidence.invocation_id, evidence.raw_path)
            if evidence.kind not in ("logs", "alerts") or evidence.time is None:
                continue
            if key in entries:
                entries[key].citations.append(citation.number)
                continue
            moment = aware_time(evidence.time)
            if moment is None:
                continue
            shown = moment.astimezone(zone) if zone is not None else moment
            moments[key] = moment
            entries[key] = TimelineEntry(
                time=shown.isoformat(),
                kind="log" if evidence.kind == "logs" else "alert",
                text=evidence.line or evidence.ref_text or evidence.excerpt,
                citations=[citation.number],
                anchor=evidence.anchor,
            )
    return [entries[key] for key in sorted(entries, key=lambda key: moments[key])]


def _invocation_view(invocation: ToolInvocation) -> InvocationView:
    details = invocation.retrieval_details
    extra = details.model_extra or {} if details else {}
    return InvocationView(
        invocation_id=invocation.invocation_id,
        tool_name=invocation.tool_name,
        params=", ".join(f"{key}={value!r}" for key, value in sorted(invocation.input_params.items())),
        status=details.evidence_status if details else ("ok" if invocation.success else "failed"),
        service=details.service if details else None,
        range=details.range if details else None,
        range_origin=details.range_origin if details else None,
        keywords=list(details.keywords) if details else [],
        level=str(extra["level"]) if extra.get("level") else None,
        truncated=details.truncated if details else False,
        error=invocation.error_message,
        duration_ms=invocation.duration_ms,
    )


def _gate_view(seq: int, round: int, created_at: str, result: GateResult) -> GateView:
    return GateView(
        seq=seq,
        round=round,
        created_at=created_at,
        status=result.status,
        severity=result.severity.value,
        rule_set_version=result.rule_set_version,
        failed_rules=list(result.failed_rules),
        findings=[
            FindingView(
                rule=finding.rule,
                severity=finding.severity,
                message=finding.message,
                asked=finding.asked,
                searched=finding.searched,
            )
            for finding in result.errors
        ],
    )


def _claim_check(check: dict[str, Any]) -> ClaimCheck:
    return ClaimCheck(
        claim_id=str(check.get("claim_id")),
        verification=str(check.get("verification")),
        is_critical=bool(check.get("is_critical")),
        note=str(check.get("note") or ""),
    )


def _asked(document: SessionDocument) -> list[tuple[str, str]]:
    scope = document.run.config.scope
    if scope is None:
        return []
    from evcli.scope.describe import describe

    return describe(scope)
