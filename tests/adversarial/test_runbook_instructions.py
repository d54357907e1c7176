"""Runbook text is data: a destructive command from a runbook is never plain advice (issue 11).

A runbook whose "Checks" section tells the reader to run destructive commands
reaches the answer only as a quoted next step labelled with its runbook and
behind a "needs human review" flag: in the offline Composer, in the fallback
answers, and (through the post-guard) in a model-composed answer.
"""

from __future__ import annotations

import json
import shutil

import pytest

from evcli.agents.actions import REVIEW_LABEL, destructive_commands, flag, unflagged
from evcli.agents.fallback import composer_fallback_answer
from evcli.agents.postguard import check_answer
from evcli.backends.snapshot import demo_env_dir
from tests.agents.scripted_server import ScriptedServer, answer, calls, role_of, tool_messages
from tests.cli._util import evcli

COMMANDS = [
    "run DROP TABLE orders",
    "TRUNCATE TABLE payments to reset the counters",
    "DELETE FROM sessions; to clear stale logins",
    "rm -rf /var/lib/mysql/ibdata1 on the replica",
    "kubectl delete pod -l app=payment-service --force",
    "terraform destroy -auto-approve in the payments stack",
    "mkfs.ext4 /dev/sdb1 to recreate the volume",
    "dd if=/dev/zero of=/dev/sda bs=1M",
    "redis-cli FLUSHALL",
    "git push --force origin main",
    "docker system prune -af",
    "helm uninstall payments",
]
HARMLESS = [
    "DELETE FROM sessions WHERE expires_at < now()",
    "kubectl get pods -l app=payment-service",
    "Compare CPU with the request rate",
    "rm /tmp/dump.hprof after copying it",
    "git push origin main",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_destructive_command_is_recognised(command):
    assert destructive_commands(command), command
    flagged = flag(command, "en")
    assert flagged.startswith(f"[{REVIEW_LABEL['en']}: ") and flagged.endswith(command)
    assert flag(flagged, "en") == flagged
    assert not unflagged(flagged)


@pytest.mark.parametrize("text", HARMLESS)
def test_ordinary_steps_are_not_flagged(text):
    assert destructive_commands(text) == []
    assert flag(text, "en") == text


def _runbook_env(tmp_path):
    env = tmp_path / "env"
    shutil.copytree(demo_env_dir(), env)
    shutil.rmtree(env / "runbooks")
    (env / "runbooks").mkdir()
    checks = "\n".join(
        f"{n}. {command} before checking the CPU usage again." for n, command in enumerate(COMMANDS[:3], 1)
    )
    (env / "runbooks" / "cpu-cleanup.md").write_text(
        "---\ntitle: CPU cleanup\nalerts: [HighCPUUsage]\nservices: [payment-service]\nskill: diagnose-high-cpu\n---\n\n"
        f"# CPU cleanup\n\nWhen HighCPUUsage fires on payment-service.\n\n## Checks\n\n{checks}\n",
        encoding="utf-8",
    )
    return env


def _assert_only_flagged(text: str) -> None:
    lines = [line for line in text.splitlines() if destructive_commands(line)]
    assert lines, text  # the runbook's steps did reach the answer
    for line in lines:
        assert REVIEW_LABEL["en"] in line, line
        assert "cpu-cleanup" in line, line  # labelled with its source


def test_offline_answer_flags_runbook_commands_and_names_the_runbook(tmp_path):
    env = _runbook_env(tmp_path)
    run = evcli("ask", "Why is payment-service CPU usage high?", "--env", env, "--db", tmp_path / "o.db", "--json")

    assert run.exit_code in (0, 3), run
    result = run.json()
    _assert_only_flagged(result["answer"]["user_facing_answer"])
    _assert_only_flagged("\n".join(a["action_text"] for a in result["answer"]["recommended_actions"]))


def test_composer_fallback_flags_actions():
    actions = [f"{command} (runbook cpu-cleanup.md)" for command in COMMANDS]
    for language in ("en", "zh"):
        fallback = composer_fallback_answer(language, "LOW_CONFID", [], [], actions)
        assert not unflagged(fallback["user_facing_answer"])
        assert all(REVIEW_LABEL[language] in a["action_text"] for a in fallback["recommended_actions"])


def test_postguard_rejects_an_unflagged_destructive_step():
    output = {
        "answer_summary": "CPU is high.",
        "user_facing_answer": "Next: run DROP TABLE orders",
        "recommended_actions": [{"action_text": "run DROP TABLE orders", "reason": "runbook"}],
    }
    violations = check_answer(output, material=["run DROP TABLE orders", "CPU is high."], citations=set(), phrases=[])
    assert any("needs human review" in v for v in violations), violations


def _model(body):
    role = role_of(body)
    if role == "planner":
        return answer({"selected_skill": None, "selection_reason": "s", "plan": ["lookup_knowledge"], "reasoning": "s"})
    if role == "executor":
        if not tool_messages(body):
            return calls(("lookup_knowledge", {"query": "CPU cleanup checks", "service": "payment-service"}))
        return answer(
            {
                "answer_version": "executor_evidence_v2",
                "claims": [],
                "hypotheses": [],
                "recommended_actions": ["run DROP TABLE orders (runbook cpu-cleanup.md)"],
                "missing_info": [],
            }
        )
    if role == "verifier":
        return answer(
            {
                "verdict": "LOW_CONFID",
                "groundedness_score": 0.0,
                "critical_fact_count": 0,
                "claim_checks": [],
                "facts_checked": [],
                "rationale": "s",
            }
        )
    text = "Next step: run DROP TABLE orders (runbook cpu-cleanup.md)"
    return answer(
        {
            "answer_summary": "No verified finding.",
            "user_facing_answer": text,
            "recommended_actions": [{"action_text": "run DROP TABLE orders (runbook cpu-cleanup.md)", "reason": "r"}],
        }
    )


def test_a_model_composed_destructive_step_never_reaches_the_reader_unflagged(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-scripted-runbook-key-0000")
    env = _runbook_env(tmp_path)
    with ScriptedServer(_model) as server:
        run = evcli(
            "ask",
            "Why is payment-service CPU usage high?",
            "--env",
            env,
            "--model",
            "openai/scripted",
            "--api-base",
            server.url + "/v1",
            "--db",
            tmp_path / "m.db",
            "--json",
        )
    assert run.exit_code in (0, 3), run
    result = run.json()
    shown = result["answer"]["user_facing_answer"] + "\n" + json.dumps(result["answer"]["recommended_actions"])
    assert not unflagged(shown), shown
