"""Answers that explain (issue 23): every Composer opens with a short diagnosis — what is wrong, the
likely cause as a hypothesis, the chain from it to the symptoms — then the findings, then next steps.

The offline Composer and the composer fallback build it from the allowed claims alone (each fact
cited); the model Composer's prompt asks for the same structure, and an answer written that way
passes the post-guard over real HTTP."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from evcli.agents.composer import diagnosis_section
from evcli.agents.fallback import composer_fallback_answer
from evcli.agents.projection import AllowedClaim, AllowedEvidence, diagnosis_outline
from evcli.agents.roles import Models
from evcli.backends.snapshot import demo_env_dir
from evcli.gatekeeper.rules import load_rules
from evcli.messages import Catalogue, catalogue
from evcli.pipeline import Pipeline
from evcli.store.db import TraceStore
from tests.agents.scripted_server import ScriptedServer, answer
from tests.cli._util import evcli

KEY = "sk-scripted-diagnosis-key-0000"
_MARKER = re.compile(r"\[(\d+)\]")
EN, ZH = catalogue("en"), catalogue("zh")


def _lead(words: Catalogue, message_id: str) -> str:
    """A catalogue template's words before its first value: what a line of that kind starts with."""
    return words.messages[message_id].split("{", 1)[0]


def _asked(db_path: Path, env: str | Path, question: str) -> tuple[dict[str, Any], Any]:
    run = evcli("ask", "--env", env, question, "--json", "--db", db_path)
    assert run.exit_code == 0, run
    result = run.json()
    with TraceStore(db_path) as store:
        return result, store.load(result["session_id"])


def _section(answer_text: str, words: Catalogue) -> list[str]:
    """The diagnosis items: the lines between the opening heading and the findings heading."""
    lines = answer_text.splitlines()
    assert lines[0] == words("compose.diagnosis"), answer_text
    return lines[1 : lines.index(words("compose.findings"))]


def _first_suspect(document: Any) -> str:
    ranking = [i for i in document.invocations if i.tool_name == "find_changes"][-1]
    return str(ranking.output["suspects"][0]["service"])


def _line(section: list[str], words: Catalogue, message_id: str) -> str:
    (line,) = [item for item in section if item.startswith("- " + _lead(words, message_id))]
    return line


# --- the offline Composer, through `evcli ask` -------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "question", "language"),
    [
        ("demo", "What is the root cause?", "en"),
        ("edge", "Why is checkout-api failing?", "en"),
        ("edge", "结算服务为什么失败？根因是什么？", "zh"),
    ],
    ids=["demo root cause", "edge checkout incident", "edge in Chinese"],
)
def test_the_answer_opens_with_a_cited_diagnosis_naming_the_ranked_cause_as_a_hypothesis(
    env, question, language, db_path
):
    words = catalogue(language)
    result, document = _asked(db_path, env, question)

    assert (result["verdict"], result["fallback"]) == ("PASS", None)
    compose = document.latest_stage("compose")
    assert compose.parse_status["postguard"] == []  # the offline answer passed the post-guard
    section = _section(result["answer"]["user_facing_answer"], words)
    citations = {claim["citation"] for claim in result["claims"]}
    cause = next(claim for claim in result["claims"] if claim["claim_type"] == "root_cause")
    ranked = _first_suspect(document)
    assert cause["services"][:1] == [ranked]

    # the ranked cause, stated as a hypothesis (never as fact) and cited
    cause_line = _line(section, words, "compose.diagnosis.cause")
    assert f"{ranked}," in cause_line and cause_line.endswith(f"[{cause['citation']}]{words('sentence_end')}")
    # what is wrong: symptom claims, each cited; the chain starts at the cause's service
    wrong_line = _line(section, words, "compose.diagnosis.wrong")
    wrong = [int(n) for n in _MARKER.findall(wrong_line)]
    assert wrong and all(claim["claim_type"] == "symptom" for claim in result["claims"] if claim["citation"] in wrong)
    chain_line = _line(section, words, "compose.diagnosis.chain")
    first_step = chain_line.removeprefix("- " + _lead(words, "compose.diagnosis.chain"))
    assert first_step.startswith(f"{ranked} [{cause['citation']}]"), chain_line
    # every item cites, and only allowed claims
    for item in section:
        assert {int(n) for n in _MARKER.findall(item)} <= citations and _MARKER.search(item), item
    # then the findings, then the next steps
    answer_lines = result["answer"]["user_facing_answer"].splitlines()
    assert answer_lines.index(words("compose.findings")) < answer_lines.index(words("compose.next_steps"))
    other = ZH if words is EN else EN
    assert not any(line.startswith("- " + _lead(other, "compose.diagnosis.cause")) for line in section)


