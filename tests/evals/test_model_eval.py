"""`evcli eval model` over real HTTP: litellm talks to the scripted server on 127.0.0.1, which replays
recorded transcripts of a capable model (tests/evals/transcripts/) for four packaged questions.

The transcripts hold parallel tool calls with the model's text, verbatim excerpts, a mixed-language
claim, a check_claims call on a draft, and a first draft the gate rejects that the repair round
fixes. What the report says is compared with what crossed the wire (usage, requests, characters)
and with what the chain stored (verdicts, gate results).
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from evcli.contracts import ROLES
from evcli.core.errors import BadInput
from evcli.evals.model import request_characters, select_cases
from evcli.store.db import TraceStore
from tests.agents.scripted_server import ScriptedServer, error
from tests.cli._util import assert_clean_error, evcli
from tests.evals.transcripts import Replay, Transcript, load, question_of

# Four questions of the packaged suites, in suite order: two narrow (English, Chinese), one broad, one repaired.
CASES = ("demo-narrow-cpu-en", "demo-narrow-memory-zh", "demo-narrow-redis-timeout-en", "demo-broad-payment-cpu-en")
MODEL = "openai/scripted"
QUESTION_KEYS = {
    "id",
    "env",
    "question",
    "skipped",
    "error",
    "verdict",
    "gate_severity",
    "session_ids",
    "claims",
    "rejected_claims",
    "honest_rejected",
    "rejections",
    "facts_expected",
    "facts_cited",
    "expected_facts",
    "failures",
    "roles",
    "requests",
    "failed_requests",
    "prompt_tokens",
    "completion_tokens",
    "characters_sent",
    "seconds",
}


def _eval(server: ScriptedServer, *args: Any) -> Any:
    return evcli("eval", "model", "--model", MODEL, "--api-base", server.url + "/v1", *args)


def _cases(*ids: str) -> list[str]:
    return [word for case in ids for word in ("--case", case)]


class Replayed:
    """One run of the four questions: the report, the server's requests, the transcripts, the store."""

    def __init__(self, tmp: Path) -> None:
        self.transcripts = {case: load(case) for case in CASES}
        self.replay = Replay(list(self.transcripts.values()))
        self.db = tmp / "eval.db"
        with ScriptedServer(self.replay) as server:
            self.run = _eval(server, *_cases(*CASES), "--json", "--db", self.db)
        self.server = server
        self.report = self.run.json() if self.run.exit_code == 0 else None
        self.rows = {row["id"]: row for row in (self.report or {}).get("questions", [])}

    def requests(self, case: str, role: str) -> list[dict[str, Any]]:
        question = self.transcripts[case].question
        return [body for body in self.server.requests_for(role) if question_of(body) == question]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> Replayed:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVCLI_HOME", str(tmp_path_factory.mktemp("home")))
        patch.delenv("OPENAI_API_KEY", raising=False)  # a local OpenAI-compatible server needs no key
        return Replayed(tmp_path_factory.mktemp("eval"))


# --- the report ---------------------------------------------------------------------------------------


def test_every_question_runs_through_the_recorded_transcript(replayed):
    run = replayed.run
    assert run.exit_code == 0, run
    assert run.stderr == ""  # no progress when stderr is not a terminal
    assert replayed.replay.unused() == {}  # the chain asked for exactly the recorded replies
    assert replayed.server.handler_errors == []
    report = replayed.report
    assert report["models"] == dict.fromkeys(ROLES, MODEL) | {"api_base": replayed.server.url + "/v1"}
    assert report["roles"] == list(ROLES) and report["db"] == str(replayed.db)
    assert [row["id"] for row in report["questions"]] == list(CASES)
    assert all(set(row) == QUESTION_KEYS for row in report["questions"])
    assert [row["error"] for row in report["questions"]] == [None] * 4
    assert [row["failures"] for row in report["questions"]] == [[]] * 4


def test_verdicts_rejections_and_expected_facts_per_question(replayed):
    rows = replayed.rows
    assert {case: rows[case]["verdict"] for case in CASES} == dict.fromkeys(CASES, "PASS")
    assert {case: (rows[case]["rejected_claims"], rows[case]["honest_rejected"]) for case in CASES} == {
        "demo-narrow-cpu-en": (0, 0),
        "demo-narrow-memory-zh": (0, 0),
        "demo-narrow-redis-timeout-en": (1, 1),  # the first draft's claim-2, fixed by the repair round
        "demo-broad-payment-cpu-en": (0, 0),  # its faulty draft went to check_claims, not to the gate
    }
    (rejection,) = rows["demo-narrow-redis-timeout-en"]["rejections"]
    assert rejection == {
        "round": 1,
        "claim_id": "claim-2",
        "claim_text": "At 2026-07-08 22:52:15.020 payment-service logged that it was falling back to database "
        "idempotency check after Redis timeout on redis-cluster-01:6379.",
        "rules": ["claim.facts_in_excerpts"],
        "honest": True,
    }
    assert {case: (rows[case]["facts_cited"], rows[case]["facts_expected"]) for case in CASES} == {
        "demo-narrow-cpu-en": (1, 1),
        "demo-narrow-memory-zh": (2, 2),
        "demo-narrow-redis-timeout-en": (1, 1),
        "demo-broad-payment-cpu-en": (2, 2),
    }
    assert rows["demo-narrow-memory-zh"]["expected_facts"] == [
        {"tool": "query_metrics", "text": "HighMemoryUsage, service=order-service", "cited": True},
        {"tool": "query_metrics", "text": "current=91%", "cited": True},
    ]
    assert [rows[case]["claims"] for case in CASES] == [1, 1, 2, 5]


