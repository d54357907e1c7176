"""`evcli eval cases` and `evcli eval retrieval`: exit codes, reports, progress."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evcli.pipeline import ROLES
from evcli.store.db import TraceStore
from tests.agents.scripted_server import ScriptedServer
from tests.agents.test_pipeline_llm import KEY, Model
from tests.cli._util import assert_clean_error, evcli

FIXTURES = Path(__file__).resolve().parent.parent / "evals" / "fixtures"
DEMO_CASES = FIXTURES / "demo-cases.toml"
RETRIEVAL_CASES = FIXTURES / "retrieval-cases.toml"
CASE_IDS = ["payment-cpu", "inventory-hikari-negative", "order-memory-too-many-claims"]
CASE_KEYS = {
    "id",
    "env",
    "kind",
    "follows",
    "skipped",
    "asked",
    "searched",
    "scope_misses",
    "pass_with_scope_miss",
    "passed",
    "failures",
    "error",
    "verdict",
    "session_ids",
    "claims",
    "executor_claims",
    "grounded_claims",
    "checked_bindings",
    "passed_bindings",
    "coverage",
    "precision",
    "overstatements",
    "model_calls",
    "prompt_tokens",
    "completion_tokens",
    "seconds",
}
TOTAL_KEYS = {
    "cases",
    "passed",
    "failed",
    "skipped",
    "pass_rate",
    "pass_with_scope_miss",
    "mean_coverage",
    "precision",
    "overstatements",
    "model_calls",
    "prompt_tokens",
    "completion_tokens",
    "seconds",
}
PROGRESS_LINE = re.compile(r"^([✓✗]) (\S+) · (PASS|LOW_CONFID|REJECT|error) · \d+\.\ds$")


@pytest.fixture(scope="module")
def cases_json(tmp_path_factory):
    """The fixture suite run once through the CLI, sequentially."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVCLI_HOME", str(tmp_path_factory.mktemp("home")))
        return evcli("eval", "cases", DEMO_CASES, "--json")


# --- eval cases ------------------------------------------------------------------------------------


def test_cases_json_report(cases_json):
    run = cases_json
    assert run.exit_code == 0, run  # a failed case is a result, not an error
    report = run.json()
    assert set(report) == {"suite", "models", "rule_set_version", "db", "jobs", "cases", "totals"}
    assert report["suite"] == [str(DEMO_CASES)] and report["db"] is None and report["jobs"] == 1
    assert report["models"] == {role: "offline" for role in ROLES}
    assert [case["id"] for case in report["cases"]] == CASE_IDS
    assert all(set(case) == CASE_KEYS for case in report["cases"])
    assert [case["passed"] for case in report["cases"]] == [True, True, False]
    assert set(report["totals"]) == TOTAL_KEYS
    assert (report["totals"]["passed"], report["totals"]["pass_rate"]) == (2, 0.6667)
    assert run.stderr == ""  # no progress when stderr is not a terminal


@pytest.mark.parametrize("rate, code", [("1", 1), ("0.7", 1), ("0.6667", 0), ("0.5", 0), ("0", 0)])
def test_fail_under_compares_the_pass_rate(rate, code):
    run = evcli("eval", "cases", DEMO_CASES, "--json", "--fail-under", rate)

    assert run.exit_code == code, run
    assert run.json()["totals"]["pass_rate"] == 0.6667  # the report is printed either way
    assert run.stderr == ""


def test_progress_goes_to_stderr_one_line_per_case():
    run = evcli("eval", "cases", DEMO_CASES, "--json", "--progress")

    assert run.exit_code == 0, run
    report = run.json()  # stdout holds only the report
    lines = run.stderr.splitlines()
    assert len(lines) == 3, run
    parsed = [PROGRESS_LINE.match(line).groups() for line in lines]
    assert parsed == [("✓" if case["passed"] else "✗", case["id"], case["verdict"]) for case in report["cases"]]


def test_progress_is_on_when_stderr_is_a_terminal(monkeypatch):
    from evcli.core.console import err

    monkeypatch.setattr(err, "_force_terminal", True)
    run = evcli("eval", "cases", DEMO_CASES, "--json")

    assert run.exit_code == 0, run
    assert [PROGRESS_LINE.match(line).group(2) for line in run.stderr.splitlines()] == CASE_IDS
    assert len(run.json()["cases"]) == 3


