"""Excerpt matching: faithful quotes pass, quotes that change a fact do not."""

from __future__ import annotations

import dataclasses
import random
import time
from itertools import pairwise

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from evcli.gatekeeper.excerpt import ExcerptMatch, match_excerpt, normalize

ALERT = "HighCPUUsage, service=payment-service, state=firing, current=92%, duration=25m"
LOG = (
    "2026-07-08 23:05:28 ERROR order-service HikariPool-1 - Connection is not available, "
    "request timed out after 30000ms (total=50, active=50, idle=0, waiting=23)"
)
NO_EVIDENCE = "query_logs returned no evidence; evidence_status=no_evidence; query=inventory-service HikariCP; total=0"
REDIS = "redis-cluster-01:6379 used_memory=3.8GB maxmemory=4GB evicted_keys=1200"
RUNBOOK_ZH = "当前查询未检索到 inventory-service 的 HikariCP 连接池耗尽日志。"
RUNBOOK_ZH_FOUND = "日志显示 order-service 的 HikariCP 连接池已经耗尽，等待线程数为 23。"


def supported(excerpt: str, ref: str) -> bool:
    return match_excerpt(excerpt, ref).supported


# --- normalize -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Current = 92 %", "current=92%"),
        ("max = 50", "max=50"),
        ("a , b ;  c : d", "a,b;c:d"),
        ("  Connection\tis\n\nnot   available  ", "connection is not available"),
        (
            "\u201cquoted\u201d \u2018single\u2019 \u00abguillemets\u00bb \u2033x\u2033",
            '"quoted" \'single\' "guillemets" "x"',
        ),
        ("a\u2013b \u2014 c\u2212d \u2011e", "a-b - c-d -e"),
        ("ＨｉｋａｒｉＣＰ ９２％", "hikaricp 92%"),
        ("Stra\u00dfe", "strasse"),
    ],
)
def test_normalize(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


@pytest.mark.parametrize("raw", ["5 0", "1, 000", "23 : 05", "1 ;2", "7 ,8"])
def test_normalize_never_joins_two_numbers(raw: str) -> None:
    digits_only = "".join(ch for ch in raw if ch.isdigit())
    assert digits_only not in normalize(raw)


def test_normalize_removes_cosmetic_space_next_to_a_number() -> None:
    assert normalize("idle = 0 , waiting = 23") == "idle=0,waiting=23"
    assert normalize("total: 50, active: 50") == "total:50,active:50"
    assert normalize("a , b = 1, 000 ; c") == "a,b=1, 000;c"


# --- accepted ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("excerpt", "ref"),
    [
        (ALERT, ALERT),
        ("state=firing, current=92%", ALERT),
        ("highcpuusage, SERVICE=PAYMENT-SERVICE", ALERT),
        ("state = firing ,\n current = 92 %", ALERT),
        ("Connection  is\tnot\navailable", LOG),
        ("Connection is not available,request timed out", LOG),
        ("HikariPool-1 \u2013 Connection", LOG),
        ("(total=50, active=50, idle=0, waiting=23)", LOG),
        ("evidence_status=no_evidence", NO_EVIDENCE),
        ("redis-cluster-01:6379 used_memory=3.8GB", REDIS),
        ("当前查询未检索到 inventory-service 的 HikariCP 连接池耗尽日志", RUNBOOK_ZH),
        ("当前查询未检索到inventory-service的HikariCP", "当前查询未检索到inventory-service的HikariCP连接池耗尽日志"),
        ("等待线程数为 23", RUNBOOK_ZH_FOUND),
        ('said "ready"', "the node said \u201cready\u201d at boot"),
        ("said \u201cready\u201d", 'the node said "ready" at boot'),
    ],
)
def test_exact_matches(excerpt: str, ref: str) -> None:
    assert match_excerpt(excerpt, ref) == ExcerptMatch(True, "exact", 1.0, "")


