"""The offline engine on the demo environment: narrow and broad, positive and negative, English and Chinese.

Each question is checked for its verdict, the claim types, the evidence it must
cite (tool + text), the claim count of narrow questions, and the absence of
overstatement. Every answer must also pass the post-guard (no fallback).
"""

from __future__ import annotations

import pytest

from evcli.gatekeeper.rules import load_rules
from evcli.pipeline import Pipeline
from evcli.store.db import TraceStore
from tests.conftest import REPO

OVERSTATEMENT = (
    "does not exist",
    "ruled out",
    "is healthy",
    "no problem",
    "不存在",
    "已排除",
    "确认没有",
    "系统正常",
    "没有问题",
)

# question, narrow, expected claim types (subset), evidence that must be cited (tool, text fragment)
QUESTIONS = [
    (
        "Only confirm whether payment-service has a HighCPUUsage alert firing",
        True,
        {"observation"},
        [("query_metrics", "current=92%")],
    ),
    (
        "只确认 inventory-service 是否存在 HikariCP 连接池耗尽日志。",
        True,
        {"negative_observation"},
        [("query_logs", "query=inventory-service")],
    ),
    (
        "Is there a Redis timeout in payment-service logs?",
        True,
        {"observation"},
        [("query_logs", "redis-cluster-01:6379")],
    ),
    (
        "Only confirm whether user-service has slow MySQL queries on mysql-primary-01",
        True,
        {"observation"},
        [("query_logs", "mysql-primary-01")],
    ),
    (
        "Does order-service have HikariCP connection pool exhaustion errors?",
        True,
        {"observation"},
        [("query_logs", "waiting=2")],
    ),
    (
        "Check whether order-service has a deadlock in the last 30 minutes",
        True,
        {"negative_observation"},
        [("query_logs", "order-service deadlock")],
    ),
    ("只确认 user-service 是否有 SlowResponse 告警", True, {"observation"}, [("query_metrics", "current=4.2s")]),
    (
        "Why is order-service failing? It keeps restarting and checkout requests time out.",
        False,
        {"observation", "symptom"},
        [("query_metrics", "current=91%"), ("query_logs", "exit code 137")],
    ),
    (
        "Why is user-service slow?",
        False,
        {"observation", "symptom"},
        [("query_metrics", "current=4.2s"), ("query_logs", "mysql-primary-01")],
    ),
    ("What is wrong with node-worker-01 disk?", False, {"observation"}, [("query_metrics", "DiskSpaceLow")]),
    (
        "为什么 order-service 一直重启？",
        False,
        {"observation", "symptom"},
        [("query_metrics", "HighMemoryUsage"), ("query_logs", "OOMKilled")],
    ),
    ("支付服务 CPU 为什么这么高？", False, {"observation"}, [("query_metrics", "current=92%")]),
    (
        "Diagnose payment-service high CPU",
        False,
        {"observation", "symptom"},
        [("query_metrics", "HighCPUUsage"), ("query_logs", "payment-service")],
    ),
]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    store = TraceStore(tmp_path_factory.mktemp("pipeline") / "evcli.db")
    return Pipeline(store=store, rules=load_rules(REPO / "rules.toml"))


@pytest.mark.parametrize(("question", "narrow", "claim_types", "cited"), QUESTIONS, ids=[q[0][:40] for q in QUESTIONS])
def test_demo_question(pipeline, question, narrow, claim_types, cited):
    result = pipeline.ask(question)
    assert result.verdict == "PASS", result.answer.user_facing_answer
    assert result.gate.severity == "none"
    assert result.fallback is None
    types = {claim.claim_type for claim in result.claims}
    assert claim_types <= types
    if narrow:
        assert 1 <= len(result.claims) <= 2
        assert types <= {"observation", "negative_observation"}
    for tool, fragment in cited:
        assert any(
            evidence.tool_name == tool and fragment in (evidence.text or "")
            for claim in result.claims
            for evidence in claim.evidence
        ), (tool, fragment)
    answer = result.answer.user_facing_answer + result.answer.answer_summary
    assert not [phrase for phrase in OVERSTATEMENT if phrase in answer.lower()]
    for claim in result.claims:
        assert f"[{claim.citation}]" in answer
    language_is_chinese = any("\u4e00" <= char <= "\u9fff" for char in question)
    assert any("\u4e00" <= char <= "\u9fff" for char in answer) == language_is_chinese

    document = pipeline.store.load(result.session_id)
    assert document.run.status == "completed" and document.run.verdict == "PASS"
    assert document.run.config.task_scope == ("narrow" if narrow else "broad")
    negative = [c for c in result.claims if c.claim_type == "negative_observation"]
    assert all(e.raw_path == "$.no_evidence" for c in negative for e in c.evidence)


def test_runs_are_deterministic(pipeline):
    first = pipeline.ask("Why is user-service slow?")
    second = pipeline.ask("Why is user-service slow?")
    assert first.answer == second.answer
    assert [c.claim_text for c in first.claims] == [c.claim_text for c in second.claims]
