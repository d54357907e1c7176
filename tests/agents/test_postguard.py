from __future__ import annotations

from evcli.agents.postguard import check_answer

MATERIAL = [
    "payment-service has a firing HighCPUUsage alert: current=92%, duration=25m.",
    "HighCPUUsage, service=payment-service, state=firing, current=92%, duration=25m",
    "This query found no matching evidence: query_logs for inventory-service HikariCP returned total=0.",
]
PHRASES = ["does not exist", "ruled out", "system is healthy", "不存在", "已排除"]


def _answer(text, summary="summary", actions=()):
    return {
        "answer_summary": summary,
        "user_facing_answer": text,
        "recommended_actions": [{"action_text": a, "reason": "r"} for a in actions],
    }


def _check(output, citations=frozenset({1, 2})):
    return check_answer(output, material=MATERIAL, citations=set(citations), phrases=PHRASES)


def test_a_faithful_answer_passes():
    text = "payment-service has a firing HighCPUUsage alert at 92% for 25m [1]. This query found no matching evidence for inventory-service HikariCP [2]."
    assert _check(_answer(text)) == []


def test_overstatement_phrases_are_caught_in_any_field_and_language():
    assert _check(_answer("The HikariCP problem does not exist [2].")) == ["overstatement: 'does not exist'"]
    assert _check(_answer("ok [1]", summary="System is healthy.")) == ["overstatement: 'system is healthy'"]
    assert _check(_answer("inventory-service 的 HikariCP 问题已排除 [2]")) == ["overstatement: '已排除'"]
    assert _check(_answer("ok [1]", actions=["Consider it ruled out"])) == ["overstatement: 'ruled out'"]


def test_numbers_and_entities_must_come_from_the_material():
    assert _check(_answer("CPU is at 97% [1].")) == ["number 97 is not in the allowed material"]
    assert _check(_answer("order-service is affected [1].")) == [
        "entity 'order-service' is not in the allowed material"
    ]
    assert _check(_answer("Restart redis-cluster-02 [1].")) == [
        "entity 'redis-cluster-02' is not in the allowed material"
    ]


def test_citations_must_name_allowed_claims():
    assert _check(_answer("payment-service is firing [1][3].")) == ["citation [3] is not an allowed claim"]
    assert _check(_answer("payment-service is firing [1].")) == []


def test_bracketed_numbers_quoted_from_evidence_are_not_citations():
    material = MATERIAL + [
        "Jul 08 23:01:02 node-worker-01 kubelet[2201]: eviction manager: attempting to reclaim ephemeral-storage"
    ]
    text = "node-worker-01 kubelet[2201] is reclaiming ephemeral-storage [1]."
    assert check_answer(_answer(text), material=material, citations={1}, phrases=PHRASES) == []
    assert check_answer(_answer("see [7]"), material=material, citations={1}, phrases=PHRASES) == [
        "citation [7] is not an allowed claim"
    ]


def test_a_hyphenated_word_the_session_does_not_name_is_prose():
    session = {"payment-service", "inventory-service", "order-service"}
    answer = _answer("Consider re-creating the payment-service pod; a follow-up check is read-only [1].")
    assert (
        check_answer(answer, material=MATERIAL, citations={1, 2}, phrases=PHRASES, is_entity=session.__contains__) == []
    )
    named = _answer("order-service is affected [1].")  # a service of the session, absent from the material
    assert check_answer(
        named, material=MATERIAL, citations={1, 2}, phrases=PHRASES, is_entity=session.__contains__
    ) == ["entity 'order-service' is not in the allowed material"]
    tagged = _answer("Restart redis-cluster-02 [1].")  # digits: an identifier whatever the session says
    assert check_answer(tagged, material=MATERIAL, citations={1, 2}, phrases=PHRASES, is_entity=session.__contains__)