@pytest.mark.parametrize(
    "excerpt",
    [
        "Connection is not availabel, request timed out after 30000ms",  # transposition
        "Connection is not avilable, request timed out after 30000ms",  # deletion
        "Connection is not available, requestt timed out after 30000ms",  # insertion
        "Connection is not available, request timed oat after 30000ms",  # substitution
        "Xonnection is not available, request timed out after 30000ms",  # at the edge
        "ERROR order-service ... Connection is not availabel, request timed out after 30000ms",  # in a split part
    ],
)
def test_a_changed_word_is_never_a_near_match(excerpt: str) -> None:
    # A one-letter change is a different word ("firing" -> "fixing"); similarity cannot tell.
    result = match_excerpt(excerpt, LOG)
    assert not result.supported and result.kind == "none"
    assert "changed to" in result.reason


@pytest.mark.parametrize(
    ("excerpt", "ref", "reason"),
    [
        ("HighCPUUsage, service=payment-service, state=fixing, current=92%", ALERT, "'firing' changed to 'fixing'"),
        ("level=worn msg=disk almost full", "level=warn msg=disk almost full", "'warn' changed to 'worn'"),
        ("当前查询未检索到 inventory-service 的 HikariCP 连接池耗近日志", RUNBOOK_ZH, "'尽' changed to '近'"),
    ],
)
def test_near_spelled_different_word_is_rejected(excerpt: str, ref: str, reason: str) -> None:
    result = match_excerpt(excerpt, ref)
    assert not result.supported and result.reason == reason


@pytest.mark.parametrize(
    ("excerpt", "ref"),
    [
        ("Connection is not available request timed out after 30000ms", LOG),  # comma dropped
        ("(total=50 active=50 idle=0 waiting=23)", LOG),
        ("ERROR order-service ... Connection is not available request timed out", LOG),
        ("Connection isn't available", LOG),
        ("the pool doesn't recover", "The pool does not recover"),
        ("they're retrying", "they are retrying"),
        ("current=٩٢%", ALERT),  # Arabic-Indic 92
        ("waiting=२३", LOG),  # Devanagari 23
    ],
)
def test_benign_variants_are_supported(excerpt: str, ref: str) -> None:
    assert match_excerpt(excerpt, ref).supported, match_excerpt(excerpt, ref)


def test_punctuation_only_difference_is_a_near_match() -> None:
    result = match_excerpt("Connection is not available request timed out after 30000ms", LOG)
    assert result.kind == "near" and 0.92 <= result.similarity < 1.0


def test_unicode_digits_of_another_value_are_rejected() -> None:
    assert not supported("current=\u0662\u0669%", ALERT)  # Arabic-Indic 29


def test_min_similarity_is_honoured() -> None:
    excerpt = "is not available request timed out"
    strict = match_excerpt(excerpt, LOG, min_similarity=0.99)
    assert not strict.supported
    assert strict.reason == "best similarity 0.98 < 0.99"
    with pytest.raises(ValueError):
        match_excerpt(excerpt, LOG, min_similarity=0.0)


# --- rejected: numbers, identifiers, invented text ---------------------------------