def test_human_output_table_failures_and_totals():
    run = evcli("eval", "cases", DEMO_CASES)

    assert run.exit_code == 0, run
    assert "diagnosis cases · 3 cases · offline" in run.stdout
    rows: dict[str, list[list[str]]] = {}  # case → its lines of cells (a long cell folds onto more lines)
    for line in (line for line in run.stdout.splitlines() if line.startswith("│")):
        case, *cells = [cell.strip() for cell in line.split("│")[1:-1]]
        rows.setdefault(case, []).append(cells) if case else rows[list(rows)[-1]].append(cells)
    assert list(rows) == CASE_IDS
    payment = rows["payment-cpu"]
    assert payment[0][:3] == ["demo", "pass", "PASS"] and payment[0][4:6] == ["100%", "100%"]
    assert rows["order-memory-too-many-claims"][0][:3] == ["demo", "fail", "PASS"]
    # the last two columns: the scope the question asked, then one line per searched scope
    asked, searched = (" ".join(" ".join(cells[i] for cells in payment).split()) for i in (-2, -1))
    assert asked.split()[0] == "payment-service"
    assert "metrics payment-service 22:30–23:10" in searched and "logs payment-service >=WARN 22:30–23:10" in searched
    failures = [line for line in run.stdout.splitlines() if line.startswith("fail ")]
    assert len(failures) == 1 and re.fullmatch(
        r"fail order-memory-too-many-claims: \d+ claims, more than max_claims 3", failures[0]
    )
    (summary,) = [line for line in run.stdout.splitlines() if line.startswith("passed ")]
    assert summary.startswith(
        "passed 2/3 (67%) · skipped 0 · PASS with scope miss 0 · mean coverage 100% · precision 100% · "
        "overstatements 0 · model calls "
    )
    assert run.stderr == ""


def test_db_keeps_the_sessions(tmp_path):
    db = tmp_path / "eval.db"
    run = evcli("eval", "cases", DEMO_CASES, "--json", "--db", db)

    assert run.exit_code == 0, run
    report = run.json()
    assert report["db"] == str(db)
    with TraceStore(db) as store:
        stored = {row["session_id"]: row for row in store.list_sessions()}
    assert sorted(stored) == sorted(sid for case in report["cases"] for sid in case["session_ids"])
    assert {row["verdict"] for row in stored.values()} == {"PASS"}


def test_two_jobs_report_the_same_cases(cases_json):
    run = evcli("eval", "cases", DEMO_CASES, "--json", "--jobs", "2")

    assert run.exit_code == 0, run
    volatile = ("seconds", "session_ids")

    def stable(report):
        return [{k: v for k, v in case.items() if k not in volatile} for case in report["cases"]]

    assert stable(run.json()) == stable(cases_json.json())
    assert run.json()["jobs"] == 2


def test_model_and_api_base_reach_every_role(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    suite = tmp_path / "cpu.toml"
    suite.write_text(
        '[[cases]]\nid = "cpu"\nquestion = "Why is payment-service CPU usage high?"\nallowed_verdicts = ["PASS"]\n'
        'claim_types = ["observation"]\n[[cases.must_cite]]\ntool = "query_metrics"\ntext = "92%"\n',
        encoding="utf-8",
    )
    with ScriptedServer(Model()) as server:
        run = evcli("eval", "cases", suite, "--json", "--model", "openai/scripted", "--api-base", server.url + "/v1")

    assert run.exit_code == 0, run
    report = run.json()
    assert report["models"] == {role: "openai/scripted" for role in ROLES} | {"api_base": server.url + "/v1"}
    (case,) = report["cases"]
    assert case["passed"] and case["verdict"] == "PASS", case
    assert case["model_calls"] == len(server.requests) == 5
    assert case["prompt_tokens"] > 0 and case["completion_tokens"] > 0


def test_a_bad_case_file_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[cases]]\nid = "x"\nquestion = "q"\nalert = "a.json"\n', encoding="utf-8")

    run = evcli("eval", "cases", bad)

    assert_clean_error(run, 2, str(bad), "case 1 ('x')", "needs exactly one of `question` and `alert`, not both")


@pytest.mark.parametrize("args", [("--fail-under", "1.5"), ("--jobs", "0")])
def test_out_of_range_options_are_usage_errors(args):
    run = evcli("eval", "cases", DEMO_CASES, *args)
    assert run.exit_code == 2, run


# --- eval retrieval ----------------------------------------------------------------------------------


def test_retrieval_json_report():
    run = evcli("eval", "retrieval", RETRIEVAL_CASES, "--json")

    assert run.exit_code == 0, run
    report = run.json()
    assert set(report) == {"suite", "k", "cases", "by_env", "totals"}
    assert [case["rank"] for case in report["cases"]] == [3, 2, 1, None]
    assert set(report["cases"][0]) == {
        "id",
        "env",
        "query",
        "expected_doc",
        "expected_heading",
        "k",
        "rank",
        "doc_rank",
        "hit",
        "reciprocal_rank",
        "retrieved",
        "error",
    }
    assert report["by_env"] == {"demo": {"cases": 4, "hits": 3, "recall_at_k": 0.75, "mrr": 0.4583}}
    assert set(report["totals"]) == {"cases", "hits", "recall_at_k", "mrr", "seconds"}
    assert run.stderr == ""


