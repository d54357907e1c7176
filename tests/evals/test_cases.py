"""Diagnosis cases: loading, judging and running them through the real chain."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import evcli
from evcli.agents.roles import Models
from evcli.aiops import diagnose_payload
from evcli.backends.snapshot import demo_env_dir
from evcli.core.errors import BadInput
from evcli.evals.cases import (
    DEFAULT_SUITES,
    DIAGNOSIS_SUITE,
    ONCALL_SUITE,
    Citation,
    failed_expectations,
    load_cases,
    overstatements,
    run_suite,
)
from evcli.gatekeeper.rules import load_rules
from evcli.pipeline import ROLES, Pipeline
from evcli.store.db import TraceStore
from tests.agents.scripted_server import ScriptedServer
from tests.agents.test_pipeline_llm import KEY, Model, honest_cpu_claim

FIXTURES = Path(__file__).parent / "fixtures"
DEMO_CASES = FIXTURES / "demo-cases.toml"
VOLATILE = ("seconds", "session_ids")  # differ between any two runs of the same case


def stable(result: dict) -> dict:
    return {key: value for key, value in result.items() if key not in VOLATILE}


@pytest.fixture(scope="module")
def fixture_report(tmp_path_factory):
    """The fixture suite run once, sequentially, into a store the tests can read."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVCLI_HOME", str(home))
        db_path = home / "eval.db"
        report = run_suite(load_cases(DEMO_CASES), rules=load_rules(), models=Models(), db_path=db_path)
    return report, db_path


# --- loading --------------------------------------------------------------------------------------


def test_fixture_cases_load_with_defaults_and_environments():
    payment, inventory, order = load_cases(DEMO_CASES)

    assert payment.id == "payment-cpu" and payment.env == "demo" and payment.env_dir == demo_env_dir()
    assert payment.must_cite == (
        Citation("query_metrics", "HighCPUUsage"),
        Citation("query_logs", "RedisCommandTimeoutException"),
    )
    assert payment.allowed_verdicts == ("PASS",) and payment.max_claims == 12 and payment.alert is None
    assert inventory.env == "demo" and inventory.env_dir == demo_env_dir()  # env defaults to the demo
    assert order.claim_types == ("observation",) and order.must_not_contain == ()
    assert {case.source for case in (payment, inventory, order)} == {DEMO_CASES}


def test_edge_relative_env_and_alert_paths_resolve(tmp_path):
    (tmp_path / "cases.toml").write_text(
        '[[cases]]\nid = "a"\nenv = "edge"\nquestion = "q"\n'
        '[[cases]]\nid = "b"\nenv = "envs/mine"\nalert = "alerts/one.json"\n'
        '[[cases]]\nid = "c"\nenv = "host"\nquestion = "q"\n'
        '[[cases]]\nid = "d"\nenv = "../edge"\nquestion = "q"\n',
        encoding="utf-8",
    )
    edge, mine, host, relative = load_cases(tmp_path / "cases.toml")

    assert edge.env_dir == Path(evcli.__file__).resolve().parent / "envs" / "edge"
    assert host.env_dir == Path(evcli.__file__).resolve().parent / "envs" / "host"
    assert relative.env_dir == tmp_path.parent / "edge"  # a path is relative to the case file, never packaged
    assert mine.env_dir == tmp_path / "envs" / "mine"
    assert mine.alert == tmp_path / "alerts" / "one.json" and mine.question is None
    assert mine.allowed_verdicts == ()  # no verdict expectation: any verdict