@pytest.mark.parametrize(
    ("excerpt", "ref", "reason"),
    [
        ("current=29%", ALERT, "number 29% not in evidence"),
        ("state=firing, current=29%, duration=25m", ALERT, "number 29% not in evidence"),
        (
            "HighCPUUsage, service=payment-service, state=firing, current=29%, duration=25m",
            ALERT,
            "number 29% not in evidence",
        ),
        ("request timed out after 3000ms", LOG, "number 3000ms not in evidence"),
        (
            "Connection is not available, request timed out after 300000ms (total=50",
            LOG,
            "number 300000ms not in evidence",
        ),
        (
            "Connection is not available, request timed out after 30000ms (total=500, active=50",
            LOG,
            "number 500 not in evidence",
        ),
        ("request timed out after 30000ms (total=50, active=50, idle=0, waiting=32)", LOG, "number 32 not in evidence"),
        ("2026-07-08 23:05:29 ERROR order-service HikariPool-1 - Connection", LOG, "number 23:05:29 not in evidence"),
        ("redis-cluster-01:6379 used_memory=3.9GB maxmemory=4GB", REDIS, "number 3.9gb not in evidence"),
        (
            "HighCPUUsage, service=order-service, state=firing, current=92%",
            ALERT,
            "identifier order-service not in evidence",
        ),
        (
            "redis-cluster-02:6379 used_memory=3.8GB maxmemory=4GB",
            REDIS,
            "number redis-cluster-02:6379 not in evidence",
        ),
        (
            "2026-07-08 23:05:28 ERROR order-service HikariPool-2 - Connection",
            LOG,
            "number hikaripool-2 not in evidence",
        ),
        (
            "evidence_status=no_evidence; query=inventory-service HikariPC; total=0",
            NO_EVIDENCE,
            "identifier hikaripc not in evidence",
        ),
    ],
)
def test_changed_fact_is_rejected_with_its_reason(excerpt: str, ref: str, reason: str) -> None:
    result = match_excerpt(excerpt, ref)
    assert not result.supported and result.kind == "none"
    assert result.reason == reason


def test_max_50_to_500_is_rejected() -> None:
    assert not supported("pool max=500 reached", "pool max=50 reached")
    assert not supported(
        "connection pool max = 500, active=50, waiting for a free connection",
        "connection pool max=50, active=50, waiting for a free connection",
    )


def test_swapped_numbers_are_rejected() -> None:
    ref = "pool stats: total=50, active=23, idle=0 while waiting for a connection"
    assert not supported("pool stats: total=23, active=50, idle=0 while waiting for a connection", ref)


@pytest.mark.parametrize(
    ("excerpt", "reason"),
    [
        (
            "HighCPUUsage, service=payment-service, state=resolved, current=92%, duration=25m",
            "'firing' changed to 'resolved'",
        ),
        (
            "HighCPUUsage, service=payment-service, state=fired, current=92%, duration=25m",
            "'firing' changed to 'fired'",
        ),
        (
            "HighCPUUsage, service=payment-service, state=firing now, current=92%, duration=25m",
            "text 'now' not in evidence",
        ),
        (
            "HighCPUUsage, service=payment-service, state=firing, current=92%, duration=25m ok",
            "text 'ok' not in evidence",
        ),
    ],
)
def test_more_than_a_typo_in_a_plain_word_is_rejected(excerpt: str, reason: str) -> None:
    result = match_excerpt(excerpt, ALERT)
    assert not result.supported and result.similarity >= 0.92
    assert result.reason == reason


def test_quote_that_cuts_a_number_is_rejected() -> None:
    assert not supported("timed out after 3000", LOG)
    assert not supported("used_memory=3", REDIS)
    assert not supported("used_memory=3.", REDIS)
    assert not supported("8GB maxmemory", REDIS)
    assert not supported("evicted_keys=120", REDIS)
    assert supported("current=92", ALERT)  # "%" is a unit, not more digits
    assert supported("used_memory=3.8GB", REDIS)


@pytest.mark.parametrize(
    "excerpt",
    [
        "root cause confirmed: disk full on db-node-07",
        f"{ALERT}, root cause confirmed: disk full on db-node-07",
        "payment-service is healthy",
    ],
)
def test_invented_text_is_rejected(excerpt: str) -> None:
    result = match_excerpt(excerpt, ALERT)
    assert not result.supported and result.kind == "none" and result.reason


# --- rejected: negations -------------------------------------------------------------


