"""Scope mutations: a session that searched something other than what was asked must be caught.

The bases are sessions made on the host environment (evcli/envs/host) with a question scope:
their invocations are real tool calls run there (`host_bases`), their claims cite them. Each
mutation makes what was searched miss what was asked (range shifted, phrase dropped from the
search, level narrowed, count claim removed, service swapped, alert state narrowed, negative
widened) and names the `scope.*` rule that must catch it; benign variants (a wider searched
range, an extra search, WARN searched when ERROR was asked) must still pass. A base without a
scope (recorded before issue 10) yields no case. The host bases are annotated `scope_base`:
only the scope classes run on them (the citation classes are measured on the shipped samples).
"""

from __future__ import annotations

import copy
from datetime import timedelta
from pathlib import Path

from evcli.contracts import (
    AskedRange,
    Query,
    RunRecord,
    SessionConfig,
    SessionDocument,
    StageOutput,
    ToolInvocation,
)
from evcli.core.time import TimeRange, parse_range_text
from evcli.evals.mutations.base import Case

_RANGE = "2026-03-18T09:00:00+01:00..2026-03-18T09:30:00+01:00"


# --- the bases -------------------------------------------------------------------------------------


def _binding(invocation: ToolInvocation, raw_path: str, excerpt: str) -> dict:
    return {
        "source_type": "tool_trace",
        "source_id": "",
        "tool_name": invocation.tool_name,
        "source_invocation_id": invocation.invocation_id,
        "raw_path": raw_path,
        "evidence_excerpt": excerpt,
    }


def _claim(claim_id: str, claim_type: str, text: str, *bindings: dict) -> dict:
    return {
        "claim_id": claim_id,
        "claim_type": claim_type,
        "claim_text": text,
        "support_level": "direct",
        "evidence_bindings": list(bindings),
    }


def _document(session_id: str, question: str, scope: Query, invocations, claims) -> SessionDocument:
    output = {
        "answer_version": "executor_evidence_v2",
        "claims": claims,
        "hypotheses": [],
        "recommended_actions": [],
        "missing_info": [],
    }
    config = SessionConfig(task_scope=scope.task_scope, language=scope.language, scope=scope)
    run = RunRecord(
        session_id=session_id,
        question=question,
        status="executed",
        config=config,
        annotations={"sample": {"kind": "scope_base", "description": "host env session with a question scope"}},
    )
    return SessionDocument(
        run=run, invocations=invocations, stage_outputs=[StageOutput(stage="execute", output=output)]
    )


def _calls(env, *calls: tuple[str, dict]) -> list[ToolInvocation]:
    from evcli.tools.runner import run_tool

    return [
        run_tool(tool, params, env).model_copy(update={"invocation_id": index})
        for index, (tool, params) in enumerate(calls, start=1)
    ]


def _ref(invocation: ToolInvocation, raw_path: str) -> str:
    details = invocation.retrieval_details
    return next(ref.text for ref in (details.evidence_refs or []) if ref.raw_path == raw_path) if details else ""


def host_bases() -> list[SessionDocument]:
    """Two sessions on the host environment: a count of deploy logins in a range, and a narrow
    negative plus an alert's state."""
    from evcli.tools.context import build_environment

    env = build_environment(_host_dir())
    asked = AskedRange(text="between 09:00 and 09:30", range=_RANGE)
    logins = _calls(
        env,
        ("query_logs", {"service": "auth", "query": '"Accepted publickey"', "since": "09:00", "until": "09:30"}),
    )
    stats = _ref(logins[0], "$.stats")
    count = stats.split(" matching")[0].removeprefix("stats: ")
    login_scope = Query(
        services=["auth"], range=asked, phrases=["Accepted publickey"], wants_count=True, task_scope="narrow"
    )
    login_claims = [
        _claim(
            "c1",
            "observation",
            f"auth logged {count} matching lines for Accepted publickey",
            _binding(logins[0], "$.stats", f"stats: {count} matching lines"),
        ),
        _claim(
            "c2",
            "observation",
            "deploy logged in with Accepted publickey from 10.0.0.12",
            _binding(logins[0], "$.logs[0]", "Accepted publickey for deploy from 10.0.0.12"),
        ),
    ]
    negative = _calls(
        env,
        ("query_logs", {"service": "nginx", "query": "payments-v3", "since": "09:00", "until": "09:30"}),
        ("query_metrics", {"alertname": "ZooKeeperDown", "state": "any"}),
    )
    negative_scope = Query(
        services=["nginx"],
        range=asked,
        tokens=["payments-v3"],
        alertnames=["ZooKeeperDown"],
        alert_state="still_firing",
        task_scope="narrow",
    )
    negative_claims = [
        _claim(
            "c1",
            "negative_observation",
            "This query of nginx for payments-v3 found no matching evidence.",
            _binding(
                negative[0],
                "$.no_evidence",
                "query_logs returned no evidence; evidence_status=no_evidence; query=nginx payments-v3",
            ),
        ),
        _claim(
            "c2",
            "observation",
            "ZooKeeperDown is resolved",
            _binding(
                negative[1],
                "$.alerts[0]",
                "ZooKeeperDown, service=zookeeper, instance=web-01, severity=critical, state=resolved",
            ),
        ),
    ]
    return [
        _document(
            "host-scope-logins",
            'How many times did deploy log in on auth between 09:00 and 09:30? Search "Accepted publickey".',
            login_scope,
            logins,
            login_claims,
        ),
        _document(
            "host-scope-negative",
            "Did nginx log payments-v3 between 09:00 and 09:30, and is ZooKeeperDown still firing?",
            negative_scope,
            negative,
            negative_claims,
        ),
    ]


def _host_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "envs" / "host"