def test_verdicts_are_what_the_chain_stored_and_the_gate_gave(replayed):
    with TraceStore(replayed.db) as store:
        for case in CASES:
            row = replayed.rows[case]
            (session_id,) = row["session_ids"]
            document = store.load(session_id)
            assert row["verdict"] == document.run.verdict
            assert row["gate_severity"] == document.gate_results[-1].result.severity
        repaired = store.load(replayed.rows["demo-narrow-redis-timeout-en"]["session_ids"][0])
        broad = store.load(replayed.rows["demo-broad-payment-cpu-en"]["session_ids"][0])
    # the repair round: the first draft rejected, the second passed; the trace keeps both drafts
    assert [(g.round, g.result.severity) for g in repaired.gate_results] == [(1, "reject"), (2, "none")]
    assert [s.round for s in repaired.stage_outputs if s.stage == "execute"] == [1, 2]
    # three calls of one reply ran as invocations 1-3; check_claims saw the draft's claim-3 fail
    assert [i.tool_name for i in broad.invocations] == ["query_metrics", "query_logs", "find_changes", "query_logs"]
    execute = broad.latest_stage("execute")
    assert execute is not None
    (checked,) = execute.parse_status["drafts_checked"]
    assert "claim-1: pass" in checked and "claim-3: fail claim.facts_in_excerpts" in checked


def test_tokens_and_requests_per_role_are_the_recorded_usage(replayed):
    for case, transcript in replayed.transcripts.items():
        roles = replayed.rows[case]["roles"]
        assert set(roles) == set(ROLES)
        for role in ROLES:
            prompt, completion = transcript.usage(role)
            assert (roles[role]["prompt_tokens"], roles[role]["completion_tokens"]) == (prompt, completion), (
                case,
                role,
            )
            assert roles[role]["requests"] == len(transcript.replies[role]) == len(replayed.requests(case, role))
            assert roles[role]["failed_requests"] == 0 and roles[role]["model"] == MODEL
        row = replayed.rows[case]
        assert row["prompt_tokens"] == sum(transcript.usage(role)[0] for role in ROLES)
        assert row["completion_tokens"] == sum(transcript.usage(role)[1] for role in ROLES)
        assert row["requests"] == sum(len(replies) for replies in transcript.replies.values())


def test_characters_sent_are_what_reached_the_server(replayed):
    for case in CASES:
        roles = replayed.rows[case]["roles"]
        for role in ROLES:
            sent = sum(
                request_characters(body["messages"], body.get("tools")) for body in replayed.requests(case, role)
            )
            assert roles[role]["characters_sent"] == sent > 0, (case, role)
    # the Executor resends its prompt and tool schemas with every request: the broad question's four
    # requests cost more than its other roles' together
    broad = replayed.rows["demo-broad-payment-cpu-en"]["roles"]
    assert broad["executor"]["characters_sent"] > 3 * sum(broad[r]["characters_sent"] for r in ROLES if r != "executor")


def test_totals_sum_the_questions(replayed):
    report, rows = replayed.report, replayed.report["questions"]
    totals = report["totals"]
    assert (totals["questions"], totals["skipped"], totals["errors"]) == (4, 0, 0)
    assert totals["verdicts"] == {"PASS": 4, "LOW_CONFID": 0, "REJECT": 0} and totals["pass_rate"] == 1.0
    assert (totals["rejected_claims"], totals["honest_rejected"]) == (1, 1)
    assert (totals["facts_cited"], totals["facts_expected"]) == (6, 6)
    for key in ("requests", "failed_requests", "prompt_tokens", "completion_tokens", "characters_sent"):
        assert totals[key] == sum(row[key] for row in rows), key
        assert totals[key] == sum(role[key] for role in totals["roles"].values()), key
    recorded = [t.usage(role) for t in replayed.transcripts.values() for role in ROLES]
    assert (totals["prompt_tokens"], totals["completion_tokens"]) == tuple(map(sum, zip(*recorded, strict=True)))
    assert totals["requests"] == len(replayed.server.requests) == 23
    assert totals["seconds"] >= sum(row["seconds"] for row in rows) and report["startup_seconds"] >= 0


# --- human output, thresholds, roles -------------------------------------------------------------------


@pytest.fixture
def server():
    """A server replaying the transcripts of every question (a run may ask any of them)."""
    with ScriptedServer(Replay([load(case) for case in CASES])) as running:
        yield running