def test_a_caller_the_ranking_ties_to_the_cause_is_a_step_of_the_chain(tmp_path, db_path):
    """With a declared topology, find_changes names the callers its first suspect affects; the chain
    runs through them to what is wrong on them, each step cited."""
    env = Path(shutil.copytree(demo_env_dir(), tmp_path / "demo-topology"))
    with (env / "env.toml").open("a", encoding="utf-8") as toml:
        toml.write('\n[topology]\norder-service = ["user-service", "payment-service"]\n')
    result, document = _asked(db_path, env, "Why is order-service failing?")

    assert (result["verdict"], result["fallback"]) == ("PASS", None)
    cause = next(claim for claim in result["claims"] if claim["claim_type"] == "root_cause")
    assert cause["services"] == ["user-service"] == [_first_suspect(document)]
    caller = next(
        claim
        for claim in result["claims"]
        if claim["claim_type"] == "symptom" and claim["evidence"][0]["tool_name"] == "find_changes"
    )
    assert caller["services"] == ["order-service"]
    assert "callers affected after it: order-service" in cause["evidence"][0]["text"]
    section = _section(result["answer"]["user_facing_answer"], EN)
    chain = _line(section, EN, "compose.diagnosis.chain")
    seen = [c["citation"] for c in result["claims"] if c["claim_type"] == "symptom" and c is not caller][:2]
    markers = " ".join(f"[{n}]" for n in seen)
    assert f"→ order-service [{caller['citation']}] → what is wrong {markers}." in chain, chain


# --- the outline, on hand-made allowed claims --------------------------------------------------------


def _claim(citation: int, claim_type: str, text: str, service: str, invocation: int, ref: str = "") -> AllowedClaim:
    return AllowedClaim(
        citation=citation,
        claim_id=f"claim-{citation}",
        claim_type=claim_type,
        claim_text=text,
        no_evidence=False,
        evidence=[AllowedEvidence(tool_name="t", source_invocation_id=invocation, raw_path="$.x[0]", text=ref or text)],
        services=[service],
    )


SUSPECT = "rank 1: db, fault=cpu, onset 10:00, score=9.5; changes: cpu rose; callers affected after it: api"
CLAIMS = [
    _claim(1, "root_cause", f"Likely root cause (a hypothesis to confirm): {SUSPECT.split(';')[0]}.", "db", 1, SUSPECT),
    _claim(2, "observation", "db cpu rose: 90% from 10:00.", "db", 1),
    _claim(3, "symptom", "api p99 rose: 2s from 10:02.", "api", 1),
    _claim(4, "symptom", "web p99 rose: 3s from 10:03.", "web", 1),  # not named by the suspect: no step
    _claim(5, "symptom", "api logged ERROR at 10:05: 503.", "api", 2),
    _claim(6, "root_cause", "Likely root cause (a hypothesis to confirm): rank 2: cache.", "cache", 1),
]


def test_the_chain_runs_only_through_callers_the_causes_own_evidence_names():
    outline = diagnosis_outline(CLAIMS)
    assert outline is not None and outline.cause is CLAIMS[0]
    assert [(step.service, step.citations, step.symptoms) for step in outline.chain] == [
        ("db", [1, 2], []),
        ("api", [3], [5]),
    ]
    assert [claim.citation for claim in outline.wrong] == [5, 3]  # on the chain, not yet cited by it, first
    assert [claim.citation for claim in outline.others] == [6]
    assert diagnosis_section("en", CLAIMS) == [
        "Diagnosis:",
        "- What is wrong: api logged ERROR at 10:05: 503 [5]; api p99 rose: 2s from 10:02 [3].",
        "- Likely cause, a hypothesis to confirm (not an established fact): rank 1: db, fault=cpu, onset 10:00, "
        "score=9.5 [1].",
        "- From cause to symptom, if the hypothesis holds: db [1] [2] → api [3] → what is wrong [5].",
        "- Other possible causes, hypotheses too: cache [6].",
    ]


def test_without_a_ranked_cause_none_is_named_and_without_symptoms_there_is_no_diagnosis():
    symptoms_only = [claim for claim in CLAIMS if claim.claim_type != "root_cause"]
    section = diagnosis_section("zh", symptoms_only)
    assert section[0] == "诊断：" and section[2] == "- " + ZH("compose.diagnosis.no_cause")
    assert not any("→" in line for line in section)
    observations = [CLAIMS[1], CLAIMS[0].model_copy(update={"claim_type": "root_cause", "no_evidence": True})]
    assert diagnosis_section("en", observations) == []  # a no-evidence claim is never a cause


# --- the composer fallback keeps the explanation -----------------------------------------------------


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_composer_fallback_keeps_the_verified_hypotheses_and_the_chain(language):
    words = catalogue(language)
    runbook = "Possible cause (from runbook runbooks/db.md): a hot query saturates the CPU."
    fallback = composer_fallback_answer(language, "PASS", CLAIMS, ["no profile"], ["Profile db."], [runbook])

    lines = fallback["user_facing_answer"].splitlines()
    assert lines[: len(diagnosis_section(language, CLAIMS))] == diagnosis_section(language, CLAIMS)
    cause_line = _line(lines, words, "compose.diagnosis.cause")
    assert "rank 1: db, fault=cpu" in cause_line and cause_line.endswith(f"[1]{words('sentence_end')}")
    assert f"{words('fallback.hypotheses')}:" in lines
    assert "- (from runbook runbooks/db.md): a hot query saturates the CPU." in lines
    assert all(f"[{claim.citation}]" in fallback["user_facing_answer"] for claim in CLAIMS)