def test_a_directory_loads_every_toml_file_in_name_order(tmp_path):
    (tmp_path / "b.toml").write_text('[[cases]]\nid = "second"\nquestion = "q"\n', encoding="utf-8")
    (tmp_path / "a.toml").write_text('[[cases]]\nid = "first"\nquestion = "q"\n', encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a case file", encoding="utf-8")

    assert [case.id for case in load_cases(tmp_path)] == ["first", "second"]


def test_the_default_paths_are_the_shipped_suites():
    suites = Path(evcli.__file__).resolve().parent / "evals" / "suites"
    assert DEFAULT_SUITES == (DIAGNOSIS_SUITE, ONCALL_SUITE) == (suites / "diagnosis.toml", suites / "oncall.toml")
    assert {case.source for case in load_cases()} == set(DEFAULT_SUITES)


def test_must_search_follows_and_skip_load(tmp_path):
    (tmp_path / "cases.toml").write_text(
        '[[cases]]\nid = "first"\nenv = "host"\nquestion = "any 502s between 09:05 and 09:12?"\n'
        '[[cases.must_search]]\ntool = "query_logs"\nservice = "nginx"\ncontains = "502"\nrange = "09:05..09:12"\n'
        '[[cases.must_search]]\ntool = "query_metrics"\nlevel_at_most = "WARN"\n'
        '[[cases]]\nid = "next"\nenv = "host"\nquestion = "and before?"\nfollows = "first"\nskip = "needs --continue"\n',
        encoding="utf-8",
    )
    first, follow_up = load_cases(tmp_path / "cases.toml")

    logs, metrics = first.must_search
    assert logs.describe() == (
        "query_logs, service=nginx, keywords containing '502', "
        "range containing 2026-03-18T09:05:00+01:00..2026-03-18T09:12:00+01:00"  # the host's clock and zone
    )
    assert metrics.describe() == "query_metrics, level filter at most WARN"
    assert first.follows is None and first.skip is None and first.follows_question is None
    assert follow_up.follows == "first" and follow_up.follows_question == first.question
    assert follow_up.skip == "needs --continue"


BAD_SEARCHES = {
    "no tool": ('service = "nginx"', "`must_search` entry 1 must have exactly tool (optional: service, contains"),
    "unknown key": ('tool = "query_logs"\nkeywords = "x"', "`must_search` entry 1 must have exactly tool"),
    "bad level": ('tool = "query_logs"\nlevel_at_most = "LOUD"', "level_at_most 'LOUD'; allowed: DEBUG, INFO, WARN"),
    "one-ended range": ('tool = "query_logs"\nrange = "09:05.."', "range '09:05..' must be START..END"),
    "bad time": ('tool = "query_logs"\nrange = "nine..ten"', "range 'nine..ten': cannot read time 'nine'"),
}


@pytest.mark.parametrize("entry, fragment", BAD_SEARCHES.values(), ids=BAD_SEARCHES.keys())
def test_a_bad_must_search_is_bad_input(tmp_path, entry, fragment):
    path = tmp_path / "bad.toml"
    path.write_text(
        f'[[cases]]\nid = "x"\nenv = "host"\nquestion = "q"\n[[cases.must_search]]\n{entry}\n', encoding="utf-8"
    )

    with pytest.raises(BadInput) as raised:
        load_cases(path)
    assert raised.value.message.startswith(f"{path}: case 1 ('x'): ") and fragment in raised.value.message


def test_a_follow_up_must_follow_a_question_case_of_the_suite(tmp_path):
    path = tmp_path / "cases.toml"
    path.write_text('[[cases]]\nid = "x"\nquestion = "q"\nfollows = "nope"\n', encoding="utf-8")
    with pytest.raises(BadInput, match="case 'x' follows 'nope', no question case of the suite"):
        load_cases(path)
    path.write_text('[[cases]]\nid = "x"\nalert = "a.json"\nfollows = "y"\n', encoding="utf-8")
    with pytest.raises(BadInput, match="`follows` needs a `question`"):
        load_cases(path)


def test_a_search_expectation_is_met_only_by_a_scope_that_covers_it(tmp_path):
    (tmp_path / "cases.toml").write_text(
        '[[cases]]\nid = "x"\nenv = "host"\nquestion = "q"\n[[cases.must_search]]\ntool = "query_logs"\n'
        'service = "nginx"\ncontains = "Connection reset"\nrange = "09:05..09:12"\nlevel_at_most = "WARN"\n',
        encoding="utf-8",
    )
    (expected,) = load_cases(tmp_path / "cases.toml")[0].must_search
    covering = {
        "tool": "query_logs",
        "service": "NGINX",
        "keywords": ["peer", "connection reset"],
        "level": "WARNING",
        "range": "2026-03-18T09:00:00+01:00..2026-03-18T09:30:00+01:00",
    }
    assert expected.met_by(covering) and expected.met_by({**covering, "level": None})
    misses = {
        "other tool": {**covering, "tool": "query_metrics"},
        "other service": {**covering, "service": "apache"},
        "phrase dropped": {**covering, "keywords": ["connection"]},
        "level narrowed": {**covering, "level": "ERROR"},
        "range shifted": {**covering, "range": "2026-03-18T09:06:00+01:00..2026-03-18T09:30:00+01:00"},
        "no range": {**covering, "range": None},
    }
    assert {name for name, scope in misses.items() if expected.met_by(scope)} == set()


BAD_FILES = {
    "unknown key": ('[[cases]]\nid = "x"\nquestion = "q"\nquestoin = "typo"\n', "case 1 ('x'): unknown key 'questoin'"),
    "no question or alert": (
        '[[cases]]\nid = "x"\nallowed_verdicts = ["PASS"]\n',
        "case 1 ('x'): needs exactly one of `question` and `alert`",
    ),
    "question and alert": (
        '[[cases]]\nid = "x"\nquestion = "q"\nalert = "a.json"\n',
        "case 1 ('x'): needs exactly one of `question` and `alert`, not both",
    ),
    "missing id": ('[[cases]]\nid = "x"\nquestion = "q"\n[[cases]]\nquestion = "q"\n', "case 2: missing `id`"),
    "verdicts not a list": (
        '[[cases]]\nid = "x"\nquestion = "q"\nallowed_verdicts = "PASS"\n',
        "case 1 ('x'): `allowed_verdicts` must be a list",
    ),
    "unknown verdict": (
        '[[cases]]\nid = "x"\nquestion = "q"\nallowed_verdicts = ["OK"]\n',
        "`allowed_verdicts` has 'OK'; allowed: PASS, LOW_CONFID, REJECT",
    ),
    "empty verdicts": (
        '[[cases]]\nid = "x"\nquestion = "q"\nallowed_verdicts = []\n',
        "`allowed_verdicts` must list at least one verdict",
    ),
    "max_claims a string": (
        '[[cases]]\nid = "x"\nquestion = "q"\nmax_claims = "3"\n',
        "`max_claims` must be a whole number",
    ),
    "max_claims a boolean": (
        '[[cases]]\nid = "x"\nquestion = "q"\nmax_claims = true\n',
        "`max_claims` must be a whole number",
    ),
    "question a number": ('[[cases]]\nid = "x"\nquestion = 3\n', "`question` must be a non-empty string"),
    "must_cite without text": (
        '[[cases]]\nid = "x"\nquestion = "q"\n[[cases.must_cite]]\ntool = "query_logs"\n',
        "`must_cite` entry 1 must have exactly tool, text",
    ),
    "must_not_contain a string": (
        '[[cases]]\nid = "x"\nquestion = "q"\nmust_not_contain = "healthy"\n',
        "`must_not_contain` must be a list",
    ),
    "duplicate id": (
        '[[cases]]\nid = "x"\nquestion = "q"\n[[cases]]\nid = "x"\nquestion = "r"\n',
        "case 2 ('x'): duplicate id 'x'",
    ),
    "not TOML": ('[[cases]\nid = "x"\n', ": not valid TOML: "),
    "no cases": ('[[case]]\nid = "x"\nquestion = "q"\n', "unknown top-level key 'case'"),
    "empty file": ("", "no [[cases]] tables"),
}


@pytest.mark.parametrize("text, fragment", BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_bad_case_file_is_bad_input_naming_file_case_and_problem(tmp_path, text, fragment):
    path = tmp_path / "bad-cases.toml"
    path.write_text(text, encoding="utf-8")

    with pytest.raises(BadInput) as raised:
        load_cases(path)

    assert raised.value.message.startswith(f"{path}")
    assert fragment in raised.value.message


def test_a_duplicate_id_across_files_names_both(tmp_path):
    (tmp_path / "a.toml").write_text('[[cases]]\nid = "same"\nquestion = "q"\n', encoding="utf-8")
    (tmp_path / "b.toml").write_text('[[cases]]\nid = "same"\nquestion = "q"\n', encoding="utf-8")

    with pytest.raises(BadInput) as raised:
        load_cases(tmp_path)

    assert (
        raised.value.message
        == f"{tmp_path / 'b.toml'}: case 1 ('same'): duplicate id 'same' (first in {tmp_path / 'a.toml'})"
    )


def test_a_missing_path_is_bad_input(tmp_path):
    with pytest.raises(BadInput, match="no such case file"):
        load_cases(tmp_path / "nope.toml")
    with pytest.raises(BadInput, match="no case files"):
        load_cases(tmp_path)


# --- judging --------------------------------------------------------------------------------------


def test_each_expectation_is_reported_when_missed(tmp_path):
    payment = load_cases(DEMO_CASES)[0]
    with TraceStore(tmp_path / "t.db") as store:
        asked = Pipeline(store, load_rules(), env_spec={"env_dir": str(payment.env_dir)}).ask(payment.question)
    result = asked.model_dump(mode="json")  # the checker reads the JSON, as an alert report extends it
    assert failed_expectations(payment, result) == []

    strict = dataclasses.replace(
        payment,
        allowed_verdicts=("LOW_CONFID", "REJECT"),
        claim_types=("observation", "negative_observation"),  # something was found: no negative claim
        max_claims=1,
        must_cite=(
            Citation("query_logs", "HikariCP"),
            Citation("query_metrics", "highcpuusage"),
        ),  # text is case-sensitive
        must_not_contain=("HIGHCPUUSAGE", "system is healthy"),  # case-insensitive
    )
    assert failed_expectations(strict, result) == [
        "verdict PASS is not one of LOW_CONFID, REJECT",
        "no negative_observation claim",
        f"{len(result['claims'])} claims, more than max_claims 1",
        "no cited query_logs evidence contains 'HikariCP'",
        "no cited query_metrics evidence contains 'highcpuusage'",
        "answer contains 'HIGHCPUUSAGE'",
    ]


def test_overstatements_count_every_phrase_occurrence_like_the_post_guard():
    phrases = load_rules().overstatement_phrases
    result = {
        "answer": {
            "answer_summary": "The DB is definitely fine; redis is  Ruled   Out.",
            "user_facing_answer": "Definitely: the system is healthy. 系统正常。",
            "recommended_actions": [{"action_text": "nothing is wrong, definitely"}],  # not part of the counted text
        }
    }

    assert overstatements(result, phrases) == 5  # definitely x2, ruled out, system is healthy, 系统正常
    assert overstatements({"answer": {"answer_summary": "CPU is 92% [1].", "user_facing_answer": ""}}, phrases) == 0


# --- running ----------------------------------------------------------------------------------------


def test_the_fixture_suite_runs_each_case_in_its_own_session(fixture_report):
    report, db_path = fixture_report
    payment, inventory, order = report["cases"]

    assert [c["id"] for c in report["cases"]] == [
        "payment-cpu",
        "inventory-hikari-negative",
        "order-memory-too-many-claims",
    ]
    assert payment["passed"] and payment["failures"] == [] and payment["verdict"] == "PASS"
    assert inventory["passed"] and inventory["failures"] == [] and inventory["claims"] == 1
    assert not order["passed"] and order["verdict"] == "PASS"
    assert order["claims"] > 3 and order["failures"] == [f"{order['claims']} claims, more than max_claims 3"]
    assert report["models"] == {role: "offline" for role in ROLES}
    assert report["db"] == str(db_path) and report["rule_set_version"] == "gatekeeper-rules-v1"

    with TraceStore(db_path) as store:
        assert len(store.list_sessions()) == 3
        for case, question in zip(report["cases"], [c.question for c in load_cases(DEMO_CASES)], strict=True):
            (session_id,) = case["session_ids"]
            document = store.load(session_id)
            assert document.run.question == question and document.run.status == "completed"
            assert document.run.verdict == case["verdict"]
            claims = document.latest_stage("execute").output["claims"]
            bindings = sum(len(claim["evidence_bindings"]) for claim in claims)
            assert case["executor_claims"] == case["grounded_claims"] == len(claims) > 0
            assert case["checked_bindings"] == case["passed_bindings"] == bindings
            assert case["coverage"] == case["precision"] == 1.0
            assert case["model_calls"] == len(document.steps) > 0
            assert case["prompt_tokens"] == case["completion_tokens"] == 0  # the offline engine counts no tokens
            assert case["overstatements"] == 0 and case["error"] is None and case["kind"] == "question"


def test_totals_add_up(fixture_report):
    report, _ = fixture_report
    cases, totals = report["cases"], report["totals"]

    assert totals["cases"] == 3 and totals["passed"] == 2 and totals["failed"] == 1
    assert totals["pass_rate"] == 0.6667
    assert totals["mean_coverage"] == 1.0 and totals["precision"] == 1.0 and totals["overstatements"] == 0
    assert totals["model_calls"] == sum(c["model_calls"] for c in cases)
    assert totals["prompt_tokens"] == totals["completion_tokens"] == 0
    assert totals["seconds"] >= max(c["seconds"] for c in cases) > 0


def test_two_jobs_give_the_same_results_as_one(fixture_report, evcli_home):
    report, db_path = fixture_report
    # the same store file: each worker process opens its own connection to it
    parallel = run_suite(load_cases(DEMO_CASES), rules=load_rules(), models=Models(), db_path=db_path, jobs=2)

    assert [stable(c) for c in parallel["cases"]] == [stable(c) for c in report["cases"]]
    assert parallel["jobs"] == 2
    with TraceStore(db_path) as store:
        sessions = {row["session_id"]: row for row in store.list_sessions(limit=100)}
    new_ids = [sid for case in parallel["cases"] for sid in case["session_ids"]]
    assert len(sessions) == 6 and set(new_ids) <= set(sessions)
    assert all(sessions[sid]["status"] == "completed" for sid in new_ids)


def test_a_case_that_cannot_run_fails_with_its_error_and_the_suite_goes_on(tmp_path):
    (tmp_path / "cases.toml").write_text(
        '[[cases]]\nid = "no-env"\nenv = "missing-env"\nquestion = "Why is payment-service CPU usage high?"\n'
        '[[cases]]\nid = "no-payload"\nalert = "alerts/missing.json"\n'
        '[[cases]]\nid = "fine"\nquestion = "Why is payment-service CPU usage high?"\nallowed_verdicts = ["PASS"]\n',
        encoding="utf-8",
    )
    report = run_suite(load_cases(tmp_path / "cases.toml"), rules=load_rules(), models=Models())
    no_env, no_payload, fine = report["cases"]

    assert no_env["error"] == f"no such environment directory: {tmp_path / 'missing-env'}"
    assert no_env["failures"] == [f"error: {no_env['error']}"] and not no_env["passed"]
    assert no_env["verdict"] is None and no_env["session_ids"] == [] and no_env["coverage"] is None
    assert no_payload["kind"] == "alert" and not no_payload["passed"]
    assert no_payload["error"] == f"no such file: {tmp_path / 'alerts' / 'missing.json'}"
    assert fine["passed"] and report["totals"]["passed"] == 1 and report["totals"]["pass_rate"] == 0.3333
    assert report["db"] is None  # a temporary store


def test_a_lying_model_is_measured_from_its_session(tmp_path, monkeypatch):
    """A litellm model (scripted over HTTP) whose second claim changes 92% to 29%: one of two bindings fails."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    model = Model()

    def lying_cpu_claim(body):
        lie = honest_cpu_claim(body)
        binding = lie["evidence_bindings"][0]
        assert "92%" in binding["evidence_excerpt"]
        binding["evidence_excerpt"] = binding["evidence_excerpt"].replace("92%", "29%")
        return {**lie, "claim_id": "claim-2"}

    model.executor_claims = lambda body: [honest_cpu_claim(body), lying_cpu_claim(body)]
    payment = load_cases(DEMO_CASES)[0]
    with ScriptedServer(model) as server:
        models = Models(default="openai/scripted", api_base=server.url + "/v1")
        report = run_suite([payment], rules=load_rules(), models=models, db_path=tmp_path / "eval.db")
    (case,) = report["cases"]

    assert case["verdict"] == "REJECT" and not case["passed"]
    assert "verdict REJECT is not one of PASS" in case["failures"]
    assert (case["executor_claims"], case["grounded_claims"]) == (2, 1) and case["coverage"] == 0.5
    assert (case["checked_bindings"], case["passed_bindings"]) == (2, 1) and case["precision"] == 0.5
    assert case["claims"] == 0  # a gate reject answers with a fallback, never with executor claims
    # planner, executor twice, one repair round (the same lie again); a reject skips the rest
    assert case["model_calls"] == len(server.requests) == 4
    with TraceStore(tmp_path / "eval.db") as store:
        steps = store.load(case["session_ids"][0]).steps
    assert case["prompt_tokens"] == sum(s.prompt_tokens for s in steps) > 2400  # the executor alone reports 2400
    assert case["completion_tokens"] == sum(s.completion_tokens for s in steps) > 260
    assert report["models"]["executor"] == "openai/scripted" and report["models"]["api_base"] == server.url + "/v1"
    assert report["totals"]["precision"] == 0.5 and report["totals"]["mean_coverage"] == 0.5


def test_reports_are_json_serialisable(fixture_report):
    report, _ = fixture_report
    assert json.loads(json.dumps(report)) == report


# --- alert cases ----------------------------------------------------------------------------------------


def test_alert_cases_diagnose_each_firing_alert_in_its_own_session(tmp_path):
    report = run_suite(
        load_cases(FIXTURES / "alert-cases.toml"), rules=load_rules(), models=Models(), db_path=tmp_path / "eval.db"
    )
    single, double = report["cases"]

    assert single["kind"] == double["kind"] == "alert"
    # the resolved HighMemoryUsage alert of the first payload is not diagnosed
    assert single["passed"] and single["verdict"] == "PASS" and len(single["session_ids"]) == 1, single
    assert not double["passed"] and len(double["session_ids"]) == 2
    assert double["failures"] == ["alert HighCPUUsage: no cited query_metrics evidence contains 'SlowResponse'"]
    with TraceStore(tmp_path / "eval.db") as store:
        documents = [store.load(sid) for case in report["cases"] for sid in case["session_ids"]]
    assert [d.run.config.aiops_alert["alertname"] for d in documents] == [
        "HighCPUUsage",
        "HighCPUUsage",
        "SlowResponse",
    ]
    assert all(d.run.mode == "aiops" and d.run.self_evaluation["aiops_rule_evaluation"]["passed"] for d in documents)
    # a case with two alerts adds up both sessions
    assert double["model_calls"] == sum(len(d.steps) for d in documents[1:])
    assert double["executor_claims"] == sum(len(d.latest_stage("execute").output["claims"]) for d in documents[1:])
    assert double["coverage"] == double["precision"] == 1.0


def test_a_failed_aiops_check_fails_an_alert_report(tmp_path):
    case = load_cases(FIXTURES / "alert-cases.toml")[0]
    with TraceStore(tmp_path / "t.db") as store:
        (result,) = diagnose_payload(Pipeline(store, load_rules()), json.loads(case.alert.read_text()))
    assert failed_expectations(case, result) == []

    evaluation = {
        **result["aiops_rule_evaluation"],
        "knowledge_consulted": False,
        "no_other_alert_promoted": False,
        "passed": False,
    }
    assert failed_expectations(case, {**result, "aiops_rule_evaluation": evaluation}) == [
        "AIOps check knowledge_consulted failed",
        "AIOps check no_other_alert_promoted failed",
    ]


# --- the shipped suite ------------------------------------------------------------------------------------


def test_a_run_reports_asked_and_searched_scopes_and_a_pass_that_missed_the_search(tmp_path):
    (tmp_path / "cases.toml").write_text(
        '[[cases]]\nid = "missed"\nquestion = "Why is payment-service CPU usage high?"\nallowed_verdicts = ["PASS"]\n'
        '[[cases.must_search]]\ntool = "query_metrics"\nservice = "payment-service"\n'
        '[[cases.must_search]]\ntool = "query_logs"\ncontains = "no-such-keyword-xyz"\n'
        '[[cases]]\nid = "later"\nquestion = "what next?"\nfollows = "missed"\nskip = "needs --continue"\n',
        encoding="utf-8",
    )
    report = run_suite(load_cases(tmp_path / "cases.toml"), rules=load_rules(), models=Models())
    missed, later = report["cases"]

    assert missed["verdict"] == "PASS" and not missed["passed"] and missed["pass_with_scope_miss"]
    assert missed["scope_misses"] == ["nothing searched query_logs, keywords containing 'no-such-keyword-xyz'"]
    assert missed["failures"][-1] == missed["scope_misses"][0]
    assert {"tool": "query_metrics", "service": "payment-service"}.items() <= missed["searched"][0].items() or any(
        scope["tool"] == "query_metrics" and scope["service"] == "payment-service" for scope in missed["searched"]
    )
    assert all(set(scope) == {"tool", "service", "keywords", "level", "range"} for scope in missed["searched"])
    (asked,) = missed["asked"]  # one session; None when the session recorded no question scope
    assert asked is None or "payment-service" in asked.get("services", [])
    assert later["skipped"] == "needs --continue" and not later["passed"] and later["session_ids"] == []
    assert later["asked"] == [] and later["searched"] == [] and later["failures"] == []
    totals = report["totals"]
    assert totals["cases"] == 2 and totals["skipped"] == 1 and totals["failed"] == 1 and totals["passed"] == 0
    assert totals["pass_rate"] == 0.0 and totals["pass_with_scope_miss"] == 1  # over the case that ran


def test_the_offline_engine_passes_every_case_of_the_diagnosis_suite():
    # oncall.toml (issue 10) is measured by `evcli eval cases`; its targets are the engine's to reach
    cases = load_cases(DIAGNOSIS_SUITE)
    report = run_suite(cases, rules=load_rules(), models=Models())

    failed = {case["id"]: case["failures"] for case in report["cases"] if not case["passed"]}
    assert failed == {}
    assert report["totals"]["pass_rate"] == 1.0 and report["totals"]["cases"] == len(cases)
    assert {case.env for case in cases} == {"demo", "edge", "host"} and any(case.alert for case in cases)


def test_quoted_cited_evidence_is_no_overstatement():
    phrases = load_rules().overstatement_phrases
    line = "[client 10.0.0.7] AH00128: File does not exist: /srv/intranet/htdocs/favicon.ico"
    claims = [{"evidence": [{"text": f"logs/error.log:3 {line}"}]}]
    quoted = {"answer": {"answer_summary": f"apache logged ERROR at 09:12: {line} [1].", "user_facing_answer": ""}}
    assert overstatements(quoted | {"claims": claims}, phrases) == 0
    own = {"answer": {"answer_summary": "The favicon does not exist [1].", "user_facing_answer": ""}}
    assert overstatements(own | {"claims": claims}, phrases) >= 1  # the answer's own words
