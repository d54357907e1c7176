"""`evcli eval incidents`: root-cause accuracy on generated incidents with known causes.

Each seed of the split is written as a snapshot (evcli.evals.incidents) into a scratch directory and
each of its questions is asked through the whole chain. The answer's ranking is its root-cause
claims in order, each bound to a `find_changes` `$.suspects[i]` whose service and fault kind are
read from the recorded invocation. Measured per question:
  - AS@1 / AS@3: the true root cause is the first / among the first three suspects stated;
  - kind: the first suspect's fault kind is the injected one (counted where AS@1 holds);
  - certain: a root cause stated as certain (a root_cause claim not marked indirect, or an answer
    saying the cause is confirmed) — must be 0.
The held-out split is reported apart and never used for tuning. `each_question` (writing the seeds'
incidents and a pipeline on each) is shared with the trace questions' suite (evcli.evals.trace_suite).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from evcli.agents.roles import Models
from evcli.core.errors import EvcliError
from evcli.gatekeeper.rules import RuleSet
from evcli.pipeline import Pipeline
from evcli.store.db import TraceStore

CERTAIN_PHRASES = (
    "the root cause is confirmed",
    "confirmed root cause",
    "definitely caused",
    "根因已确认",
    "确定是根因",
)

Progress = Callable[[dict[str, Any]], None]


def ranking(document: Any, claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The suspects the answer's root-cause claims cite, in the answer's order, then the others of the
    ranking they cite (the answer shows it as their evidence)."""
    outputs = {invocation.invocation_id: invocation.output for invocation in document.invocations}
    ranked: list[dict[str, Any]] = []
    cited: list[dict[str, Any]] = []
    for claim in claims:
        if claim.get("claim_type") != "root_cause":
            continue
        for evidence in claim.get("evidence") or []:
            path = str(evidence.get("raw_path") or "")
            if evidence.get("tool_name") != "find_changes" or not path.startswith("$.suspects["):
                continue
            suspects = (outputs.get(evidence.get("source_invocation_id")) or {}).get("suspects") or []
            index = int(path[len("$.suspects[") : -1])
            if 0 <= index < len(suspects) and suspects[index] not in ranked:
                ranked.append(suspects[index])
                cited = cited or suspects
    # then the rest of the ranking the answer cites, in its order
    return ranked + [suspect for suspect in cited if suspect not in ranked]


def _certain(report: dict[str, Any], document: Any) -> bool:
    text = str(report.get("answer", {}).get("user_facing_answer") or "").lower()
    executor = [o for o in document.stage_outputs if o.stage == "execute"]
    stated = [c for o in executor for c in (o.output or {}).get("claims") or [] if c.get("claim_type") == "root_cause"]
    return any(phrase in text for phrase in CERTAIN_PHRASES) or any(
        c.get("support_level") != "indirect" for c in stated
    )


def answered(pipeline: Pipeline, store: TraceStore, text: str) -> tuple[dict[str, Any], Any]:
    """The answer to one question through the whole chain and its stored session (EvcliError when the chain fails)."""
    report = pipeline.ask(text).model_dump(mode="json")
    return report, store.load(report["session_id"])


def run_question(pipeline: Pipeline, store: TraceStore, question: Any, truth: Any) -> dict[str, Any]:
    started = time.perf_counter()
    result: dict[str, Any] = {"incident": truth.id, "question": question.text, "language": question.language}
    result.update(truth=truth.root_cause, fault=truth.fault_kind, names_time=question.names_time)
    try:
        report, document = answered(pipeline, store, question.text)
    except EvcliError as error:
        return result | {"error": error.message, "ranked": [], "as1": False, "as3": False, "kind": False}
    ranked = ranking(document, report.get("claims") or [])
    services = [str(item.get("service")) for item in ranked]
    first = ranked[0] if ranked else {}
    return result | {
        "error": None,
        "session_id": report["session_id"],
        "verdict": report["verdict"],
        "ranked": services[:3],
        "stated_fault": first.get("fault"),
        "as1": services[:1] == [truth.root_cause],
        "as3": truth.root_cause in services[:3],
        "kind": services[:1] == [truth.root_cause] and first.get("fault") == truth.fault_kind,
        "certain": _certain(report, document),
        "seconds": round(time.perf_counter() - started, 3),
    }


Asked = tuple[Pipeline, TraceStore, Any, Any]  # (pipeline on the incident's snapshot, store, incident, question)


def each_question(
    seeds: list[int], *, rules: RuleSet, models: Models, questions_of: Callable[[Any], Sequence[Any]]
) -> Iterator[Asked]:
    """Every seed's incident written into one scratch directory, and each of its `questions_of(incident)`
    with a pipeline on its snapshot; the directory and store last while the iteration runs."""
    from evcli.evals import incidents

    with tempfile.TemporaryDirectory(prefix="evcli-incidents-") as scratch:
        root = Path(scratch)
        with TraceStore(root / "eval.db") as store:
            for seed in seeds:
                truth = incidents.generate(seed, root / f"inc-{seed:04d}")
                asked = questions_of(truth)
                if not asked:
                    continue
                env = {"env_dir": str(root / f"inc-{seed:04d}")}
                pipeline = Pipeline(store=store, rules=rules, models=models, env_spec=env)
                for question in asked:
                    yield pipeline, store, truth, question


def run_incidents(
    seeds: list[int], *, rules: RuleSet, models: Models, progress: Progress | None = None, questions: int | None = None
) -> dict[str, Any]:
    """Generate and ask every seed's incident; the totals per split and per language."""
    from evcli.evals.incidents import split_of

    started = time.perf_counter()
    results: list[dict[str, Any]] = []
    for pipeline, store, truth, question in each_question(
        seeds, rules=rules, models=models, questions_of=lambda truth: truth.questions[:questions]
    ):
        result = run_question(pipeline, store, question, truth) | {"split": split_of(truth.seed)}
        results.append(result)
        if progress is not None:
            progress(result)
    return {
        "seeds": seeds,
        "results": results,
        "totals": totals(results),
        "by_split": {split: totals([r for r in results if r["split"] == split]) for split in ("tune", "holdout")},
        "by_language": {lang: totals([r for r in results if r["language"] == lang]) for lang in ("en", "zh")},
        "by_fault": {
            fault: totals([r for r in results if r["fault"] == fault])
            for fault in sorted({r["fault"] for r in results})
        },
        "seconds": round(time.perf_counter() - started, 3),
    }


def totals(results: list[dict[str, Any]]) -> dict[str, Any]:
    count = len(results)

    def rate(key: str) -> float | None:
        return round(sum(bool(r.get(key)) for r in results) / count, 4) if count else None

    return {
        "questions": count,
        "incidents": len({r["incident"] for r in results}),
        "as1": rate("as1"),
        "as3": rate("as3"),
        "kind": rate("kind"),
        "certain": sum(bool(r.get("certain")) for r in results),
        "errors": sum(r.get("error") is not None for r in results),
    }
