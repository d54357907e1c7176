"""Comparing models: the packaged questions through the whole chain with a model in some roles.

The questions are diagnosis cases (`evcli.evals.cases`: the shipped suites, or a case file), each
run in its own session of one trace store, with the model in the chosen roles and the offline
engine in the others. Per question the report gives the verdict (the chain's effective verdict,
capped by the gate), the claims the Gatekeeper rejected and how many of them were honest
(`evcli.evals.rejections` says how that is counted and its limits), the case's expected facts
(`must_cite`) the answer cites, and per model role the requests, prompt and completion tokens (as
the provider's usage reports them), characters sent and seconds spent in model calls; then totals.

What is metered is every request a role's engine made (a stage's repair request and technical
retry included; the litellm adapter's own retries of a 429 or 5xx inside one request are not
counted apart). Characters sent are those of the request's messages (contents and tool-call
arguments, as `evcli.agents.llm.build_messages` writes them) and of its tool schemas as compact
JSON: the response schema a provider may be sent is not counted. A follow-up case's numbers include
the question it follows. Importing the model client is timed apart (`startup_seconds`), before the
first question.

A model that is not set up fails before any question (a missing key, a local server nobody answers
at: `Models.check`); one whose every request of the first question that used it failed stops the
run with that error instead of failing every question the same way.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evcli.agents.engine import Engine, EngineError, EngineReply, RoleRequest
from evcli.agents.roles import Models, build_engines
from evcli.contracts import ROLES, Severity, Verdict
from evcli.core.errors import BadInput, EvcliError
from evcli.evals.cases import DiagnosisCase, cites, failed_expectations, load_cases
from evcli.evals.rejections import rejected_claims
from evcli.gatekeeper.rules import RuleSet
from evcli.pipeline import Pipeline
from evcli.store.db import TraceStore

Progress = Callable[[dict[str, Any]], None]
METERED = ("requests", "failed_requests", "prompt_tokens", "completion_tokens", "characters_sent", "seconds")


class ModelFailed(EvcliError):
    """The model answered no request of the first question it was asked (exit 1)."""


# --- metering -----------------------------------------------------------------------------------


def request_characters(messages: Iterable[dict[str, Any]], tools: Sequence[dict[str, Any]] | None) -> int:
    """Characters of a chat request: message texts, tool-call arguments, and the tool schemas as compact JSON."""
    total = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):  # content parts (a provider's cache markers)
            total += sum(len(str(part.get("text") or "")) for part in content if isinstance(part, dict))
        for call in message.get("tool_calls") or []:
            total += len(str((call.get("function") or {}).get("arguments") or ""))
    if tools:
        total += len(json.dumps(list(tools), ensure_ascii=False, separators=(",", ":")))
    return total


@dataclass
class RoleMeter:
    """What one role's model calls of one question cost."""

    model: str
    requests: int = 0
    failed_requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    characters_sent: int = 0
    seconds: float = 0.0
    first_error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return (
            {"model": self.model}
            | {name: getattr(self, name) for name in METERED}
            | {"seconds": round(self.seconds, 3)}
        )


@dataclass
class MeteredEngine:
    """An engine whose every call is counted in `meter`; replies and errors pass through unchanged."""

    engine: Engine
    meter: RoleMeter
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = self.engine.name

    def complete(self, request: RoleRequest) -> EngineReply:
        from evcli.agents.llm import build_messages  # imports no litellm

        self.meter.requests += 1
        self.meter.characters_sent += request_characters(build_messages(request), request.tools)
        started = time.perf_counter()
        try:
            reply = self.engine.complete(request)
        except EngineError as exc:
            self.meter.failed_requests += 1
            self.meter.first_error = self.meter.first_error or exc.message
            raise
        finally:
            self.meter.seconds += time.perf_counter() - started
        self.meter.prompt_tokens += reply.usage.prompt_tokens
        self.meter.completion_tokens += reply.usage.completion_tokens
        return reply


# --- choosing the questions -----------------------------------------------------------------------