def test_human_output_one_row_per_question_then_roles_and_totals(server):
    run = _eval(server, *_cases("demo-narrow-cpu-en", "demo-narrow-redis-timeout-en"))

    assert run.exit_code == 0, run
    lines = run.stdout.splitlines()
    cells = {
        line.split("│")[1].strip(): [cell.strip() for cell in line.split("│")[2:-1]]
        for line in lines
        if line.startswith("│")
    }
    cpu = load("demo-narrow-cpu-en")
    prompt = sum(cpu.usage(role)[0] for role in ROLES)
    completion = sum(cpu.usage(role)[1] for role in ROLES)
    assert cells["demo-narrow-cpu-en"][:5] == ["PASS", "0/0", "1/1", "P1 E2 V1 C1", f"{prompt}/{completion}"]
    assert cells["demo-narrow-redis-timeout-en"][:4] == ["PASS", "1/1", "1/1", "P1 E3 V1 C1"]
    assert cells["executor"][:3] == [MODEL, "5", "0"]  # the per-role table
    assert any(
        line.startswith("rejected demo-narrow-redis-timeout-en round 1 claim-2 (honest; claim.facts_in_excerpts)")
        for line in lines
    )
    assert (
        "PASS 2 · LOW_CONFID 0 · REJECT 0 · pass rate 100% · errors 0 · skipped 0 · honest rejected 1/1" in run.stdout
    )


@pytest.mark.parametrize(
    "option, code",
    [(("--max-honest-rejected", "0"), 1), (("--max-honest-rejected", "1"), 0), (("--fail-under", "1"), 0)],
)
def test_thresholds_exit_1_when_missed_and_print_the_report_either_way(server, option, code):
    run = _eval(server, *_cases("demo-narrow-redis-timeout-en"), "--json", *option)

    assert run.exit_code == code, run
    assert run.json()["totals"]["honest_rejected"] == 1


def test_the_model_plays_only_the_roles_named(server):
    run = _eval(server, *_cases("demo-narrow-cpu-en"), "--roles", "executor", "--json", "--progress")

    assert run.exit_code == 0, run
    report = run.json()
    assert report["roles"] == ["executor"]
    assert report["models"] == {
        "planner": "offline",
        "executor": MODEL,
        "verifier": "offline",
        "composer": "offline",
    } | {"api_base": server.url + "/v1"}
    (row,) = report["questions"]
    assert set(row["roles"]) == {"executor"} and row["requests"] == 2 == len(server.requests)
    assert {question_of(body) for body in server.requests} == {load("demo-narrow-cpu-en").question}
    assert row["verdict"] == "PASS" and row["facts_cited"] == 1
    assert run.stderr.startswith("✓ demo-narrow-cpu-en · PASS · honest rejected 0/0 · ")


# --- failing before the questions -------------------------------------------------------------------------


def test_a_missing_key_fails_before_any_question(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    run = evcli("eval", "model", "--model", "openai/gpt-4o-mini", "--env", "demo")

    assert_clean_error(run, 2, "OPENAI_API_KEY is not set: the planner, executor, verifier and composer model")


def test_a_server_nobody_answers_at_fails_before_any_question():
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    run = evcli("eval", "model", "--model", MODEL, "--api-base", f"http://127.0.0.1:{port}/v1", "--roles", "verifier")

    assert_clean_error(run, 1, f"nothing answers at http://127.0.0.1:{port}/v1", "the verifier model server")


def test_a_model_that_answers_nothing_stops_after_the_first_question():
    with ScriptedServer(lambda body: error(401, "Incorrect API key provided")) as refusing:
        run = _eval(refusing, *_cases(*CASES))

    assert_clean_error(
        run, 1, "the model answered no request of the first question (demo-narrow-cpu-en)", "not set or invalid"
    )
    assert {question_of(body) for body in refusing.requests} == {load("demo-narrow-cpu-en").question}


@pytest.mark.parametrize(
    "args, fragment",
    [
        (("--roles", "planner,judge"), "--roles takes roles from planner, executor, verifier, composer"),
        (("--case", "no-such-question"), "no question with id 'no-such-question'"),
        (("--env", "nowhere"), "no question of environment 'nowhere'"),
    ],
)
def test_bad_selections_are_usage_errors(args, fragment):
    assert_clean_error(evcli("eval", "model", "--model", MODEL, *args), 2, fragment)


def test_env_selects_that_environments_questions():
    cases = select_cases(None, "edge")
    assert cases and {case.env for case in cases} == {"edge"}
    with pytest.raises(BadInput):
        select_cases(None, "demo", ["edge-narrow-tls-alert-en"])  # an id of another environment


def test_request_characters_count_texts_arguments_and_schemas():
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": [{"type": "text", "text": "abc", "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "t", "arguments": '{"a":1}'}}]},
        {"role": "tool", "content": "xy"},
    ]
    assert request_characters(messages, [{"n": 1}]) == 3 + 7 + 2 + len('[{"n":1}]')


def test_transcripts_are_questions_of_the_packaged_suites():
    """A transcript answers the question its case asks today (a renamed question would never be replayed)."""
    questions = {case.id: case.question for case in select_cases(None)}
    transcripts: list[Transcript] = [load(case) for case in CASES]
    assert all(questions[t.case] == t.question for t in transcripts)