# --- the model Composer, over real HTTP --------------------------------------------------------------


def _payload(body: dict[str, Any]) -> dict[str, Any]:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return json.loads(user.split("\n", 1)[1])


def _system(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "system")


def structured_answer(payload: dict[str, Any], chain_citation: int | None = None) -> dict[str, Any]:
    """What a capable model writes when it follows the prompt: the diagnosis from the allowed claims
    (symptoms, the first root_cause as a hypothesis, the chain), the findings, the next steps."""
    claims = payload["allowed_claims"]
    cause = next(claim for claim in claims if claim["claim_type"] == "root_cause")
    symptoms = [claim for claim in claims if claim["claim_type"] == "symptom"][:2]
    service = cause["services"][0]
    seen = " ".join(f"[{claim['citation']}]" for claim in symptoms)
    lines = [
        "Diagnosis:",
        "- What is wrong: " + "; ".join(f"{c['claim_text'].rstrip('.')} [{c['citation']}]" for c in symptoms) + ".",
        f"- Likely cause, a hypothesis to confirm and not yet confirmed: {service} [{cause['citation']}].",
        f"- From cause to symptom, if it holds: {service} [{chain_citation or cause['citation']}] → {seen}.",
        "Findings:",
        *(
            f"- {'This query found no matching evidence' if c['no_evidence'] else c['claim_text'].rstrip('.')} "
            f"[{c['citation']}]."
            for c in claims
        ),
        "Next steps:",
        *(f"- {action}" for action in payload["recommended_actions"]),
    ]
    return {
        "answer_summary": f"Likely cause: {service} [{cause['citation']}].",
        "recommended_actions": [],
        "user_facing_answer": "\n".join(lines),
    }


def _composer_pipeline(store: TraceStore, server: ScriptedServer) -> Pipeline:
    """Every role offline but the Composer, which the scripted server plays."""
    models = Models(default="offline", per_role={"composer": "openai/scripted"}, api_base=server.url + "/v1")
    return Pipeline(store=store, rules=load_rules(), models=models)


def test_the_model_composer_is_asked_for_the_structure_and_an_answer_in_it_passes_the_post_guard(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server = ScriptedServer(lambda body: answer(structured_answer(_payload(body))))
    with server, TraceStore(tmp_path / "trace.db") as store:
        result = _composer_pipeline(store, server).ask("What is the root cause?")

    (request,) = server.requests
    prompt = _system(request)
    parts = ["Diagnosis:", "诊断：", "What is wrong", "likely cause", "hypothesis", "chain", "Findings", "next steps"]
    positions = [prompt.find(part) for part in parts]
    assert -1 not in positions and positions == sorted(positions), dict(zip(parts, positions, strict=True))
    assert "never as a fact" in prompt and "citation marker" in prompt
    sent = _payload(request)
    assert all("services" in claim for claim in sent["allowed_claims"])
    assert (result.verdict, result.fallback) == ("PASS", None)  # the post-guard let it through
    assert result.answer.user_facing_answer == structured_answer(sent)["user_facing_answer"]
    assert result.answer.user_facing_answer.startswith("Diagnosis:\n- What is wrong: ")


def test_a_structured_answer_citing_what_it_was_not_given_is_refused_and_the_fallback_explains(tmp_path, monkeypatch):
    """The structure is no pass: a chain step citing a claim number the Composer was not given is
    refused twice, and the fallback still opens with the diagnosis, the cause kept as a hypothesis."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server = ScriptedServer(lambda body: answer(structured_answer(_payload(body), chain_citation=999)))
    with server, TraceStore(tmp_path / "trace.db") as store:
        result = _composer_pipeline(store, server).ask("What is the root cause?")
        composes = [s for s in store.load(result.session_id).stage_outputs if s.stage == "compose"]

    assert len(server.requests) == 2 and "citation [999] is not an allowed claim" in json.dumps(
        _payload(server.requests[1])["retry_reason"]
    )
    assert (result.verdict, result.fallback) == ("PASS", "composer")
    assert [s.status for s in composes] == ["INVALID_OUTPUT", "INVALID_OUTPUT", "COMPLETED"]
    text = result.answer.user_facing_answer
    cause = next(claim for claim in result.claims if claim.claim_type == "root_cause")
    lines = text.splitlines()
    assert lines[0] == EN("compose.diagnosis") and lines[lines.index("") + 1] == f"{EN('fallback.claims')}:"
    cause_line = _line(lines[1 : lines.index("")], EN, "compose.diagnosis.cause")
    assert cause_line.endswith(f"[{cause.citation}].") and f"{cause.services[0]}," in cause_line
    assert "[999]" not in text