# --- helpers -----------------------------------------------------------------------------------------


def _scope(document: SessionDocument) -> Query | None:
    return document.run.config.scope


def _edit_params(document: SessionDocument, invocation_id: int, **changes) -> list[ToolInvocation]:
    """The invocations with one call's input params and recorded scope changed (None removes a key);
    its refs stay what its output renders (only the positive refs are cited here)."""
    edited = []
    for invocation in document.invocations:
        if invocation.invocation_id == invocation_id:
            params = {k: v for k, v in {**invocation.input_params, **changes}.items() if v is not None}
            details = invocation.retrieval_details
            extra = {k: v for k, v in changes.items() if k in ("level", "level_strict", "keywords")}
            details = details.model_copy(update=extra) if details is not None else None
            invocation = invocation.model_copy(update={"input_params": params, "retrieval_details": details})
        edited.append(invocation)
    return edited


def _log_search(document: SessionDocument, positive: bool = True) -> ToolInvocation | None:
    """The first query_logs call with hits (positive) or without."""
    for invocation in document.invocations:
        details = invocation.retrieval_details
        if invocation.tool_name == "query_logs" and details is not None:
            if (details.evidence_status == "supported") == positive:
                return invocation
    return None


def _shifted(text: str, by: timedelta) -> str:
    found = parse_range_text(text)
    assert found.start is not None and found.end is not None
    return TimeRange(found.start + by, found.end + by).text()


# --- mutations (each must be caught by its scope rule) ------------------------------------------------


def scope_range_shifted(document, output):
    scope = _scope(document)
    if scope is None or scope.range is None:
        return
    for hours in (1, -2):
        shifted = _shifted(scope.range.range, timedelta(hours=hours))
        asked = scope.range.model_copy(update={"range": shifted})
        yield Case(f"asked range shifted by {hours}h", output, scope=scope.model_copy(update={"range": asked}))


def scope_phrase_dropped(document, output):
    scope = _scope(document)
    search = _log_search(document)
    if scope is None or not scope.phrases or search is None:
        return
    invocations = _edit_params(document, search.invocation_id, query="publickey", keywords=["publickey"])
    yield Case(f"#{search.invocation_id} searched without the asked phrase", output, invocations)


def scope_level_narrowed(document, output):
    scope = _scope(document)
    search = _log_search(document)
    if scope is None or search is None:
        return
    for level in ("WARN", "ERROR"):
        invocations = _edit_params(document, search.invocation_id, level=level)
        yield Case(f"#{search.invocation_id} searched with level>={level}", output, invocations)


def scope_count_claim_removed(document, output):
    scope = _scope(document)
    if scope is None or not scope.wants_count:
        return
    mutated = copy.deepcopy(output)
    mutated["claims"] = [
        claim
        for claim in mutated["claims"]
        if not any(
            b.get("raw_path") == "$.stats" or str(b.get("raw_path")).startswith("$.patterns[")
            for b in claim["evidence_bindings"]
        )
    ]
    yield Case("count claim removed", mutated)


def scope_service_swapped(document, output):
    scope = _scope(document)
    if scope is None or not scope.services:
        return
    swapped = ["apache" if scope.services[0] != "apache" else "nginx"]
    yield Case(f"asked service {swapped[0]}", output, scope=scope.model_copy(update={"services": swapped}))


def scope_alert_state_narrowed(document, output):
    scope = _scope(document)
    if scope is None or scope.alert_state is None:
        return
    for invocation in document.invocations:
        if invocation.tool_name == "query_metrics" and invocation.input_params.get("state") == "any":
            invocations = _edit_params(document, invocation.invocation_id, state=None)
            yield Case(f"#{invocation.invocation_id} looked up active alerts only", output, invocations)


_WIDENINGS = (" at all", " anywhere", " ever", " today", "（从未出现）")


def scope_negative_widened(document, output):
    if _scope(document) is None:
        return
    for index, claim in enumerate(output.get("claims") or []):
        if claim.get("claim_type") != "negative_observation":
            continue
        for widening in _WIDENINGS:
            mutated = copy.deepcopy(output)
            text = mutated["claims"][index]["claim_text"].rstrip(".")
            mutated["claims"][index]["claim_text"] = text + widening + "."
            yield Case(f"{claim.get('claim_id')} widened with {widening.strip()!r}", mutated)


# --- benign variants (must pass) -----------------------------------------------------------------------


def benign_scope_wider_search(document, output):
    """The question asked a part of what was searched."""
    scope = _scope(document)
    if scope is None or scope.range is None:
        return
    found = parse_range_text(scope.range.range)
    assert found.start is not None and found.end is not None
    inner = TimeRange(found.start + timedelta(minutes=5), found.end - timedelta(minutes=5)).text()
    asked = scope.range.model_copy(update={"range": inner})
    yield Case("asked range inside the searched one", output, scope=scope.model_copy(update={"range": asked}))


def benign_scope_extra_search(document, output):
    """An extra, uncited search of another service."""
    scope = _scope(document)
    if scope is None or not document.invocations:
        return
    extra = document.invocations[0].model_copy(
        update={
            "invocation_id": max(i.invocation_id for i in document.invocations) + 1,
            "input_params": {**document.invocations[0].input_params, "service": "apache"},
        }
    )
    yield Case("an extra uncited search", output, [*document.invocations, extra])


def benign_scope_warn_when_error_asked(document, output):
    scope = _scope(document)
    search = _log_search(document)
    if scope is None or search is None:
        return
    invocations = _edit_params(document, search.invocation_id, level="WARN")
    yield Case(
        f"ERROR asked, #{search.invocation_id} searched WARN",
        output,
        invocations,
        scope=scope.model_copy(update={"levels": ["ERROR"]}),
    )
