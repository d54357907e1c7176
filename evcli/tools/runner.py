"""Running one evidence tool call: validate, guard, fetch, cap, mask, cite.

`run_tool` returns a `ToolInvocation` ready to be recorded (the store assigns
its per-session id). What a model is later shown of it is exactly
`retrieval_details.evidence_refs`: one ref per array item, or `$.no_evidence`
when a successful, untruncated query found nothing. A backend that fails gives
`evidence_status: failed` and no refs — never a fake "no evidence".

A call's timeout is real: the fetch runs under a deadline that every snapshot
read checks (`evcli.backends.files`), so at the timeout the work stops, the
invocation is recorded failed ("timed out after 15s"), and the worker is a
daemon thread, so even a backend that never checks cannot keep the process alive.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evcli.backends.base import BackendError, EvidenceBackend, LogQuery, parse_window
from evcli.backends.files import Deadline, DeadlineExceeded, deadline_scope
from evcli.contracts import RetrievalDetails, ToolInvocation
from evcli.errors import BadInput
from evcli.tools import guards, refs
from evcli.tools.params import LookupKnowledgeParams, QueryLogsParams, QueryMetricsParams, validate_params
from evcli.tools.redaction import Redactor

TRUNCATION_MARK = " …[truncated]"
TIMEOUT_ENV = "EVCLI_TOOL_TIMEOUT_S"
_STOP_GRACE_S = 1.0  # how long a timed-out worker gets to reach its next deadline check
_RELEVANCE_ORDER = ("PRECISE", "HIGHLY_RELEVANT", "REFERENCE")


@dataclass(frozen=True)
class ToolSettings:
    timeout_s: float = 15.0
    max_calls_per_tool: int = 8
    max_items: int = 100  # alerts + series per call
    max_text_chars: int = 2000  # per string field of an item

    @classmethod
    def from_env(cls) -> ToolSettings:
        """The defaults, with the per-call timeout from $EVCLI_TOOL_TIMEOUT_S (seconds) when set."""
        raw = os.environ.get(TIMEOUT_ENV, "").strip()
        if not raw:
            return cls()
        try:
            seconds = float(raw)
        except ValueError:
            seconds = math.nan
        if not (math.isfinite(seconds) and seconds > 0):
            raise BadInput(f"${TIMEOUT_ENV} must be a positive number of seconds, got {raw!r}")
        return cls(timeout_s=seconds)


@dataclass
class ToolEnvironment:
    """Where evidence comes from for one run."""

    backend: EvidenceBackend
    knowledge_dir: Path | None
    open_knowledge: Callable[[], Any]  # -> evcli.kb.index.KnowledgeIndex, opened on first use
    redactor: Redactor = field(default_factory=Redactor)
    settings: ToolSettings = field(default_factory=ToolSettings)


@dataclass(frozen=True)
class SessionView:
    """What the guards need to know of the session the call belongs to."""

    invocations: list[ToolInvocation] = field(default_factory=list)
    narrow: bool = False


class _Outcome:
    def __init__(self, output: dict[str, Any], scope: dict[str, Any]) -> None:
        self.output = output
        self.scope = scope
        self.dedup_reason: str | None = None
        self.unknown_service = False


def run_tool(
    tool_name: str, raw_params: dict[str, Any], env: ToolEnvironment, session: SessionView | None = None
) -> ToolInvocation:
    session = session or SessionView()
    params = validate_params(tool_name, raw_params)
    input_params = env.redactor.mask(params.model_dump(exclude_none=True, exclude_defaults=False))

    guards.check_call_cap(tool_name, session.invocations, env.settings.max_calls_per_tool)
    guards.check_repeat(tool_name, input_params, session.invocations)
    if session.narrow:
        guards.check_narrow_widening(tool_name, input_params, session.invocations)

    started = time.perf_counter()
    created_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    try:
        outcome = _with_timeout(lambda: _fetch(tool_name, params, env, session), env.settings.timeout_s)
    except (BackendError, TimeoutError) as exc:
        message = env.redactor.mask_text(str(exc) or type(exc).__name__)
        return ToolInvocation(
            invocation_id=0,
            tool_name=tool_name,
            input_params=input_params,
            output={"error": message},
            output_preview=message[:300],
            retrieval_details=RetrievalDetails(
                evidence_status="failed", evidence_refs=[], **env.redactor.mask(_scope(params))
            ),
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
            success=False,
            error_message=message,
            created_at=created_at,
        )

    output = env.redactor.mask(outcome.output)
    scope = env.redactor.mask(outcome.scope)  # query text can carry a secret too
    truncated = _cap_text(output, env.settings.max_text_chars) or bool(output.get("truncated"))
    output["truncated"] = truncated
    status, evidence_refs = refs.evidence(tool_name, output, scope, dedup_reason=outcome.dedup_reason)

    details = RetrievalDetails(
        evidence_status=status,
        evidence_refs=evidence_refs,
        truncated=truncated,
        **scope,
        **({"unknown_service": True} if outcome.unknown_service else {}),
    )

    return ToolInvocation(
        invocation_id=0,
        tool_name=tool_name,
        input_params=input_params,
        output=output,
        output_preview=json.dumps(output, ensure_ascii=False, separators=(",", ":"))[:300],
        retrieval_details=details,
        relevance_level=_best_relevance(output.get("evidence_blocks") or []),
        dedup_reason=outcome.dedup_reason,
        duration_ms=round((time.perf_counter() - started) * 1000, 1),
        success=True,
        created_at=created_at,
    )


def stored_guards(invocation: ToolInvocation, settings: ToolSettings) -> Callable[[list[ToolInvocation]], None]:
    """The guards that depend on what a session holds, for the store to re-run inside the write
    that records `invocation` (`TraceStore.record_invocation(check=...)`): calls that each loaded
    the session before the others were stored cannot pass the cap or repeat one another."""

    def check(stored: list[ToolInvocation]) -> None:
        guards.check_call_cap(invocation.tool_name, stored, settings.max_calls_per_tool)
        guards.check_repeat(invocation.tool_name, invocation.input_params, stored)

    return check


def _with_timeout(call: Callable[[], _Outcome], timeout_s: float) -> _Outcome:
    """`call()` in a daemon worker under a deadline; TimeoutError once it passes. The deadline is
    cancelled whichever way this returns (a Ctrl-C too), so the worker stops at its next check."""
    deadline = Deadline(timeout_s)
    done: dict[str, Any] = {}

    def work() -> None:
        try:
            with deadline_scope(deadline):
                done["outcome"] = call()
        except BaseException as exc:  # handed to the caller below
            done["error"] = exc

    worker = threading.Thread(target=work, name="evcli-tool", daemon=True)
    worker.start()
    try:
        worker.join(timeout_s)
    finally:
        deadline.cancel()
    if worker.is_alive():
        worker.join(_STOP_GRACE_S)  # not left running beside the next call
        raise TimeoutError(f"timed out after {timeout_s:g}s")
    error = done.get("error")
    if isinstance(error, DeadlineExceeded):
        raise TimeoutError(str(error)) from error
    if error is not None:
        raise error
    return done["outcome"]


def _scope(params) -> dict[str, Any]:
    scope: dict[str, Any] = {}
    for key in ("service", "window", "limit"):
        if getattr(params, key, None) is not None:
            scope[key] = getattr(params, key)
    if isinstance(params, QueryLogsParams):
        scope["keywords"] = list(params.keywords)
        if params.level:
            scope["level"] = params.level
    if isinstance(params, QueryMetricsParams):
        scope["keywords"] = [value for value in (params.alertname, params.metric) if value]
    if isinstance(params, LookupKnowledgeParams):
        scope["keywords"] = params.query.split()
    return scope


def _fetch(tool_name: str, params, env: ToolEnvironment, session: SessionView) -> _Outcome:
    if tool_name == "query_logs":
        return _query_logs(params, env)
    if tool_name == "query_metrics":
        return _query_metrics(params, env)
    return _lookup_knowledge(params, env, session)


def _unknown_service(service: str | None, backend: EvidenceBackend) -> tuple[str | None, str | None]:
    """(service to query, message) — message set when the backend does not know the service."""
    if not service:
        return service, None
    resolve = getattr(backend, "resolve_service", None)
    if resolve is not None:
        resolved = resolve(service)
        if resolved is not None:
            return resolved, None
    else:
        known = backend.known_services()
        if known is None or service in known:
            return service, None
    close = getattr(backend, "close_matches", None)
    suggestions = close(service) if close else []
    hint = f"; similar services: {', '.join(suggestions)}" if suggestions else ""
    return None, f"unknown service '{service}'{hint}"


def _query_logs(params: QueryLogsParams, env: ToolEnvironment) -> _Outcome:
    scope = _scope(params)
    service, unknown = _unknown_service(params.service, env.backend)
    if unknown:
        outcome = _Outcome({"logs": [], "total": 0, "truncated": False, "message": unknown}, scope)
        outcome.unknown_service = True
        return outcome
    window = parse_window(params.window, env.backend.now())
    result = env.backend.query_logs(
        LogQuery(service=service, keywords=params.keywords, level=params.level, window=window, limit=params.limit)
    )
    output = {"logs": result.logs, "total": result.total, "truncated": result.truncated, "message": result.message}
    return _Outcome(output, scope)


def _query_metrics(params: QueryMetricsParams, env: ToolEnvironment) -> _Outcome:
    scope = _scope(params)
    service, unknown = _unknown_service(params.service, env.backend)
    if unknown:
        outcome = _Outcome({"alerts": [], "series": [], "total": 0, "truncated": False, "message": unknown}, scope)
        outcome.unknown_service = True
        return outcome
    window = parse_window(params.window, env.backend.now())
    result = env.backend.query_metrics(service=service, alertname=params.alertname, metric=params.metric, window=window)
    items = len(result.alerts) + len(result.series)
    cap = env.settings.max_items
    alerts = result.alerts[:cap]
    series = result.series[: max(0, cap - len(alerts))]
    output = {
        "alerts": alerts,
        "series": series,
        "total": items,
        "truncated": items > cap,
        "message": result.message or f"{len(result.alerts)} alerts, {len(result.series)} series",
    }
    return _Outcome(output, scope)


def _lookup_knowledge(params: LookupKnowledgeParams, env: ToolEnvironment, session: SessionView) -> _Outcome:
    scope = _scope(params)
    scope["limit"] = params.limit
    index = env.open_knowledge()
    try:
        if env.knowledge_dir is not None:
            index.index_dir(env.knowledge_dir)  # a no-op when nothing changed
    except BadInput as exc:  # e.g. a snapshot without runbooks: nothing to search is not "found nothing"
        raise BackendError(exc.message) from exc
    found = index.search(
        params.query, limit=params.limit, alertname=params.alertname, service=params.service, directory=env.knowledge_dir
    )
    # Compare blocks as they were stored (masked, capped) so a repeat is recognised.
    prepared = env.redactor.mask({"evidence_blocks": [_block_dict(block) for block in found]})
    _cap_text(prepared, env.settings.max_text_chars)
    blocks = prepared["evidence_blocks"]
    already = _returned_blocks(session.invocations)
    fresh, repeated = [], []
    for block in blocks:
        key = (block.get("doc"), block.get("heading"), block.get("text"))
        (repeated if key in already else fresh).append((block, already.get(key)))
    output = {
        "evidence_blocks": [block for block, _ in fresh],
        "total": len(blocks),
        "truncated": False,
        "message": f"{len(fresh)} blocks" + (f", {len(repeated)} already returned in this session" if repeated else ""),
        "layers": {"L0": sum(b.get("layer") == "L0" for b in blocks), "L1": sum(b.get("layer") == "L1" for b in blocks)},
    }
    outcome = _Outcome(output, scope)
    if repeated:
        outcome.dedup_reason = "; ".join(
            f"{block.get('doc')} › {block.get('heading')} already returned by invocation #{invocation_id}"
            for block, invocation_id in repeated
        )
    return outcome


def _block_dict(block: Any) -> dict[str, Any]:
    data = block.model_dump() if hasattr(block, "model_dump") else block.as_dict()
    data.pop("directory", None)  # where the index found it; not evidence
    return data


def _returned_blocks(invocations: list[ToolInvocation]) -> dict[tuple, int]:
    returned = {}
    for invocation in invocations:
        if invocation.tool_name == "lookup_knowledge":
            for block in invocation.output.get("evidence_blocks") or []:
                returned.setdefault((block.get("doc"), block.get("heading"), block.get("text")), invocation.invocation_id)
    return returned


def _best_relevance(blocks: list[dict[str, Any]]) -> str | None:
    levels = [block.get("relevance_level") for block in blocks if block.get("relevance_level") in _RELEVANCE_ORDER]
    return min(levels, key=_RELEVANCE_ORDER.index) if levels else None


def _cap_text(output: dict[str, Any], limit: int) -> bool:
    """Shorten over-long strings of evidence items in place; True if any was cut."""
    cut = False
    for array in ("alerts", "series", "logs", "evidence_blocks"):
        for item in output.get(array) or []:
            for key, value in item.items():
                if isinstance(value, str) and len(value) > limit:
                    item[key] = value[:limit] + TRUNCATION_MARK
                    cut = True
    return cut