@pytest.mark.parametrize(
    ("excerpt", "ref", "negation"),
    [
        ("Connection is available, request timed out after 30000ms", LOG, "not"),
        ("Connection is not not available, request timed out after 30000ms", LOG, "not"),
        (
            "Connection is available, request timed out after 30000ms",
            "Connection isn't available, request timed out after 30000ms",
            "not",
        ),
        ("query_logs returned evidence; evidence_status=no_evidence; query=inventory-service", NO_EVIDENCE, "no"),
        ("当前查询检索到 inventory-service 的 HikariCP 连接池耗尽日志", RUNBOOK_ZH, "未"),
        ("当前查询没有未检索到 inventory-service 的 HikariCP 连接池耗尽日志", RUNBOOK_ZH, "没"),
        ("日志显示 order-service 的 HikariCP 连接池没有耗尽，等待线程数为 23", RUNBOOK_ZH_FOUND, "没"),
        ("日志显示 order-service 的 HikariCP 连接池未耗尽，等待线程数为 23", RUNBOOK_ZH_FOUND, "未"),
    ],
)
def test_inserted_or_removed_negation_is_rejected(excerpt: str, ref: str, negation: str) -> None:
    result = match_excerpt(excerpt, ref)
    assert not result.supported
    assert result.reason == f"negation '{negation}' differs"


@pytest.mark.parametrize(
    ("excerpt", "ref"),
    [
        ("available, request timed out", LOG),  # "not" just before the quote
        ("Connection is ... available", LOG),  # "not" dropped by the elision
        ("thing was found", "nothing was found"),
        ("检索到 inventory-service 的 HikariCP 连接池耗尽日志", RUNBOOK_ZH),
        ("检索到 inventory-service 的日志", "当前没有检索到 inventory-service 的日志"),
    ],
)
def test_quote_that_leaves_its_negation_outside_is_rejected(excerpt: str, ref: str) -> None:
    result = match_excerpt(excerpt, ref)
    assert not result.supported
    assert "negation" in result.reason


@pytest.mark.parametrize(
    ("excerpt", "ref"),
    [
        (
            "the pool answered no payment-service request in time",
            "the pool answered no, payment-service request in time",
        ),
        ("没有 order-service 的连接池耗尽日志被检索到", "没有, order-service 的连接池耗尽日志被检索到"),
    ],
)
def test_negation_must_be_quoted_with_its_punctuation(excerpt: str, ref: str) -> None:
    result = match_excerpt(excerpt, ref)
    assert not result.supported
    assert result.reason.endswith("not quoted verbatim")


def test_near_match_may_not_stop_short_of_a_negation() -> None:
    result = match_excerpt("the payment-service status is ok", "the payment-service status is not ok")
    assert not result.supported and result.reason == "negation 'not' differs"


def test_quote_that_cuts_a_contraction_is_rejected() -> None:
    assert not supported("the pool does", "the pool doesn't recover")
    assert supported("the pool doesn't", "the pool doesn't recover")


# --- split excerpts ------------------------------------------------------------------


@pytest.mark.parametrize(
    "excerpt",
    [
        "2026-07-08 23:05:28 ERROR ... Connection is not available ... waiting=23)",
        "ERROR order-service\u2026timed out after 30000ms",
        "...Connection is not available...",
        "HikariPool-1 ... ... total=50",
    ],
)
def test_in_order_parts_are_supported(excerpt: str) -> None:
    assert match_excerpt(excerpt, LOG) == ExcerptMatch(True, "exact", 1.0, "")


def test_split_excerpt_with_dropped_punctuation_is_a_near_match() -> None:
    result = match_excerpt("ERROR order-service ... Connection is not available request timed out after 30000ms", LOG)
    assert result.supported and result.kind == "near"


@pytest.mark.parametrize(
    "excerpt",
    [
        "timed out after 30000ms ... Connection is not available",
        "waiting=23 ... total=50",
        "Connection is not ... is not available",  # overlapping
        "total=50 ... total=50",  # each part needs its own occurrence
    ],
)
def test_parts_out_of_order_or_overlapping_are_rejected(excerpt: str) -> None:
    result = match_excerpt(excerpt, LOG)
    assert not result.supported
    assert result.reason == "excerpt parts out of order or overlapping"


def test_repeated_part_is_supported_when_the_ref_repeats_it() -> None:
    assert supported("active=50 ... active=50", "active=50 idle=0 active=50")


