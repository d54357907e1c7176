"""What kind of question it is: its language, narrow or broad, whether it asks for a count,
and the alert state it asks about. Cue words are consumed so they never become search terms.

Narrow (seeds 2.4): the user only asks to confirm one service / alert / log / error / time window
("is X ok?", "any 5xx on web-01?", 有没有); a broad cue ("why", "root cause", "what is causing",
为什么) wins over a narrow one. Alert states: "still firing" /
"still active" / 还在 / 仍在 → still_firing; "firing" / "active" / "triggered" / 告警中 → firing;
"resolved" / "resolve" / "recovered" / "cleared" / 已恢复 → resolved; "silenced" / "muted" / "suppressed" / 静默
→ silenced; "pending" → pending. The most specific state named first wins.
"""

from __future__ import annotations

import re

from evcli.contracts import AlertState
from evcli.scope.match import Spans

_HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")
_KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

NARROW_CUES = re.compile(
    r"\b(?:only|just)\s+(?:confirm|check|verify|tell me)\b"
    r"|\b(?:confirm|check|verify)\s+(?:whether|if)\b"
    r"|\b(?:is|are)\s+there\b|^\s*(?:is|are|does|do|did|has|have|was|were|any)\b"
    r"|\b(?:does|do|did)\b[^?.!]{0,80}?\bhave\b"
    r"|只确认|仅确认|是否存在|是否有|有没有|只查|仅查|只看|确认一下|是否出现|是不是有",
    re.IGNORECASE,
)
BROAD_CUES = re.compile(
    r"\bwhy\b|\broot[\s-]+cause|\bdiagnos|\bwrong\b"
    r"|\binvestigat|\btroubleshoot|\bwhat\s+happened|\bwhat\s+caused|\bwhat(?:\s+is|\s+are|'s)\s+causing"
    r"|为什么|为何|原因|根因|排查|诊断|怎么回事|分析",
    re.IGNORECASE,
)
_COUNT = re.compile(
    r"\bhow\s+(?:many|often|much)\b|\bnumber\s+of\b|\bcounts?\b"
    r"|多少次|多少|几次|几个|几条|次数|数量",
    re.IGNORECASE,
)
# An elliptical follow-up repeats the question before with something changed: "and since 09:15?",
# "what about web-02?", "same for yesterday", "那 web-02 呢？". It asks no question of its own.
_ELLIPTICAL = re.compile(
    r"^\s*(?:and|or|but|also|then|what\s+about|how\s+about|same\s+(?:for|on|in|since|with)|now\s+for)\b"
    r"|^\s*(?:那么?|还有|同样|换成)|呢\s*[?？]?\s*$",
    re.IGNORECASE,
)
_OWN_QUESTION = re.compile(
    r"\b(?:why|what|which|who|where|when|how)\b(?!\s+about)|为什么|什么|哪|怎么|如何", re.IGNORECASE
)
_STATES: tuple[tuple[AlertState, str], ...] = (
    (
        "still_firing",
        r"\bstill\s+(?:be\s+)?(?:firing|active|on|alerting|going\s+off|open)\b|还在|仍在|仍然在|依然在|还没恢复|未恢复",
    ),
    (
        "resolved",
        r"\b(?:resolved?|resolves|recover(?:ed|s|y)?|cleared|auto-?resolved)\b|已恢复|已经恢复|恢复了|已解决|恢复",
    ),
    ("silenced", r"\b(?:silenced|muted|suppressed|silence[sd]?)\b|静默|屏蔽"),
    ("pending", r"\bpending\b"),
    ("firing", r"\b(?:firing|fired|active|triggered|going\s+off)\b|告警中|触发"),
)


def detect_language(question: str) -> str:
    """ "ko" with Hangul, "ja" with kana (Japanese mixes kana into its kanji), "zh" with Han
    characters only, else "en". Whether a language is answered in is the engines' business."""
    if _HANGUL.search(question):
        return "ko"
    if _KANA.search(question):
        return "ja"
    return "zh" if _HAN.search(question) else "en"


def is_narrow(question: str) -> bool:
    return bool(NARROW_CUES.search(question)) and not BROAD_CUES.search(question)


def is_elliptical(question: str) -> bool:
    """Whether the question only changes something of the question before ("and since 09:15?"),
    asking nothing of its own (a why/what/how word makes it a question of its own: "and why?")."""
    if not _ELLIPTICAL.search(question):
        return False
    rest = _ELLIPTICAL.sub("", question)
    return not _OWN_QUESTION.search(rest)


_WHEN = re.compile(
    r"\bwhen\b|\bwhat\s+time\b|\bsince\s+when\b|\bhow\s+long\s+ago\b"
    r"|\b(?:first|earliest|last|latest|most\s+recent)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:errors?|warnings?|exceptions?|failures?|lines?|occurrences?|entry|entries|messages?|time)\b"
    r"|什么时候|何时|几点|什么时间|从何时|第一次|首次|最早|最后一次|最近一次",
    re.IGNORECASE,
)


# the onset or end a "when" question asks of what it names: the first or last matching line answers it
_ONSET = re.compile(
    r"\b(?:start(?:s|ed|ing)?|beg[ai]n|begins|stop(?:s|ped)?|end(?:s|ed)?|first|last|latest|earliest"
    r"|most\s+recent)\b|开始|结束|停止|第一次|首次|最早|最后一次|最近一次",
    re.IGNORECASE,
)


def asks_when(question: str) -> bool:
    """Whether the question asks when something happened ("when did the break-in attempts start?", "the
    first error in shop-api today?"): the first and last matching line answer it."""
    return _WHEN.search(question) is not None