@pytest.mark.parametrize(
    "args, code",
    [
        ((), 0),
        (("--fail-under", "0.75"), 0),
        (("--fail-under", "0.8"), 1),
        (("--k", "1", "--fail-under", "0.25"), 0),
        (("--k", "1", "--fail-under", "0.3"), 1),
    ],
)
def test_retrieval_fail_under_compares_recall(args, code):
    run = evcli("eval", "retrieval", RETRIEVAL_CASES, "--json", *args)
    assert run.exit_code == code, run


def test_retrieval_human_output():
    run = evcli("eval", "retrieval", RETRIEVAL_CASES)

    assert run.exit_code == 0, run
    lines = run.stdout.splitlines()
    assert "runbook retrieval · 4 cases" in run.stdout
    (miss,) = [line for line in lines if line.startswith("miss ")]
    prefix = "miss latency-is-not-memory: "
    assert miss.startswith(prefix + "runbooks/slow-response.md › Symptoms, ")  # what was found instead, best first
    assert len(miss[len(prefix) :].split(", ")) == 5
    assert "demo: recall@k 75% (3/4) · MRR 0.458" in lines
    assert any(line.startswith("overall: recall@k 75% (3/4) · MRR 0.458 · ") for line in lines)


def test_retrieval_bad_case_file_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[cases]]\nid = "x"\nquery = "q"\n', encoding="utf-8")

    assert_clean_error(evcli("eval", "retrieval", bad), 2, str(bad), "missing `expected_doc`")


# --- the shipped suites by default ---------------------------------------------------------------------


def test_default_paths_are_the_shipped_suites():
    from evcli.evals.cases import DIAGNOSIS_SUITE
    from evcli.evals.retrieval import RETRIEVAL_SUITE

    retrieval = evcli("eval", "retrieval", "--json")
    assert retrieval.exit_code == 0, retrieval
    assert retrieval.json()["suite"] == [str(RETRIEVAL_SUITE)]

    # without a path both shipped suites run (tests/evals/test_cases.py checks the default); the
    # diagnosis suite, in parallel, alert cases included: still every case passes
    cases = evcli("eval", "cases", DIAGNOSIS_SUITE, "--json", "--jobs", "3", "--fail-under", "1")
    assert cases.exit_code == 0, cases
    report = cases.json()
    assert report["suite"] == [str(DIAGNOSIS_SUITE)] and report["totals"]["pass_rate"] == 1.0
    assert {case["kind"] for case in report["cases"]} == {"question", "alert"}


RUNBOOK = """\
---
title: Disk space low on a node
alerts: [DiskSpaceLow]
services: [node-worker-01]
---

# Disk space low on a node

## Immediate steps

1. Page the storage team on the {channel} channel before deleting anything.
"""


def test_runbooks_are_searched_by_every_case_instead_of_the_environments_own(tmp_path):
    # issue 12: eval takes --runbooks (repeatable), as ask does; the demo's own runbooks are not searched
    cases = tmp_path / "cases.toml"
    cases.write_text('[[cases]]\nid = "disk"\nquestion = "Why is node-worker-01 running out of disk space?"\n')
    directories = [tmp_path / "ours", tmp_path / "theirs"]
    for directory, channel in zip(directories, ("zeta-storage", "eta-storage"), strict=True):
        directory.mkdir()
        (directory / f"{channel}.md").write_text(RUNBOOK.format(channel=channel))
    db = tmp_path / "eval.db"

    run = evcli(
        "eval", "cases", cases, "--runbooks", directories[0], "--runbooks", directories[1], "--json", "--db", db
    )

    assert run.exit_code == 0, run
    (case,) = run.json()["cases"]
    assert case["error"] is None and case["session_ids"], case
    with TraceStore(db) as store:
        document = store.load(case["session_ids"][0])
    assert document.run.config.env["runbooks"] == [str(directory) for directory in directories]
    blocks = [
        block
        for invocation in document.invocations
        if invocation.tool_name == "lookup_knowledge"
        for block in invocation.output.get("evidence_blocks", [])
    ]
    assert {block["doc"] for block in blocks} == {"zeta-storage.md", "eta-storage.md"}


def test_a_missing_runbooks_directory_is_a_usage_error(tmp_path):
    run = evcli("eval", "cases", DEMO_CASES, "--runbooks", tmp_path / "nowhere")

    assert run.exit_code == 2, run
