"""evcli/text.py: the one set of negations and fact tokens the Gatekeeper and the offline Verifier share."""

from __future__ import annotations

import pytest

from evcli.gatekeeper.facts import missing_facts
from evcli.text import (
    comparable,
    critical_tokens,
    is_negation,
    mixed_case_words,
    negated,
    negations,
    normalize,
)


@pytest.mark.parametrize(
    "word",
    [
        "not",
        "no",
        "non",
        "never",
        "without",
        "cannot",
        "isn't",
        "不",
        "没",
        "无",
        "未",
        "非",
        "否",
        "勿",
        "别",
    ],
)
def test_every_negation_of_either_former_copy_is_one(word):
    assert is_negation(word)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("请勿重启 payment-service", True),
        ("别重启", True),
        ("payment-service is not available", True),
        ("日志级别 ERROR", False),  # 级别 = level
        ("非常慢", False),  # 非常 = very
        ("无论如何", False),  # 无论 = whatever
        ("payment-service is available", False),
    ],
)
def test_negated_leaves_out_words_that_only_contain_a_negation_character(text, expected):
    assert negated(normalize(text)) is expected


def test_negations_are_in_order_of_appearance():
    assert negations(normalize("不是 no, 没有 never")) == ["不", "no", "没", "never"]


def test_comparable_keeps_ports_whole_only_when_asked():
    assert comparable("timeout: fraud-check.internal:8443") == "timeout: fraud-check.internal: 8443"
    assert comparable("timeout: fraud-check.internal:8443", keep_ports=True) == "timeout: fraud-check.internal:8443"


def test_fact_tokens_and_mixed_case_words():
    assert mixed_case_words("HikariCP GCs Connection HighCPUUsage") == {
        "hikaricp",
        "highcpuusage",
    }
    assert critical_tokens(normalize("pool HikariCP at 92% on host-1"), mixed_case_words("HikariCP")) == [
        "hikaricp",
        "92%",
        "host-1",
    ]


def test_the_gatekeeper_reads_the_shared_set():
    assert missing_facts("请勿重启 order-service", ["order-service restarted"]) == ["negation"]


@pytest.mark.parametrize(
    ("text", "decoded"),
    [
        (r"payment failed for userId=42\n", "payment failed for userId=42\n"),
        (r"order \"ORD-7\" by zo\u00EB\tcaf\u00e9 \/cart \\ done", 'order "ORD-7" by zoë\tcafé /cart \\ done'),
        (r"mood \ud83d\ude00 and a lone \ud83d", "mood \U0001f600 and a lone \ufffd"),
        (r"C:\path \x no escape", r"C:\path \x no escape"),
        ("no backslash at all", "no backslash at all"),
    ],
)
def test_json_escapes_are_decoded_and_other_text_kept(text, decoded):
    from evcli.text import json_unescaped

    assert json_unescaped(text) == decoded
