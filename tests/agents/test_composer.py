"""The "asked …; searched …" lines: one per scope finding, in the question's language, appended
after the post-guard, the same for every engine; a real host-env session shows them."""

from __future__ import annotations

from pathlib import Path

from evcli.agents.composer import scope_statement, with_statement
from evcli.contracts import AskedRange, Finding, GateResult
from evcli.gatekeeper.rules import load_rules
from evcli.pipeline import Pipeline
from evcli.store.db import TraceStore

HOST_ENV = Path(__file__).resolve().parents[2] / "evcli" / "envs" / "host"
ASKED = "2026-03-18T08:00:00+01:00..2026-03-18T08:20:00+01:00"
SEARCHED = "2026-03-18T09:14:00+01:00..2026-03-18T09:27:00+01:00"


def _gate(*findings: Finding) -> GateResult:
    return GateResult(
        status="fail",
        severity="low_confid",
        rule_set_version="v",
        rules_hash="h",
        rules=[],
        checked_bindings=[],
        failed_rules=sorted({f.rule for f in findings}),
        warnings=[],
        errors=list(findings),
    )


def test_one_line_per_scope_finding_in_the_question_language():
    gate = _gate(
        Finding(rule="scope.range_covered", severity="low_confid", message="m", asked=ASKED, searched=SEARCHED),
        Finding(
            rule="scope.terms_covered", severity="low_confid", message="m", asked='phrase "x y"', searched="nothing"
        ),
        Finding(rule="binding.unique_item", severity="low_confid", message="not a scope finding"),
    )
    assert scope_statement("en", gate) == [
        "Asked: 2026-03-18 08:00–08:20 (+01:00); searched: 2026-03-18 09:14–09:27 (+01:00).",
        'Asked: phrase "x y"; searched: nothing.',
    ]
    assert scope_statement("zh", gate)[0] == (
        "问题问的是：2026-03-18 08:00–08:20 (+01:00)；实际查询的是：2026-03-18 09:14–09:27 (+01:00)。"
    )
    assert scope_statement("en", None) == []


def test_with_statement_appends_and_leaves_an_answer_without_findings_alone():
    answer = {"answer_summary": "s", "user_facing_answer": "Findings:\n- a\n"}
    assert with_statement(answer, []) is answer
    assert with_statement(answer, ["Asked: a; searched: b."])["user_facing_answer"] == (
        "Findings:\n- a\n\nAsked: a; searched: b."
    )


def test_host_session_that_searched_another_range_is_low_confid_and_says_so(tmp_path):
    pipeline = Pipeline(store=TraceStore(tmp_path / "e.db"), rules=load_rules(), env_spec={"env_dir": str(HOST_ENV)})
    question = 'Did anyone log in as deploy between 09:14 and 09:27? Search auth for "Accepted publickey".'
    run = pipeline.create_session(question)
    pipeline.plan(run.session_id)
    pipeline.execute(run.session_id)  # searches what the question asked: 09:14-09:27
    scope = run.config.scope
    assert scope is not None and scope.range is not None and scope.range.range == SEARCHED
    # The session as a drifting engine leaves it: the question asked 08:00-08:20, the search ran 09:14-09:27.
    drifted = scope.model_copy(update={"range": AskedRange(text="between 08:00 and 08:20", range=ASKED)})
    pipeline.store.update_run(
        run.session_id, config=run.config.model_copy(update={"scope": drifted}).model_dump(mode="json")
    )
    session = run

    result = pipeline.run_from(session.session_id, "gate")

    assert result.verdict in ("LOW_CONFID", "REJECT")
    assert "scope.range_covered" in result.gate.failed_rules
    line = "Asked: 2026-03-18 08:00–08:20 (+01:00); searched: 2026-03-18 09:14–09:27 (+01:00)."
    assert result.answer.user_facing_answer.endswith(line)
    document = pipeline.store.load(session.session_id)
    finding = next(f for f in document.gate_results[-1].result.errors if f.rule == "scope.range_covered")
    assert (finding.asked, finding.searched) == (ASKED, SEARCHED)
    assert document.latest_stage("compose").output["user_facing_answer"].endswith(line)  # what trace shows
