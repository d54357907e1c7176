"""Run the gatekeeper fault-injection suite and report, per mutation class, what was caught.

The mutation classes live in `evcli.evals.mutations`; a base session is used only
if it passes the gatekeeper unmutated, so a miss is always the mutation's.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evcli.contracts import SessionDocument
from evcli.core.errors import BadInput
from evcli.evals.mutations import MUTATIONS
from evcli.evals.mutations.base import MutationClass
from evcli.gatekeeper.engine import gate
from evcli.gatekeeper.provenance import session_record
from evcli.gatekeeper.rules import RuleSet
from evcli.gatekeeper.service import session_services
from evcli.resources import data_path


@dataclass
class ClassReport:
    name: str
    benign: bool
    expected_severity: str
    expected_rule: str | None
    cases: int = 0
    caught: int = 0  # mutations: expected severity and rule; benign: passed
    observed_severity: Counter = field(default_factory=Counter)
    rules_fired: Counter = field(default_factory=Counter)
    misses: list[str] = field(default_factory=list)
    passed_gate: int = 0  # mutations the gate let through (severity none)
    answered: int = 0  # of those, a false claim in a PASS answer after replay --from gate

    def as_dict(self) -> dict[str, Any]:
        return {
            "class": self.name,
            "benign": self.benign,
            "expected_severity": self.expected_severity,
            "expected_rule": self.expected_rule,
            "cases": self.cases,
            "ok": self.caught,
            "rate": round(self.caught / self.cases, 4) if self.cases else None,
            "observed_severity": dict(sorted(self.observed_severity.items())),
            "rules_fired": dict(sorted(self.rules_fired.items())),
            "misses": self.misses[:10],
            "passed_gate": self.passed_gate,
            "false_in_pass_answer": self.answered,
        }


def load_base_sessions(directory: Path | None = None) -> list[SessionDocument]:
    """Sessions annotated as valid bases (the shipped sample_sessions by default), plus the
    scoped sessions made on the host environment that the scope classes mutate
    (evcli.evals.mutations.scope.host_bases)."""
    from evcli.store.documents import read_document

    directory = directory or data_path("sample_sessions")
    documents = [read_document(path) for path in sorted(Path(directory).glob("*.json"))]
    if not documents:
        raise BadInput(f"no session files (*.json) in {directory}")
    bases = [d for d in documents if d.run.annotations.get("sample", {}).get("kind") == "base"] or documents
    from evcli.evals.mutations.scope import host_bases

    return bases + host_bases()


# The bar for the held-out bases: caught at least this share, honest rejected at most this one.
HOLDOUT_CAUGHT = 0.97
HOLDOUT_REJECTED = 0.02


def run_with_holdout(
    bases: list[SessionDocument], rules: RuleSet, trace_dirs: list[Path] | None = None
) -> dict[str, Any]:
    """The suite on `bases` plus the tune half of the environment bases, every class including the
    environment ones; the held-out half is reported apart (`holdout`), and the trace classes on the
    environments with traces (`traces`, see `run_traces`) when there are any."""
    from evcli.evals.mutations import ENV_MUTATIONS, MUTATIONS
    from evcli.evals.mutations.envbases import env_bases

    classes = MUTATIONS + ENV_MUTATIONS
    tune = list(env_bases("tune")) + _covering("tune", classes)
    report = run_suite(bases + tune, rules, classes)
    traced = run_traces(rules, trace_dirs)
    if traced is not None:
        report["traces"] = traced
        report["targets_met"] = report["targets_met"] and traced["targets_met"]
    held = run_suite(list(env_bases("holdout")), rules, classes)
    caught, rejected = held["mutations"]["rate"] or 0.0, held["benign"]["rate"] or 0.0
    report["holdout"] = {
        "base_sessions": held["base_sessions"],
        "skipped_bases": held["skipped_bases"],
        "mutations": held["mutations"],
        "benign": held["benign"],
        "false_in_pass_answers": held["false_in_pass_answers"],
        "targets_met": caught >= HOLDOUT_CAUGHT
        and rejected <= HOLDOUT_REJECTED
        and held["false_in_pass_answers"]["in_pass_answer"] == 0,
    }
    return report


def run_traces(rules: RuleSet, directories: list[Path] | None = None) -> dict[str, Any] | None:
    """The trace classes on the trace bases of `directories` (default: the packaged environments with traces/,
    evcli.evals.mutations.tracebases); None when none has traces."""
    from evcli.evals.mutations import TRACE_MUTATIONS
    from evcli.evals.mutations.tracebases import trace_bases, trace_envs

    found = trace_envs() if directories is None else directories
    bases = [base for directory in found for base in trace_bases(directory)]
    return run_suite(bases, rules, TRACE_MUTATIONS) if bases else None


COVERING_QUESTIONS = 40  # at most this many more tune questions are run to give every class a case


def _covering(split: str, classes: tuple[MutationClass, ...]) -> list[SessionDocument]:
    """More sessions of the split's questions, until every class whose rewrite can apply to an environment
    base has a case: a class the first bases give no case is still measured (at most COVERING_QUESTIONS)."""
    from evcli.evals.mutations.envbases import env_bases, more_bases

    def makes_case(mutation: MutationClass, document: SessionDocument) -> bool:
        execute = document.latest_stage("execute")
        if execute is None or execute.output is None:
            return False
        return next(iter(mutation.mutate(document, execute.output)), None) is not None

    open_classes = [m for m in classes if not m.scope and not any(makes_case(m, d) for d in env_bases(split))]
    extra: list[SessionDocument] = []
    for index, document in enumerate(more_bases(split)):
        if not open_classes or index >= COVERING_QUESTIONS:
            break
        covered = [m for m in open_classes if makes_case(m, document)]
        if covered:
            extra.append(document)
            open_classes = [m for m in open_classes if m not in covered]
    return extra


def run_suite(
    bases: list[SessionDocument], rules: RuleSet, classes: tuple[MutationClass, ...] = MUTATIONS
) -> dict[str, Any]:
    reports = {m.name: ClassReport(m.name, m.benign, m.expected_severity, m.expected_rule) for m in classes}
    skipped: list[str] = []
    used: list[str] = []
    for document in bases:
        execute = document.latest_stage("execute")
        base = execute.output if execute is not None else None
        record = session_record(document, execute) if execute is not None else None
        scope = document.run.config.scope
        services = session_services(document)
        if base is None or gate(base, document.invocations, rules, record, scope, services).severity != "none":
            skipped.append(document.run.session_id)  # a base must pass before mutations mean anything
            continue
        used.append(document.run.session_id)
        kind = document.run.annotations.get("sample", {}).get("kind")
        for mutation in classes:
            if (kind == "scope_base" and not mutation.scope) or (kind == "env_base" and mutation.scope):
                continue  # scope classes edit what a scope base asked; an environment base asked its own
            report = reports[mutation.name]
            for case in mutation.mutate(document, base):
                invocations = document.invocations if case.invocations is None else case.invocations
                result = gate(case.output, invocations, rules, record, case.scope or scope, services)
                report.cases += 1
                report.observed_severity[result.severity] += 1
                report.rules_fired.update(result.failed_rules)
                ok = result.severity == mutation.expected_severity and (
                    mutation.expected_rule is None or mutation.expected_rule in result.failed_rules
                )
                if ok:
                    report.caught += 1
                else:
                    report.misses.append(
                        f"{document.run.session_id}: {case.description} -> {result.severity} {result.failed_rules}"
                    )
                if not mutation.benign and result.severity == "none":
                    # Only a gate at none lets the Verifier run uncapped: replay the case and see whether
                    # its false claim reaches a PASS answer (at low_confid or reject it cannot).
                    report.passed_gate += 1
                    report.answered += _reaches_pass_answer(document, case, base, rules)

    mutation_reports = [r for r in reports.values() if not r.benign]
    benign_reports = [r for r in reports.values() if r.benign]
    mutations_total = sum(r.cases for r in mutation_reports)
    mutations_caught = sum(r.caught for r in mutation_reports)
    benign_total = sum(r.cases for r in benign_reports)
    benign_rejected = sum(r.cases - r.caught for r in benign_reports)
    empty_classes = [r.name for r in reports.values() if r.cases == 0]
    return {
        "rule_set_version": rules.version,
        "rules_hash": rules.file_hash,
        "base_sessions": used,
        "skipped_bases": skipped,
        "classes": [r.as_dict() for r in reports.values()],
        "mutations": {
            "cases": mutations_total,
            "caught": mutations_caught,
            "rate": round(mutations_caught / mutations_total, 4) if mutations_total else None,
        },
        "benign": {
            "cases": benign_total,
            "rejected": benign_rejected,
            "rate": round(benign_rejected / benign_total, 4) if benign_total else None,
        },
        "false_in_pass_answers": {
            "passed_gate": sum(r.passed_gate for r in mutation_reports),
            "in_pass_answer": sum(r.answered for r in mutation_reports),
        },
        "classes_without_cases": empty_classes,
        # Targets: every mutation caught with its severity, no benign variant failed,
        # and every class exercised at least once.
        "targets_met": bool(mutations_total)
        and mutations_caught == mutations_total
        and benign_rejected == 0
        and not empty_classes,
    }


def _reaches_pass_answer(document: SessionDocument, case: Any, base: dict[str, Any], rules: RuleSet) -> bool:
    """Whether `evcli replay --from gate` of the mutated session (offline Verifier and Composer) gives a
    PASS answer that keeps a claim the mutation changed."""
    import tempfile

    from evcli.agents.roles import Models
    from evcli.pipeline import Pipeline
    from evcli.store.db import TraceStore

    changed = _changed_claims(base, case.output)
    mutated = document.model_copy(deep=True)
    execute = mutated.latest_stage("execute")
    assert execute is not None
    execute.output = case.output
    if case.invocations is not None:
        mutated.invocations = list(case.invocations)
    with tempfile.TemporaryDirectory() as directory, TraceStore(Path(directory) / "replay.db") as store:
        pipeline = Pipeline(
            store=store, rules=rules, models=Models(default="offline"), env_spec=document.run.config.env or {}
        )
        result = pipeline.replay(mutated, "gate")
    return result.verdict == "PASS" and bool(changed & {claim.claim_id for claim in result.claims})


def _changed_claims(base: dict[str, Any], output: Any) -> set[Any]:
    before = {claim.get("claim_id"): claim for claim in base.get("claims") or [] if isinstance(claim, dict)}
    claims = output.get("claims") if isinstance(output, dict) else None
    return {
        claim.get("claim_id")
        for claim in claims or []
        if isinstance(claim, dict) and claim != before.get(claim.get("claim_id"))
    }