def test_any_failing_part_rejects_the_excerpt() -> None:
    assert not supported("Connection is not available ... waiting=32", LOG)


@pytest.mark.parametrize("excerpt", ["", "   ", "...", " ... ... ", "\u2026", "\n\t"])
def test_empty_excerpt_is_rejected(excerpt: str) -> None:
    assert match_excerpt(excerpt, LOG) == ExcerptMatch(False, "none", 0.0, "empty excerpt")


def test_empty_ref_supports_nothing() -> None:
    result = match_excerpt("Connection is not available", "")
    assert result == ExcerptMatch(False, "none", 0.0, "no similar text in evidence")


def test_excerpt_match_is_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        match_excerpt("x", "x").supported = False  # type: ignore[misc]


# --- properties --------------------------------------------------------------------

SERVICES = [
    "payment-service",
    "order-service",
    "inventory-service",
    "api-gateway",
    "redis-cluster-01:6379",
    "user-db-02",
]
METRICS = ["HighCPUUsage", "HikariCP", "HikariPool-1", "cpu_usage", "p99_latency", "OOMKilled", "error_rate"]
KEYS = ["current", "max", "total", "active", "idle", "waiting", "duration", "used_memory"]
UNITS = ["", "", "%", "ms", "s", "m", "GB", "MB"]
WORDS = [
    "ERROR",
    "WARN",
    "Connection",
    "is",
    "available",
    "request",
    "timed",
    "out",
    "after",
    "returned",
    "evidence",
    "firing",
    "pool",
    "exhausted",
    "query_logs",
    "evidence_status=no_evidence",
    "not",
    "no",
]
CJK_WORDS = ["当前查询", "未", "检索到", "连接池", "耗尽", "日志", "的", "实例", "没有", "等待线程数为"]
NEGATIONS = ["not", "no", "never", "未", "没有"]
CJK_NEGATION_CHARS = "不没无未非否勿别"

integers = st.integers(min_value=0, max_value=99999).map(str)
decimals = st.tuples(st.integers(0, 99), st.integers(0, 99)).map(lambda t: f"{t[0]}.{t[1]}")
numbers = st.tuples(integers | decimals, st.sampled_from(UNITS)).map("".join)
timestamps = st.tuples(
    st.integers(1, 12), st.integers(1, 28), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59)
).map(lambda t: [f"2026-{t[0]:02d}-{t[1]:02d}", f"{t[2]:02d}:{t[3]:02d}:{t[4]:02d}"])
key_values = st.tuples(st.sampled_from(KEYS), numbers | st.sampled_from(SERVICES)).map(lambda kv: f"{kv[0]}={kv[1]}")
single_token_fields = st.one_of(
    st.sampled_from(SERVICES),
    st.sampled_from(METRICS),
    numbers,
    key_values,
    st.sampled_from(WORDS),
    st.sampled_from(CJK_WORDS),
).map(lambda token: [token])
fields = st.one_of(single_token_fields, timestamps)


def _is_cjk(token: str) -> bool:
    return not token.isascii()


def _draw_separators(draw: st.DrawFn, tokens: list[str]) -> list[str]:
    """The separator after each token ("" after the last); Chinese runs may have none."""
    separators = []
    for left, right in pairwise(tokens):
        choices = [" ", " ", ", ", "; ", " - "] + (["", ""] if _is_cjk(left) and _is_cjk(right) else [])
        separators.append(draw(st.sampled_from(choices)))
    return separators + [""]


def _flatten(field_lists: list[list[str]]) -> list[str]:
    return [token for field in field_lists for token in field]


@st.composite
def refs_with_span(draw: st.DrawFn) -> tuple[list[str], list[str], int, int]:
    """A ref line as tokens and the separators after them, plus a sub-span [i, j)."""
    tokens = _flatten(draw(st.lists(fields, min_size=1, max_size=14)))
    i = draw(st.integers(0, len(tokens) - 1))
    j = draw(st.integers(i + 1, len(tokens)))
    return tokens, _draw_separators(draw, tokens), i, j


