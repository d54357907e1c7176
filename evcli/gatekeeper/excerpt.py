"""Is a quoted evidence excerpt really backed by the text of an evidence ref?

A model cites evidence by quoting part of a recorded tool output. After
normalisation (NFKC, case, quotes and dashes, whitespace, Unicode digits,
contractions such as "isn't" -> "is not") the quote must occur in the ref text
word for word: every word, number and symbol of each `...`-separated part
equals, in order, a run of whole tokens of the ref ("exact" when the
characters are identical too, "near" when only soft punctuation differs,
e.g. a dropped comma). A changed word is never a near match: "fixing" is
not "firing", however similar the letters. The guards on top are what make
the check hard to fool: a part that starts right after a negation, stops
right before one, or quotes a negation with different punctuation around it
is rejected, because it silently changes what the ref says.

`informative_problem` says whether an excerpt carries a fact at all ("a",
"is", "0" are found in any ref and prove nothing). Every step is linear in the
lengths of the excerpt and the ref, apart from diagnostics, which only look at
a bounded number of tokens.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Literal, NamedTuple

from evcli.core.text import (
    CJK_NEGATIONS,
    STOP_WORDS,
    critical_tokens,
    fact_tokens,
    is_negation,
    mixed_case_words,
    negations,
    normalize,
)

__all__ = [
    "STOP_WORDS",
    "ExcerptMatch",
    "critical_tokens",
    "informative_problem",
    "is_negation",
    "match_excerpt",
    "negations",
    "normalize",
]


@dataclass(frozen=True)
class ExcerptMatch:
    supported: bool
    kind: Literal["exact", "near", "none"]
    similarity: float  # 1.0 for exact; best ratio found for near/none (0.0 if nothing)
    reason: str  # "" when supported, else a short human-readable reason


# --- tokens ---------------------------------------------------------------------------
# A token is a word (letters, digits, "_", joined by "." and, between digits, by "," or ":"),
# one CJK character, or one hard symbol ("-", "=", "%", "/", ...). Soft punctuation and
# whitespace separate tokens and may differ in a near match.

_CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD_CHAR = rf"[^\W{_CJK_RANGES}]"
_SOFT = ",;:.?()\\[\\]{}\"'`\u3001\u3002\u300c\u300d\u300e\u300f\u3010\u3011\u300a\u300b\u3008\u3009"
_MATCH_TOKEN = re.compile(rf"{_WORD_CHAR}+(?:(?:\.|(?<=\d)[,:](?=\d)){_WORD_CHAR}+)*|[{_CJK_RANGES}]|[^\s\w{_SOFT}]")
_CJK_CHAR = re.compile(f"[{_CJK_RANGES}]")


def _is_word_char(ch: str) -> bool:
    return (ch.isalnum() or ch == "_") and not _CJK_CHAR.match(ch)


def _cuts_token(text: str, position: int) -> bool:
    """Whether position falls strictly inside a token of text (see _MATCH_TOKEN)."""
    if not 0 < position < len(text):
        return False
    left, right = text[position - 1], text[position]
    if _is_word_char(left) and _is_word_char(right):
        return True
    if left in ".,:" and position >= 2 and _is_word_char(right):
        before = text[position - 2]
        return _is_word_char(before) if left == "." else before.isdigit() and right.isdigit()
    if right in ".,:" and position + 1 < len(text) and _is_word_char(left):
        after = text[position + 1]
        return _is_word_char(after) if right == "." else left.isdigit() and after.isdigit()
    return False


class _Tokens(NamedTuple):
    words: tuple[str, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    joined: str  # "\0" + words joined by "\0" + "\0": a run of whole tokens is a substring
    offsets: tuple[int, ...]  # where each word starts in joined


@lru_cache(maxsize=256)
def _tokenize(normalized: str) -> _Tokens:
    matches = list(_MATCH_TOKEN.finditer(normalized))
    words = tuple(match.group() for match in matches)
    offsets, position = [], 1
    for word in words:
        offsets.append(position)
        position += len(word) + 1
    return _Tokens(
        words,
        tuple(m.start() for m in matches),
        tuple(m.end() for m in matches),
        "\0" + "\0".join(words) + "\0",
        tuple(offsets),
    )


# --- informative content --------------------------------------------------------------

_CJK_FUNCTION_CHARS = frozenset("的了是在和与及或也都就而之其这那个为于被把从对")


def _informative_token(token: str) -> bool:
    if _CJK_CHAR.fullmatch(token):
        return False  # judged as a run below
    if any(map(str.isdigit, token)):
        return len(token) >= 2
    return len(token) >= 3 and (token not in STOP_WORDS or not token.isalpha())


def _part_problem(part: str, min_chars: int) -> str | None:
    visible = "".join(part.split())
    if len(visible) < min_chars:
        return f"excerpt part '{part}' is too short to carry a fact ({len(visible)} < {min_chars} characters)"
    tokens = _tokenize(part).words
    if any(_informative_token(token) for token in tokens):  # most often the first token already
        return None
    if sum(1 for token in tokens if _CJK_CHAR.fullmatch(token) and token not in _CJK_FUNCTION_CHARS) >= 2:
        return None
    return f"excerpt part '{part}' has no content word, number or identifier"


def informative_problem(excerpt: str, *, min_chars: int) -> str | None:
    """Why excerpt carries no fact, or None. Each `...`-part must be informative on its own."""
    parts = _split_parts(normalize(excerpt))
    for part in parts:
        problem = _part_problem(part, min_chars)
        if problem:
            return problem
    return None


# --- matching -------------------------------------------------------------------

_ELLIPSIS = re.compile(r"\.{3,}")  # NFKC has already turned "…" into "..."
_MAX_OCCURRENCES = 64  # windows examined per part; each costs the part's length
_MAX_DIAGNOSED_TOKENS = 400  # longer parts get a shorter reason instead of a token diff
_MAX_ANCHORS = 8


def _split_parts(normalized_excerpt: str) -> list[str]:
    if "..." not in normalized_excerpt:
        return [normalized_excerpt] if normalized_excerpt.strip() else []
    return [part for part in (p.strip() for p in _ELLIPSIS.split(normalized_excerpt)) if part]


class _Window(NamedTuple):
    start: int  # character span in the normalised ref text
    end: int


def _ascii_word(ch: str) -> bool:
    return ch.isascii() and (ch.isalpha() or ch == "'")


_MARKUP = frozenset('_*`~"“”‘’()[]{}<>')


def _between_words(ch: str) -> bool:
    """Space or markup around a word (`**not**`, `_not_`, `(not)`, `"not"`): what may stand between a negation
    and the words it negates within a clause (a comma, a full stop or a dash ends it)."""
    return ch.isspace() or ch in _MARKUP


def _negation_before(text: str, start: int, floor: int) -> str:
    """A negation just before the span that the quote silently drops ("is not | available").

    Text before floor belongs to an earlier quoted part and is not looked at.
    """
    before = start
    while before > floor and (_between_words(text[before - 1]) or text[before - 1] == "-"):  # "not-", "**not**"
        before -= 1
    # Two characters back as well: 没有, 不是, 无法, 未能 negate what follows.
    for ch in text[max(floor, before - 2) : before]:
        if ch in CJK_NEGATIONS:
            return ch
    word_start = before
    while word_start > floor and _ascii_word(text[word_start - 1]):
        word_start -= 1
    word = text[word_start:before]
    return word if word and is_negation(word) else ""


def _negation_after(text: str, end: int) -> str:
    """A negation right after the span that the quote stops short of ("the pool does | not recover")."""
    after = end
    while after < len(text) and _between_words(text[after]):
        after += 1
    if after < len(text) and text[after] in CJK_NEGATIONS:
        return text[after]
    word_end = after
    while word_end < len(text) and _ascii_word(text[word_end]):
        word_end += 1
    word = text[after:word_end]
    return word if word and is_negation(word) else ""


def _guard(text: str, window: _Window, floor: int) -> str:
    before = _negation_before(text, window.start, floor)
    if before:
        return f"negation '{before}' precedes the excerpt"
    after = _negation_after(text, window.end)
    if after:
        return f"negation '{after}' follows the excerpt"
    return ""


def _negation_punctuation(part: str, parts: _Tokens, text: str, refs: _Tokens, first: int) -> str:
    """A negation quoted with other punctuation around it ("no payment" for "no, payment")."""
    for index, word in enumerate(parts.words):
        if not is_negation(word):
            continue
        # For a CJK negation the next character belongs to it (没有, 不是).
        reach = 2 if _CJK_CHAR.fullmatch(word) and index + 1 < len(parts.words) else 1
        for k in range(max(index - 1, 0), min(index + reach, len(parts.words) - 1)):
            quoted = part[parts.ends[k] : parts.starts[k + 1]]
            evidence = text[refs.ends[first + k] : refs.starts[first + k + 1]]
            if quoted != evidence:
                return f"negation '{word}' not quoted verbatim"
    return ""


def _similarity(part: str, window: str) -> float:
    """How much of the visible characters agree (the tokens do; soft punctuation may not)."""
    quoted, evidence = "".join(part.split()), "".join(window.split())
    common = sum((Counter(quoted) & Counter(evidence)).values())
    return 2 * common / (len(quoted) + len(evidence)) if quoted or evidence else 1.0


def _occurrences(refs: _Tokens, parts: _Tokens, floor_token: int):
    """Token indices where parts.words occur in refs.words as a run, from floor_token on."""
    if not parts.words:
        return
    needle = parts.joined
    position = refs.offsets[floor_token] - 1 if floor_token < len(refs.words) else len(refs.joined)
    for _ in range(_MAX_OCCURRENCES):
        position = refs.joined.find(needle, position)
        if position == -1:
            return
        yield bisect_left(refs.offsets, position + 1)
        position += 1


def _floor_token(refs: _Tokens, floor: int) -> int:
    return bisect_left(refs.starts, floor)


def _fast_exact(text: str, part: str, floor: int) -> _Window | None:
    """The first verbatim occurrence when it is clean; None sends the part to the token search."""
    start = text.find(part, floor)
    end = start + len(part)
    if start == -1 or _cuts_token(text, start) or _cuts_token(text, end):
        return None
    window = _Window(start, end)
    return None if _guard(text, window, floor) else window


class _Found(NamedTuple):
    window: _Window | None
    problem: str  # why the first refused occurrence was refused, "" if there was none


def _find(text: str, refs: _Tokens, part: str, floor: int) -> _Found:
    parts = _tokenize(part)
    problem = ""
    for first in _occurrences(refs, parts, _floor_token(refs, floor)):
        window = _Window(refs.starts[first], refs.ends[first + len(parts.words) - 1])
        issue = _guard(text, window, floor) or _negation_punctuation(part, parts, text, refs, first)
        if not issue:
            return _Found(window, "")
        problem = problem or issue
    return _Found(None, problem)


def _describe(words: list[str]) -> str:
    return " ".join(words)


def _diagnose(part: str, excerpt: str, text: str, refs: _Tokens, floor: int) -> tuple[str, float]:
    """Why part has no occurrence in text after floor, and the best token similarity seen."""
    parts = _tokenize(part)
    floor_token = _floor_token(refs, floor)
    available = set(fact_tokens(text[floor:]))
    for token in critical_tokens(part, mixed_case_words(excerpt)):
        if token not in available:
            kind = "number" if any(c.isdigit() for c in token) else "identifier"
            return f"{kind} {token} not in evidence", 0.0
    haystack = refs.words[floor_token:]
    if not haystack:
        return "no similar text in evidence", 0.0
    if len(parts.words) > _MAX_DIAGNOSED_TOKENS:
        return "excerpt does not occur in evidence word for word", 0.0
    counts = Counter(haystack)
    present = [(counts[word], index) for index, word in enumerate(parts.words) if word in counts]
    if not present:
        return "no similar text in evidence", 0.0
    _, anchor_index = min(present)
    anchor_word = parts.words[anchor_index]
    anchors = [i for i, word in enumerate(haystack) if word == anchor_word][:_MAX_ANCHORS]
    best: tuple[float, str] = (-1.0, "")
    for anchor in anchors:
        low = max(0, anchor - anchor_index - 2)
        region = list(haystack[low : anchor - anchor_index + len(parts.words) + 2])
        best = max(best, _region_reason(region, list(parts.words)))
    return best[1] or "excerpt does not occur in evidence word for word", max(best[0], 0.0)


def _region_reason(region: list[str], quoted: list[str]) -> tuple[float, str]:
    matcher = SequenceMatcher(None, region, quoted, autojunk=False)
    blocks = [block for block in matcher.get_matching_blocks() if block.size]
    if not blocks:
        return 0.0, ""
    # Cover as much ref text as the quote has unaligned at its edges, so a negation the
    # quote leaves out ("status is ok" for "status is not ok") is inside the window.
    lead, trail = blocks[0].b, len(quoted) - blocks[-1].b - blocks[-1].size
    start, end = max(0, blocks[0].a - lead), min(len(region), blocks[-1].a + blocks[-1].size + trail)
    window = region[start:end]
    ratio = 2 * sum(block.size for block in blocks) / (len(window) + len(quoted))
    difference = (Counter(w for w in quoted if is_negation(w)), Counter(w for w in window if is_negation(w)))
    if difference[0] != difference[1]:
        differing = next(iter((difference[0] - difference[1]) + (difference[1] - difference[0])))
        return ratio, f"negation '{differing}' differs"
    for tag, a1, a2, b1, b2 in SequenceMatcher(None, window, quoted, autojunk=False).get_opcodes():
        if tag == "replace":
            return ratio, f"'{_describe(window[a1:a2])}' changed to '{_describe(quoted[b1:b2])}'"
        if tag == "insert":
            return ratio, f"text '{_describe(quoted[b1:b2])}' not in evidence"
        if tag == "delete":
            return ratio, f"text '{_describe(window[a1:a2])}' left out"
    return ratio, ""


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
    for part in parts:
        window = _fast_exact(text, part, floor)
        if window is None:
            found = _find(text, _tokenize(text), part, floor)
            if found.window is None:
                return _rejected(part, excerpt, text, floor, found.problem)
            window = found.window
        quoted = text[window.start : window.end]
        if quoted != part:
            all_exact = False
            similarity = min(similarity, _similarity(part, quoted))
            if similarity < min_similarity:
                return ExcerptMatch(
                    False, "none", similarity, f"best similarity {similarity:.2f} < {min_similarity:.2f}"
                )
        floor = window.end
    if all_exact:
        return ExcerptMatch(True, "exact", 1.0, "")
    return ExcerptMatch(True, "near", similarity, "")


def _rejected(part: str, excerpt: str, text: str, floor: int, problem: str) -> ExcerptMatch:
    refs = _tokenize(text)
    if problem:
        return ExcerptMatch(False, "none", 1.0, problem)
    if floor and _find(text, refs, part, 0).window is not None:
        return ExcerptMatch(False, "none", 0.0, "excerpt parts out of order or overlapping")
    reason, ratio = _diagnose(part, excerpt, text, refs, floor)
    return ExcerptMatch(False, "none", round(ratio, 4), reason)
