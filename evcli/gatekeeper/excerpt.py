"""Is a quoted evidence excerpt really backed by the text of an evidence ref?

A model cites evidence by quoting part of a recorded tool output. The quote is
supported when, after cosmetic normalisation, it occurs in the ref text
("exact"), or when it is a near-verbatim copy - typo-sized edits only - whose
numbers, identifiers and negations are all intact ("near"). Similarity alone
cannot tell "92%" from "29%" or "is available" from "is not available", so
those are guarded explicitly; the guards are what make the check hard to fool.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from difflib import Match, SequenceMatcher
from functools import lru_cache
from itertools import pairwise

__all__ = ["ExcerptMatch", "match_excerpt", "normalize"]


@dataclass(frozen=True)
class ExcerptMatch:
    supported: bool
    kind: str  # "exact" | "near" | "none"
    similarity: float  # 1.0 for exact; best ratio found for near/none (0.0 if nothing)
    reason: str  # "" when supported, else a short human-readable reason


# --- normalisation -------------------------------------------------------------

_UNIFY_PUNCTUATION = str.maketrans(
    "\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb"  # “ ” „ ‟ ″ « »
    "\u2018\u2019\u201a\u201b\u2032"  # ‘ ’ ‚ ‛ ′
    "\u2010\u2011\u2012\u2013\u2014\u2015\u2212",  # ‐ ‑ ‒ – — ― −
    '"""""""' "'''''" "-------",
)
_SPACE_BEFORE_PERCENT = re.compile(r"(?<=\d) %")
_SEPARATORS = "=,;:"
_SPACED_SEPARATOR_BETWEEN_DIGITS = re.compile(r"\d(?: [,;:] ?|[,;:] )\d")
_SPACE_AROUND_SEPARATOR = re.compile(r" ([=,;:]) ?|([=,;:]) ")


def _join_separator(match: re.Match[str]) -> str:
    separator = match.group(1) or match.group(2)
    text, start, end = match.string, match.start(), match.end()
    # "1, 000" -> "1,000" or "23: 05" -> "23:05" would forge a different number.
    if separator != "=" and 0 < start and end < len(text) and text[start - 1].isdigit() and text[end].isdigit():
        return match.group()
    return separator


def _drop_separator_spaces(collapsed: str) -> str:
    if _SPACED_SEPARATOR_BETWEEN_DIGITS.search(collapsed):
        return _SPACE_AROUND_SEPARATOR.sub(_join_separator, collapsed)
    # No number can merge, so plain replaces do (several times faster than the regex).
    for separator in _SEPARATORS:
        collapsed = collapsed.replace(" " + separator, separator).replace(separator + " ", separator)
    return collapsed


@lru_cache(maxsize=4096)
def normalize(text: str) -> str:
    """Canonical form for comparison: NFKC, casefolded, one kind of quote and
    dash, no cosmetic whitespace. Never joins two digit runs ("5 0" != "50")."""
    if not text.isascii():
        # Unify before NFKC too, so "″" stays one double quote instead of two primes.
        text = unicodedata.normalize("NFKC", text.translate(_UNIFY_PUNCTUATION)).translate(_UNIFY_PUNCTUATION)
    text = " ".join(text.casefold().split())
    if " %" in text:
        text = _SPACE_BEFORE_PERCENT.sub("%", text)
    return _drop_separator_spaces(text)


# --- facts that similarity must not blur ----------------------------------------

_TOKEN = re.compile(r"[a-z0-9][a-z0-9._:/%+-]*")  # run on normalized (casefolded) text
_RAW_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/%+-]*")
_TOKEN_TRAILING_PUNCTUATION = "._:/+-"
_STRUCTURED_TOKEN = re.compile(r"[0-9]|[a-z0-9][-_.:/][a-z0-9]")
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_TOKEN_CHARS = _ALNUM | frozenset("._:/%+-'")

_NEGATION_WORDS = frozenset(
    ["not", "no", "never", "none", "nothing", "nobody", "neither", "nor", "without", "cannot", "unable"]
)  # and every "n't" contraction
_ENGLISH_WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz'")
_CJK_NEGATIONS = "不没无未非否勿别"
_CJK_NEGATION = re.compile(f"[{_CJK_NEGATIONS}]")


def _tokens(normalized: str) -> list[str]:
    return [token.rstrip(_TOKEN_TRAILING_PUNCTUATION) for token in _TOKEN.findall(normalized)]


def _mixed_case_words(raw: str) -> frozenset[str]:
    """Casefolded tokens like HikariCP or HighCPUUsage: identifiers even without digits.

    A capital only at the start ("Connection") is ordinary sentence case, not an identifier.
    """
    tokens = (token.rstrip(_TOKEN_TRAILING_PUNCTUATION) for token in _RAW_TOKEN.findall(unicodedata.normalize("NFKC", raw)))
    return frozenset(token.casefold() for token in tokens if token[1:] != token[1:].lower() and token != token.upper())


def _critical_tokens(normalized_part: str, mixed_case: frozenset[str]) -> list[str]:
    return [token for token in _tokens(normalized_part) if _STRUCTURED_TOKEN.search(token) or token in mixed_case]


def _is_negation(word: str) -> bool:
    word = word.strip("'")
    return word in _NEGATION_WORDS or word.endswith("n't")


def _negations(normalized: str) -> list[re.Match[str]]:
    words = [match for match in _ENGLISH_WORD.finditer(normalized) if _is_negation(match.group())]
    return words + list(_CJK_NEGATION.finditer(normalized))


def _edge_negation(text: str, start: int, end: int, floor: int) -> str:
    """A negation the span text[start:end] silently drops or forges at its edges, or "".

    Catches "is not | available" (the word just before the span negates it),
    "no|thing found" and "does|n't" (the span cuts a word whose negation
    differs from the fragment quoted). Text before `floor` belongs to an
    earlier quoted part and is not looked at.
    """
    if start > floor and text[start - 1] in _WORD_CHARS and text[start] in _WORD_CHARS:
        word_start = start
        while word_start > floor and text[word_start - 1] in _WORD_CHARS:
            word_start -= 1
        fragment_end = start
        while fragment_end < end and text[fragment_end] in _WORD_CHARS:
            fragment_end += 1
        cut_word = text[word_start:fragment_end]
        if _is_negation(cut_word) != _is_negation(text[start:fragment_end]):
            return cut_word
    else:
        before = start
        while before > floor and text[before - 1] in " _-":
            before -= 1
        # Two characters back as well: 没有, 不是, 无法, 未能 negate what follows.
        for cjk in text[max(floor, before - 2) : before]:
            if cjk in _CJK_NEGATIONS:
                return cjk
        word_start = before
        while word_start > floor and text[word_start - 1] in _WORD_CHARS:
            word_start -= 1
        if _is_negation(text[word_start:before]):
            return text[word_start:before]
    if end < len(text) and text[end] in _WORD_CHARS and text[end - 1] in _WORD_CHARS:
        word_end = end
        while word_end < len(text) and text[word_end] in _WORD_CHARS:
            word_end += 1
        fragment_start = end
        while fragment_start > start and text[fragment_start - 1] in _WORD_CHARS:
            fragment_start -= 1
        word_start = fragment_start
        while word_start > 0 and text[word_start - 1] in _WORD_CHARS:
            word_start -= 1
        cut_word = text[word_start:word_end]
        if _is_negation(cut_word) != _is_negation(text[fragment_start:end]):
            return cut_word
    return ""


def _splits_number(text: str, start: int, end: int) -> bool:
    """True if the span starts or ends inside a number: "3000" of "30000ms", "3." or "8GB" of "3.8GB"."""
    return _inside_number(text, start) or _inside_number(text, end)


def _inside_number(text: str, boundary: int) -> bool:
    if not 0 < boundary < len(text):
        return False
    left, right = text[boundary - 1], text[boundary]
    if left.isdigit():
        return right.isdigit() or (right == "." and text[boundary + 1 : boundary + 2].isdigit())
    return left == "." and right.isdigit() and text[boundary - 2 : boundary - 1].isdigit()


# --- matching -------------------------------------------------------------------

_ELLIPSIS = re.compile(r"\.{3,}")  # NFKC has already turned "…" into "..."
_QGRAM = 4
_MAX_QGRAM_HITS = 64  # q-grams this common say nothing about where the part is
_MAX_CANDIDATES = 4


@dataclass(frozen=True)
class _Candidate:
    """One place in the ref text that a part may have been copied from."""

    ratio: float
    problem: str  # "" when every guard holds
    aligned_end: int  # end of the aligned ref text; the next part must start after it


def _split_parts(normalized_excerpt: str) -> list[str]:
    if "..." not in normalized_excerpt:
        return [normalized_excerpt] if normalized_excerpt else []
    return [part for part in (p.strip() for p in _ELLIPSIS.split(normalized_excerpt)) if part]


def _find_exact(text: str, part: str, floor: int) -> int:
    """Start of the first clean occurrence of part at or after floor, or -1."""
    start = text.find(part, floor)
    while start != -1:
        end = start + len(part)
        if not _splits_number(text, start, end) and not _edge_negation(text, start, end, floor):
            return start
        start = text.find(part, start + 1)
    return -1


def _anchors(haystack: str, part: str) -> list[int]:
    """Likely start offsets of part in haystack, by q-gram votes, best first.

    Votes rather than one global alignment, so every similar line of a long
    ref is considered, not only the one sharing the longest common run.
    """
    q = min(_QGRAM, len(part))
    votes: Counter[int] = Counter()
    for offset in range(len(part) - q + 1):
        gram = part[offset : offset + q]
        if haystack.count(gram) > _MAX_QGRAM_HITS:
            continue
        hit = haystack.find(gram)
        while hit != -1:
            votes[hit - offset] += 1
            hit = haystack.find(gram, hit + 1)
    separation = max(2, len(part) // 10)
    chosen: list[int] = []
    for anchor, _ in votes.most_common():
        if all(abs(anchor - other) > separation for other in chosen):
            chosen.append(anchor)
            if len(chosen) == _MAX_CANDIDATES:
                break
    return chosen


def _ratio(blocks: list[Match], part_length: int) -> float:
    matched = sum(block.size for block in blocks)
    span = blocks[-1].a + blocks[-1].size - blocks[0].a
    return 2 * matched / (span + part_length)


def _typo_sized(left: Match, right: Match) -> bool:
    """Whether the unaligned run between two blocks is at most one character on either side."""
    return right.a - left.a - left.size <= 1 and right.b - left.b - left.size <= 1


def _align(region: str, part: str) -> list[Match]:
    """Matching blocks of part in region, without stray blocks at the edges.

    SequenceMatcher may match a character or two at an edge of part to text
    away from the real spot ("a" of "payment" for a typo'd "acailable"). Such a
    block is dropped; the edge check then compares that text with the ref text
    right next to the aligned text.
    """
    blocks = [block for block in SequenceMatcher(None, region, part, autojunk=False).get_matching_blocks() if block.size]
    while len(blocks) > 1 and blocks[0].size <= 2 and not _typo_sized(blocks[0], blocks[1]):
        blocks.pop(0)
    while len(blocks) > 1 and blocks[-1].size <= 2 and not _typo_sized(blocks[-2], blocks[-1]):
        blocks.pop()
    return blocks


def _token_problem(part: str, window: str, mixed_case: frozenset[str]) -> str:
    available = iter(_tokens(window))
    for token in _critical_tokens(part, mixed_case):
        # Ordered containment: a swapped pair of numbers is a different fact.
        if token not in available:
            kind = "number" if any(c.isdigit() for c in token) else "identifier"
            return f"{kind} {token} not in evidence"
    return ""


def _word_around(text: str, start: int, end: int) -> str:
    """text[start:end] completed to the ASCII words it cuts into, for a readable reason."""
    fragment = text[start:end]
    start += len(fragment) - len(fragment.lstrip())
    end -= len(fragment) - len(fragment.rstrip())
    if start < end:
        while start > 0 and text[start] in _ALNUM and text[start - 1] in _ALNUM:
            start -= 1
        while end < len(text) and text[end - 1] in _ALNUM and text[end] in _ALNUM:
            end += 1
    return text[start:end]


def _edit_problem(part: str, region: str, blocks: list[Match], edges: tuple[tuple[str, str], ...]) -> str:
    """Every edit must be typo-sized: one character at most.

    The ratio alone would let a long excerpt swap a whole plain word ("state=firing"
    -> "state=resolved"), and plain words are not critical tokens.
    """
    for quoted, evidence in edges:
        # Unaligned text at an edge is compared with as much ref text beside the aligned
        # text: a typo there leaves its neighbour unaligned too ("acailable" aligns from "ailable").
        matched = sum(block.size for block in SequenceMatcher(None, quoted, evidence, autojunk=False).get_matching_blocks())
        if matched < len(quoted) - 1:
            return f"text '{quoted.strip()}' not in evidence"
    # (part start, part end, region start, region end) of the run after blocks[i].
    runs = [(a.b + a.size, b.b, a.a + a.size, b.a) for a, b in pairwise(blocks)]
    for index in range(len(runs)):
        if _typo_sized(blocks[index], blocks[index + 1]):
            continue
        # Alignment noise splits one changed word into runs around a shared letter
        # ("firing" -> "resolved" share an "r"); report those runs as one change.
        first, final = index, index
        while first > 0 and blocks[first].size <= 2:
            first -= 1
        while final + 1 < len(runs) and blocks[final + 1].size <= 2:
            final += 1
        quoted = _word_around(part, runs[first][0], runs[final][1])
        evidence = _word_around(region, runs[first][2], runs[final][3])
        if not evidence:
            return f"text '{quoted}' not in evidence"
        if not quoted:
            return f"text '{evidence}' left out"
        return f"'{evidence}' changed to '{quoted}'"
    return ""


def _negation_problem(part: str, window: str, blocks: list[Match]) -> str:
    part_negations = _negations(part)
    part_counts = Counter(match.group() for match in part_negations)
    window_counts = Counter(match.group() for match in _negations(window))
    if part_counts != window_counts:
        differing = next(iter((part_counts - window_counts) + (window_counts - part_counts)))
        return f"negation '{differing}' differs"
    for negation in part_negations:
        # Aligned verbatim with its neighbours, so "no, payment-service" cannot pass as
        # "no payment-service"; for a two-character negation (没有, 不是) the neighbours
        # of both characters count, so "没有,order-service" is not "没有 order-service".
        end = negation.end()
        if negation.group() in _CJK_NEGATIONS and end < len(part) and not part[end].isascii():
            end += 1
        need_from, need_to = max(negation.start() - 1, 0), min(end + 1, len(part))
        if not any(block.b <= need_from and need_to <= block.b + block.size for block in blocks):
            return f"negation '{negation.group()}' not quoted verbatim"
    return ""


def _candidates(text: str, part: str, floor: int, mixed_case: frozenset[str]) -> list[_Candidate]:
    haystack = text[floor:]
    # Room for insertions after the anchor, but little before it: SequenceMatcher
    # settles ties on the earliest match, so text before the anchor attracts stray
    # matches ("req" of an earlier "request" for a typo'd "reqaest").
    slack = max(2, len(part) // 10)
    candidates = []
    for anchor in _anchors(haystack, part):
        low = max(0, anchor - 2)
        region = haystack[low : anchor + len(part) + slack]
        blocks = _align(region, part)
        if not blocks:
            continue
        tight_start = floor + low + blocks[0].a
        tight_end = floor + low + blocks[-1].a + blocks[-1].size
        lead, trail = blocks[0].b, len(part) - blocks[-1].b - blocks[-1].size
        # Cover as much ref text as part has unaligned at its edges: "status is ok" must not
        # align to "status is" of "status is not ok" and leave the "not" outside the window.
        start = max(floor, tight_start - lead)
        end = min(len(text), tight_end + trail)
        edges = ((part[:lead], text[start:tight_start]), (part[len(part) - trail :], text[tight_end:end]))
        # Widen to whole tokens so a number or identifier is never judged by a fragment.
        while start > floor and text[start - 1] in _TOKEN_CHARS and text[start] in _TOKEN_CHARS:
            start -= 1
        while end < len(text) and text[end] in _TOKEN_CHARS and text[end - 1] in _TOKEN_CHARS:
            end += 1
        window = text[start:end]
        dropped = _edge_negation(text, start, end, floor)
        problem = (
            _token_problem(part, window, mixed_case)
            or _negation_problem(part, window, blocks)
            or _edit_problem(part, region, blocks, edges)
            or (f"negation '{dropped}' precedes the excerpt" if dropped else "")
        )
        candidates.append(_Candidate(_ratio(blocks, len(part)), problem, tight_end))
    return sorted(candidates, key=lambda candidate: candidate.ratio, reverse=True)


def _rejection_reason(best: _Candidate, min_similarity: float) -> str:
    # A missing number or identifier names the false fact, so it beats the ratio.
    if best.problem.startswith(("number", "identifier")):
        return best.problem
    if best.ratio < min_similarity:
        return f"best similarity {best.ratio:.2f} < {min_similarity:.2f}"
    return best.problem


def match_excerpt(excerpt: str, ref_text: str, *, min_similarity: float = 0.92) -> ExcerptMatch:
    """Whether excerpt is supported by ref_text; see the module docstring."""
    if not 0.0 < min_similarity <= 1.0:
        raise ValueError(f"min_similarity must be in (0, 1], got {min_similarity}")
    parts = _split_parts(normalize(excerpt))
    if not parts:
        return ExcerptMatch(False, "none", 0.0, "empty excerpt")
    text = normalize(ref_text)
    floor = 0
    similarity = 1.0
    all_exact = True
    mixed_case: frozenset[str] | None = None
    for part in parts:
        start = _find_exact(text, part, floor)
        if start != -1:
            floor = start + len(part)
            continue
        if mixed_case is None:
            mixed_case = _mixed_case_words(excerpt)
        candidates = _candidates(text, part, floor, mixed_case)
        best_ratio = candidates[0].ratio if candidates else 0.0
        # The best-aligned window decides (any of equals); a worse one must not rescue a part
        # that misstates the text it copies best.
        accepted = next((c for c in candidates if c.ratio == best_ratio and not c.problem), None)
        if accepted is None or best_ratio < min_similarity:
            if floor and _find_exact(text, part, 0) != -1:
                reason = "excerpt parts out of order or overlapping"
            elif candidates:
                reason = _rejection_reason(candidates[0], min_similarity)
            else:
                reason = "no similar text in evidence"
            return ExcerptMatch(False, "none", min(similarity, best_ratio), reason)
        all_exact = False
        similarity = min(similarity, accepted.ratio)
        floor = accepted.aligned_end
    if all_exact:
        return ExcerptMatch(True, "exact", 1.0, "")
    return ExcerptMatch(True, "near", similarity, "")