def _span(tokens: list[str], separators: list[str], i: int, j: int) -> str:
    """tokens[i:j] as they appear in the ref, without the trailing separator."""
    return "".join(tokens[k] + (separators[k] if k < j - 1 else "") for k in range(i, j))


def _negates_what_follows(token: str) -> bool:
    return token in NEGATIONS or any(ch in CJK_NEGATION_CHARS for ch in token[-2:])


def _starts_with_negation(token: str) -> bool:
    return token in NEGATIONS or token[:1] in CJK_NEGATION_CHARS


def _cosmetic_edit(excerpt: str, rnd: random.Random) -> str:
    """Case, whitespace and dash edits a faithful model might make."""
    out = [rnd.choice(["", " ", "\n  "])]
    for index, ch in enumerate(excerpt):
        before = excerpt[index - 1] if index else ""
        after = excerpt[index + 1] if index + 1 < len(excerpt) else ""
        if ch == " ":
            # After "," or ";" the space may go, unless that would glue two numbers ("50, 23").
            removable = before in ",;" and not (excerpt[index - 2 : index - 1].isdigit() and after.isdigit())
            out.append(rnd.choice([" ", "  ", "\t", "\n", " \n\t "] + ([""] if removable else [])))
        elif ch == "=":
            out.append(rnd.choice(["=", " = ", "=\t", "  ="]))
        elif ch == "%" and before.isdigit():
            out.append(rnd.choice(["%", " %"]))
        elif ch == "-":
            out.append(rnd.choice(["-", "\u2013", "\u2010"]))
        elif ch.isascii() and ch.isalpha() and rnd.random() < 0.3:
            out.append(ch.swapcase())
        else:
            out.append(ch)
    out.append(rnd.choice(["", " ", "\t\n"]))
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(refs_with_span(), st.randoms(use_true_random=False))
def test_property_cosmetic_edits_of_a_sub_span_are_exact(span: tuple, rnd: random.Random) -> None:
    tokens, separators, i, j = span
    # A quote starting right after "not"/"未" drops that negation; it is rejected on purpose.
    assume(i == 0 or not _negates_what_follows(tokens[i - 1]))
    # A quote stopping right before "not"/"未" leaves out the negation of its last words; rejected on purpose.
    assume(j == len(tokens) or separators[j - 1].strip() or not _starts_with_negation(tokens[j]))
    ref = _span(tokens, separators, 0, len(tokens))
    excerpt = _cosmetic_edit(_span(tokens, separators, i, j), rnd)
    assert match_excerpt(excerpt, ref) == ExcerptMatch(True, "exact", 1.0, ""), (excerpt, ref)


@settings(max_examples=300, deadline=None)
@given(refs_with_span(), st.randoms(use_true_random=False), st.data())
def test_property_changing_one_digit_is_rejected(span: tuple, rnd: random.Random, data: st.DataObject) -> None:
    tokens, separators, i, j = span
    ref = _span(tokens, separators, 0, len(tokens))
    excerpt = _span(tokens, separators, i, j)
    digit_positions = [index for index, ch in enumerate(excerpt) if ch.isdigit()]
    assume(digit_positions)
    position = data.draw(st.sampled_from(digit_positions))
    new_digit = data.draw(st.sampled_from([d for d in "0123456789" if d != excerpt[position]]))
    mutated = _cosmetic_edit(excerpt[:position] + new_digit + excerpt[position + 1 :], rnd)
    assume(normalize(mutated) not in normalize(ref))
    result = match_excerpt(mutated, ref)
    assert not result.supported, (mutated, ref, result)


@settings(max_examples=300, deadline=None)
@given(refs_with_span(), st.sampled_from(NEGATIONS), st.data())
def test_property_inserting_a_negation_is_rejected(span: tuple, negation: str, data: st.DataObject) -> None:
    tokens, separators, i, j = span
    ref = _span(tokens, separators, 0, len(tokens))
    k = data.draw(st.integers(i, j))
    mutated = " ".join(
        part for part in (_span(tokens, separators, i, k), negation, _span(tokens, separators, k, j)) if part
    )
    assume(normalize(mutated) not in normalize(ref))
    result = match_excerpt(mutated, ref)
    assert not result.supported, (mutated, ref, result)


