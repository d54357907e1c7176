"""evcli/core/text.py: the one set of negations and fact tokens the Gatekeeper and the offline Verifier share."""

from __future__ import annotations

import pytest

from evcli.core.text import (
    comparable,
    critical_tokens,
    is_negation,
    mixed_case_words,
    negated,
    negations,
    normalize,
)
from evcli.gatekeeper.facts import missing_facts


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


def _spelled_as_written(raw: str) -> tuple[frozenset[str], list[str]]:
    """(mixed_case_words, critical_tokens) of raw as their docstrings define them, token by token."""
    import re
    import unicodedata

    from evcli.core.text import RAW_TOKEN, TOKEN, TOKEN_TRAILING_PUNCTUATION, fact_tokens

    raw_tokens = [
        token.rstrip(TOKEN_TRAILING_PUNCTUATION) for token in RAW_TOKEN.findall(unicodedata.normalize("NFKC", raw))
    ]
    mixed = frozenset(
        token.casefold()
        for token in raw_tokens
        if token[1:] != token[1:].lower() and token != token.upper() and not re.fullmatch(r"[A-Z]{2,}s", token)
    )
    assert TOKEN.pattern == r"[a-z0-9][a-z0-9._:/%+-]*"  # what fact_tokens splits on, as this reference assumes
    critical = [
        token
        for token in fact_tokens(normalize(raw))
        if token in mixed or re.search(r"[0-9]|[a-z0-9][-_.:/][a-z0-9]", token)
    ]
    return mixed, critical


def test_mixed_case_words_and_critical_tokens_are_what_their_definitions_give():
    import random

    rng = random.Random(11)
    pieces = [
        "HikariCP",
        "GCs",
        "URLs.",
        "URLS",
        "aB",
        "Ab",
        "ab",
        "AB",
        "x9",
        "9X",
        "HighCPU-",
        "ＨｉｋａｒｉＣＰ",
        "Ö",
        "İ",
    ]
    pieces += [
        "host-1",
        "a.b",
        "92%",
        "v1.2.",
        "order-service:",
        "a_B",
        "-",
        ".",
        ":",
        "/",
        "+",
        " ",
        "\n",
        "的",
        "Ab.",
    ]
    compared = 0
    for _ in range(2000):
        raw = "".join(rng.choice(pieces) + rng.choice(["", " ", ", ", "."]) for _ in range(rng.randint(0, 9)))
        mixed, critical = _spelled_as_written(raw)
        assert mixed_case_words(raw) == mixed, raw
        assert critical_tokens(normalize(raw), mixed) == critical, raw
        compared += len(mixed) + len(critical)
    assert compared > 2000  # the texts do hold identifiers and numbers


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
    from evcli.core.text import json_unescaped

    assert json_unescaped(text) == decoded


# --- PhraseFinder: phrase_pattern's matches by one Aho-Corasick pass ------------------------------------


def _phrase_texts(seed: int, phrases: list[str], count: int) -> list[str]:
    """Random texts that put the phrases (in any case) next to word characters, hyphens, spaces, CJK and
    punctuation, overlapping and nested, so every boundary case of phrase_pattern comes up."""
    import random

    rng = random.Random(seed)
    glue = [" ", "", "-", "_", "a", "9", ".", "，", "的", "\n", "x-", " the ", "Ö", "İ"]
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 8)):
            phrase = rng.choice(phrases)
            if rng.random() < 0.3:
                phrase = phrase.upper()
            elif rng.random() < 0.3:
                phrase = phrase[: rng.randint(1, len(phrase))]
            parts += [rng.choice(glue), phrase]
        texts.append("".join(parts) + rng.choice(glue))
    return texts


def test_phrase_finder_finds_what_phrase_pattern_finds():
    from evcli.core.text import PhraseFinder, phrase_pattern
    from evcli.gatekeeper.wordtables import tables

    t = tables()
    vocabularies = [
        tuple(sorted({*t.states, *t.directions, *t.ranks})),
        ("not", "not yet", "yet", "firing", "still firing", "fir", "峰值", "峰", "k8s节点", "k8s"),
        ("a-b", "b", "a", "ab", "a b"),
    ]
    compared = 0
    for seed, phrases in enumerate(vocabularies):
        finder, pattern = PhraseFinder(phrases), phrase_pattern(phrases)
        for text in _phrase_texts(seed, list(phrases), 400):
            expected = [(m.start(), m.end(), m.group(0).lower()) for m in pattern.finditer(text)]
            assert list(finder.finditer(text)) == expected, text
            compared += len(expected)
    assert compared > 500  # the texts do hold phrases to find


def test_phrase_finder_without_phrases_finds_nothing():
    from evcli.core.text import PhraseFinder

    assert list(PhraseFinder(()).finditer("anything at all")) == []
    assert PhraseFinder(("", "")).search("text") is None