def model_roles(text: str | None) -> tuple[str, ...]:
    """`planner,executor` as roles in chain order; None or empty: every role."""
    if not text or not text.strip():
        return ROLES
    named = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in named if name not in ROLES]
    if unknown or not named:
        raise BadInput(f"--roles takes roles from {', '.join(ROLES)}, separated by commas; got {text!r}")
    return tuple(role for role in ROLES if role in named)


def role_models(model: str, roles: Sequence[str], api_base: str | None) -> Models:
    """`model` in `roles`, the offline engine in the others."""
    return Models(default="offline", per_role=dict.fromkeys(roles, model), api_base=api_base)


def select_cases(path: Path | None, env: str | None = None, ids: Sequence[str] = ()) -> list[DiagnosisCase]:
    """The cases of `path` (default: the shipped suites), only those of environment `env` and of `ids` when given."""
    cases = load_cases(path)
    if env is not None:
        envs = sorted({case.env for case in cases})
        cases = [case for case in cases if case.env == env]
        if not cases:
            raise BadInput(f"no question of environment {env!r}; the questions' environments: {', '.join(envs)}")
    if ids:
        known = {case.id for case in cases}
        unknown = [case_id for case_id in ids if case_id not in known]
        if unknown:
            raise BadInput(f"no question with id {', '.join(map(repr, unknown))} (see `evcli eval model --json`)")
        cases = [case for case in cases if case.id in ids]
    return cases


# --- running ----------------------------------------------------------------------------------------