PLAIN_WORDS = ["available", "request", "timed", "after", "returned", "evidence", "firing", "pool", "exhausted"]


@st.composite
def refs_with_plain_word(draw: st.DrawFn) -> tuple[list[str], list[str], int, int, int]:
    """Like refs_with_span, with the plain word tokens[k] (3+ letters) inside the span."""
    before = _flatten(draw(st.lists(fields, min_size=2, max_size=6)))
    after = _flatten(draw(st.lists(fields, min_size=2, max_size=6)))
    word = draw(st.sampled_from(PLAIN_WORDS))
    tokens = before + [word] + after
    k = len(before)
    i = draw(st.integers(0, k))
    j = draw(st.integers(k + 1, len(tokens)))
    return tokens, _draw_separators(draw, tokens), i, j, k


@settings(max_examples=300, deadline=None)
@given(refs_with_plain_word(), st.data())
def test_property_one_typo_in_a_plain_word_is_rejected(span: tuple, data: st.DataObject) -> None:
    tokens, separators, i, j, k = span
    ref = _span(tokens, separators, 0, len(tokens))
    excerpt = _span(tokens, separators, i, j)
    offset = len(_span(tokens, separators, i, k + 1)) - len(tokens[k])
    position = offset + data.draw(st.integers(0, len(tokens[k]) - 1))
    letter = data.draw(st.sampled_from([c for c in "abcdefghijklmnopqrstuvwxyz" if c != excerpt[position]]))
    mutated = excerpt[:position] + letter + excerpt[position + 1 :]
    assume(normalize(mutated) not in normalize(ref))
    result = match_excerpt(mutated, ref)
    assert not result.supported, (mutated, ref, result)


# --- speed guards (loose bounds; not benchmarks) ---------------------------------------


def test_ten_thousand_exact_matches_take_under_a_second() -> None:
    # Every ref and excerpt distinct, so the normalize cache cannot hide the work.
    pairs = [(f"idle=0, waiting=23) request_id={n} shard", f"{LOG} request_id={n} shard=7") for n in range(10_000)]
    started = time.perf_counter()
    results = [match_excerpt(excerpt, ref) for excerpt, ref in pairs]
    elapsed = time.perf_counter() - started
    assert all(result.kind == "exact" for result in results)
    assert elapsed < 1.0


def test_near_match_against_a_long_ref_is_fast() -> None:
    lines = [
        f"2026-07-08 23:{n:02d}:{n * 7 % 60:02d} ERROR order-service HikariPool-1 - Connection is not available, "
        f"request timed out after {30000 + n}ms (total=50, active=50, idle=0, waiting={n})"
        for n in range(20)
    ]
    ref = " ".join(lines)[:3000]
    excerpt = lines[12].replace(",", "")
    started = time.perf_counter()
    for _ in range(10):
        assert match_excerpt(excerpt, ref).kind == "near"
    assert (time.perf_counter() - started) / 10 < 0.1


@pytest.mark.parametrize("edit", ["exact", "changed", "dropped_comma"])
def test_hundred_thousand_character_excerpt_is_matched_in_linear_time(edit: str) -> None:
    words = [f"w{n % 977}x{n % 13}" for n in range(12_000)]
    ref = " ".join(words)[:100_000]
    excerpt = {"exact": ref, "changed": ref.replace("w5x5", "w5x6", 1), "dropped_comma": ref}[edit]
    ref = ref if edit != "dropped_comma" else ref.replace(" ", ", ", 50)
    started = time.perf_counter()
    result = match_excerpt(excerpt, ref)
    assert (time.perf_counter() - started) < 1.0
    assert result.supported == (edit != "changed")
