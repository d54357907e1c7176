"""The cue words the scope extractor consumes so they never become search terms: a count's, a when-question's
onset words, a which-question's nouns, a most-common question's, the alert state's; and the question's
language, narrow or broad. The cue words are groups of the question grammar (evcli/scope/grammar/*.toml, one
engine: evcli.scope.grammar); what kind of answer the question asks is read once, by evcli.scope.answers.

Invariants: narrow means the user only asks to confirm one service / alert / log / error / time window
("is X ok?", "any 5xx on web-01?", 有没有) and a broad cue ("why", "root cause", 为什么) wins over a narrow one;
of the alert states (`state.*` groups) every cue is consumed and the most specific (first in `_STATES`)
wins; a which-question is counted by the first of address, path and instance it asks.
"""

from __future__ import annotations

import re

from evcli.contracts import AlertState
from evcli.scope.grammar import grammar, has, hits
from evcli.scope.match import Spans

_HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")
_KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SCRIPT_LANGUAGES = ("ko", "ja", "zh")  # read from the script a question is written in

_ONSET = ("onset.first", "onset.last")
# query_logs' `count_by` and the nouns that ask for it, the first that the question asks winning
_BREAKDOWNS = {
    "address": "noun.address",
    "path": "noun.path",
    "instance": "noun.instance",
}
_STATES: tuple[tuple[AlertState, str], ...] = (
    ("still_firing", "state.still_firing"),
    ("resolved", "state.resolved"),
    ("silenced", "state.silenced"),
    ("pending", "state.pending"),
    ("firing", "state.firing"),
)


def detect_language(question: str) -> str:
    """ "ko" with Hangul, "ja" with kana (Japanese mixes kana into its kanji), "zh" with Han
    characters only; else the language of the grammar file whose phrases cover most of the question among
    those written in Latin script ("en" unless another covers more). Whether a language is answered in is
    the engines' business."""
    if _HANGUL.search(question):
        return "ko"
    if _KANA.search(question):
        return "ja"
    if _HAN.search(question):
        return "zh"
    covered = grammar().languages(question)
    latin = [language for language in covered if language not in _SCRIPT_LANGUAGES]
    return max(latin, key=lambda language: (covered[language], language == "en"), default="en")


def is_broad(question: str) -> bool:
    """Whether the question asks why ("why", "root cause", "what is causing", 为什么, 排查)."""
    return has(question, "broad")


def is_narrow(question: str) -> bool:
    return has(question, "narrow") and not is_broad(question)


def _asks_when(question: str) -> bool:
    """Whether the question asks when something happened ("when did the break-in attempts start?", "the
    first error in shop-api today?"): the first and last matching line answer it."""
    return has(question, "when")


def when_cue(question: str, spans: Spans) -> None:
    """A "when" question's onset words ("start", "last", 第一次) are consumed: they ask for the first or
    last matching line, which the answer states, and are no words to search for."""
    if _asks_when(question):
        _claim_all(question, spans, *_ONSET)


def _asks_which(question: str, by: str) -> bool:
    return has(question, _BREAKDOWNS[by]) and has(question, "which")


def _breakdown(question: str) -> str | None:
    """What the question asks the matching lines counted by (query_logs' `count_by`): "address" for
    "which IP …", "path" for "which endpoint …", "instance" for "which host …", else None."""
    return next((by for by in _BREAKDOWNS if _asks_which(question, by)), None)


def breakdown_cue(question: str, spans: Spans) -> None:
    """The nouns of a which-address, which-endpoint or which-host question are consumed (the counts the stats
    state answer it), and a which-address or which-endpoint question's "top" and sending verbs: no words
    to search for."""
    by = _breakdown(question)
    if by is not None:
        _claim_all(question, spans, _BREAKDOWNS[by], *(("address_words",) if by != "instance" else ()))


def _asks_common(question: str) -> bool:
    """Whether the question asks which messages recur most ("most common errors in shop-api?", 最常见的报错);
    a which-IP or which-host question is counted by address or instance instead."""
    return has(question, "common") and _breakdown(question) is None


def common_cue(question: str, spans: Spans) -> None:
    """A most-common question's cue words are consumed: the templates' counts answer them, they are no
    words to search for ("errors" after them asks for the ERROR level)."""
    if _asks_common(question):
        _claim_all(question, spans, "common")


def wants_count(question: str, spans: Spans) -> bool:
    """Whether the question asks how many; the cue is consumed."""
    found = False
    for hit in hits(question, "count"):
        found = spans.claim(hit.start, hit.end) or found
    return found


def alert_state(question: str, spans: Spans) -> AlertState | None:
    """The alert state asked about; every state cue is consumed, the most specific wins."""
    found: AlertState | None = None
    for state, group in _STATES:
        for hit in hits(question, group):
            if spans.claim(hit.start, hit.end) and found is None:
                found = state
    return found


def _claim_all(question: str, spans: Spans, *groups: str) -> None:
    for hit in hits(question, *groups):
        spans.claim(hit.start, hit.end)