def run_models(
    cases: list[DiagnosisCase],
    *,
    rules: RuleSet,
    models: Models,
    db_path: Path | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Every case through the chain with `models`, in a store at `db_path`, else in a temporary one."""
    engines = build_engines(models)  # a missing key or a server nobody answers at fails here, before any question
    started = time.perf_counter()
    startup = _load_model_client(models)
    results: list[dict[str, Any]] = []
    answered = False
    with tempfile.TemporaryDirectory(prefix="evcli-eval-model-") as scratch:
        with TraceStore(db_path or Path(scratch) / "eval.db") as store:
            for case in cases:
                result, meters = run_question(case, store, rules, models, engines)
                _stop_unless_answered(case, meters, answered)
                answered = answered or any(m.requests > m.failed_requests for m in meters.values())
                results.append(result)
                if progress is not None:
                    progress(result)
    return {
        "suite": sorted({str(case.source) for case in cases}),
        "models": models.as_config(),
        "roles": [role for role in ROLES if models.for_role(role) != "offline"],
        "rule_set_version": rules.version,
        "db": str(db_path) if db_path else None,
        "startup_seconds": startup,
        "questions": results,
        "totals": totals(results, seconds=time.perf_counter() - started),
    }


def _load_model_client(models: Models) -> float:
    """Seconds spent importing the model client (litellm) before the first question, so that question's time
    is comparable with the others'; 0 when every role is offline."""
    if all(models.for_role(role) == "offline" for role in ROLES):
        return 0.0
    from evcli.agents.llm import _litellm  # the adapter's own cached import

    started = time.perf_counter()
    _litellm()
    return round(time.perf_counter() - started, 3)


def _stop_unless_answered(case: DiagnosisCase, meters: dict[str, RoleMeter], answered: bool) -> None:
    """Stop the run when no request has been answered yet and this question's all failed."""
    failed = [meter for meter in meters.values() if meter.failed_requests]
    if answered or not failed or any(meter.requests > meter.failed_requests for meter in meters.values()):
        return
    raise ModelFailed(
        f"the model answered no request of the first question ({case.id}): {failed[0].first_error}",
        hint="check --model, --api-base and the provider's key; the other questions were not run",
    )


def run_question(
    case: DiagnosisCase, store: TraceStore, rules: RuleSet, models: Models, engines: dict[str, Engine]
) -> tuple[dict[str, Any], dict[str, RoleMeter]]:
    """One case in its own session(s) of `store`: its report row and what each model role's calls cost."""
    from evcli.evals.cases import _diagnose  # runs a question, a follow-up or an alert as `eval cases` does

    meters = {role: RoleMeter(models.for_role(role)) for role in ROLES if models.for_role(role) != "offline"}
    metered = {
        role: MeteredEngine(engine, meters[role]) if role in meters else engine for role, engine in engines.items()
    }
    started = time.perf_counter()
    reports: list[dict[str, Any]] = []
    error = None
    try:
        if case.skip is None:
            pipeline = Pipeline(store=store, rules=rules, models=models, env_spec=case.env_spec(), _engines=metered)
            reports = _diagnose(case, pipeline)
    except EvcliError as exc:
        error = exc.message
    except Exception as exc:  # an eval reports what broke and goes on with the next question
        error = f"unexpected {type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - started
    return _row(case, store, rules, reports, error, meters, seconds), meters


def _row(
    case: DiagnosisCase,
    store: TraceStore,
    rules: RuleSet,
    reports: list[dict[str, Any]],
    error: str | None,
    meters: dict[str, RoleMeter],
    seconds: float,
) -> dict[str, Any]:
    rejections = [claim for report in reports for claim in rejected_claims(store.load(report["session_id"]), rules)]
    facts = [
        {
            "tool": fact.tool,
            "text": fact.text,
            "cited": bool(reports) and all(cites(report, fact) for report in reports),
        }
        for fact in case.must_cite
    ]
    roles = {role: meter.as_json() for role, meter in meters.items()}
    return {
        "id": case.id,
        "env": case.env,
        "question": case.question if case.question is not None else f"alert payload {case.alert}",
        "skipped": case.skip,
        "error": error,
        "verdict": max((Verdict(report["verdict"]) for report in reports), default=None),
        "gate_severity": max((Severity(report["gate"]["severity"]) for report in reports), default=None),
        "session_ids": [report["session_id"] for report in reports],
        "claims": sum(len(report["claims"]) for report in reports),
        "rejected_claims": len(rejections),
        "honest_rejected": sum(claim.honest for claim in rejections),
        "rejections": [claim.as_json() for claim in rejections],
        "facts_expected": len(facts),
        "facts_cited": sum(fact["cited"] for fact in facts),
        "expected_facts": facts,
        "failures": ([f"error: {error}"] if error else [])
        + [failure for report in reports for failure in failed_expectations(case, report)],
        "roles": roles,
        **{name: _sum(roles.values(), name) for name in METERED if name != "seconds"},
        "seconds": round(seconds, 3),
    }


def _sum(rows: Iterable[dict[str, Any]], key: str) -> Any:
    return sum(row[key] for row in rows)


def totals(results: list[dict[str, Any]], *, seconds: float) -> dict[str, Any]:
    """Sums over the questions; the pass rate is the share of the questions run whose verdict is PASS."""
    ran = [result for result in results if result["skipped"] is None]
    verdicts = {verdict.value: sum(result["verdict"] == verdict for result in ran) for verdict in Verdict}
    roles: dict[str, dict[str, Any]] = {}
    for result in ran:
        for role, row in result["roles"].items():
            summed = roles.setdefault(role, {"model": row["model"]} | dict.fromkeys(METERED, 0))
            for name in METERED:
                summed[name] += row[name]
    for summed in roles.values():
        summed["seconds"] = round(summed["seconds"], 3)
    return {
        "questions": len(results),
        "skipped": len(results) - len(ran),
        "errors": sum(result["error"] is not None for result in ran),
        "verdicts": verdicts,
        "pass_rate": round(verdicts[Verdict.PASS.value] / len(ran), 4) if ran else None,
        "rejected_claims": _sum(ran, "rejected_claims"),
        "honest_rejected": _sum(ran, "honest_rejected"),
        "facts_expected": _sum(ran, "facts_expected"),
        "facts_cited": _sum(ran, "facts_cited"),
        "roles": roles,
        **{name: _sum(ran, name) for name in METERED if name != "seconds"},
        "seconds": round(seconds, 3),
    }