def when_cue(question: str, spans: Spans) -> None:
    """A "when" question's onset words ("start", "last", 第一次) are consumed: they ask for the first or
    last matching line, which the answer states, and are no words to search for."""
    if not asks_when(question):
        return
    for match in _ONSET.finditer(question):
        spans.claim(match.start(), match.end())


# "which IP …", "top source addresses", "哪个 IP 最多": the matching lines counted per address answer it
_ADDRESS_NOUN = re.compile(
    r"(?<![\w.-])(?:(?:source|client|remote|src|attacker|attacking)\s+)?"
    r"(?:(?:IPv4|IP)\s+address(?:es)?|IPs?|address(?:es)?|clients?)(?![\w.-])"
    r"|(?:来源|源|客户端|攻击)?\s*(?<![A-Za-z])IP(?![A-Za-z])\s*(?:地址)?|来源地址|源地址",
    re.IGNORECASE,
)
_WHICH = re.compile(
    r"\b(?:which|what|top|most|busiest|noisiest|who)\b|\bfrom\s+where\b|哪个|哪些|哪几个|最多|排名|前\s*\d+|谁",
    re.IGNORECASE,
)


# "which host logged the most I/O errors?", "哪台机器报错最多": the matching lines counted per instance
_INSTANCE_NOUN = re.compile(
    r"(?<![\w.-])(?:hosts?|hostnames?|nodes?|servers?|machines?|instances?|pods?|containers?|boxes)(?![\w.-])"
    r"|哪台|机器|主机|节点|实例|服务器",
    re.IGNORECASE,
)


# "top 5", and the verbs that only say an address sent something ("which IPs hit nginx the most?")
_ADDRESS_WORDS = re.compile(r"\btop(?:\s+\d+)?\b|\b(?:hit(?:s|ting)?|c[ao]me|comes|coming|sen[dt]|sending)\b", re.I)


def asks_by_address(question: str) -> bool:
    """Whether the question asks which addresses ("which IP had the most failed passwords?", 哪个 IP 失败最多)."""
    return _asks_which(_ADDRESS_NOUN, question)


# "which endpoint had the most 504s?", "top URLs", "哪个接口": the matching lines counted per requested path
_PATH_NOUN = re.compile(
    r"(?<![\w.-])(?:endpoints?|urls?|uris?|paths?|routes?|pages?|apis?|requests? paths?)(?![\w.-])|接口|路径|页面|网址",
    re.IGNORECASE,
)


def asks_by_instance(question: str) -> bool:
    """Whether the question asks which host, node or pod ("which host logged the most I/O errors?")."""
    return _asks_which(_INSTANCE_NOUN, question)


def _asks_which(noun: re.Pattern[str], question: str) -> bool:
    return noun.search(question) is not None and _WHICH.search(question) is not None


# query_logs' `count_by` and the noun that asks for it, the first that the question asks winning
_BREAKDOWNS = {"address": _ADDRESS_NOUN, "path": _PATH_NOUN, "instance": _INSTANCE_NOUN}


def breakdown(question: str) -> str | None:
    """What the question asks the matching lines counted by (query_logs' `count_by`): "address" for
    "which IP …", "path" for "which endpoint …", "instance" for "which host …", else None."""
    return next((by for by, noun in _BREAKDOWNS.items() if _asks_which(noun, question)), None)


def breakdown_cue(question: str, spans: Spans) -> None:
    """The nouns of a which-address, which-endpoint or which-host question are consumed (the counts the stats
    state answer it), and a which-address or which-endpoint question's "top 5" and sending verbs: no words
    to search for."""
    by = breakdown(question)
    if by is None:
        return
    found = [*_BREAKDOWNS[by].finditer(question), *(_ADDRESS_WORDS.finditer(question) if by != "instance" else ())]
    for match in found:
        spans.claim(match.start(), match.end())


# "most common errors", "top 5 warnings", "what keeps failing most often", 最常见的错误: the message templates
# of the matching lines, by count, answer it (not the newest lines)
_COMMON = re.compile(
    r"\bmost\s+(?:common|frequent|often|repeated)\b|\b(?:commonest|recurring)\b"
    r"|\btop\s+(?:\d+\s+)?(?=(?:[\w-]+\s+)?(?:errors?|warnings?|exceptions?|messages?|failures?|issues?|problems?)\b)"
    r"|最常见|最频繁|最多的(?=错误|报错|异常|告警|警告)|出现最多|高频",
    re.IGNORECASE,
)


def asks_common(question: str) -> bool:
    """Whether the question asks which messages recur most ("most common errors in shop-api?", 最常见的报错);
    a which-IP or which-host question is counted by address or instance instead."""
    return _COMMON.search(question) is not None and breakdown(question) is None


def common_cue(question: str, spans: Spans) -> None:
    """A most-common question's cue words are consumed: the templates' counts answer them, they are no
    words to search for ("errors" after them asks for the ERROR level)."""
    if not asks_common(question):
        return
    for match in _COMMON.finditer(question):
        spans.claim(match.start(), match.end())


def wants_count(question: str, spans: Spans) -> bool:
    """Whether the question asks how many; the cue is consumed."""
    found = False
    for match in _COUNT.finditer(question):
        found = spans.claim(match.start(), match.end()) or found
    return found


def alert_state(question: str, spans: Spans) -> AlertState | None:
    """The alert state asked about; every state cue is consumed, the most specific wins."""
    found: AlertState | None = None
    for state, pattern in _STATES:
        for match in re.finditer(pattern, question, re.IGNORECASE):
            if spans.claim(match.start(), match.end()) and found is None:
                found = state
    return found
