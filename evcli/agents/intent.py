"""Deterministic question understanding: which services, alerts, error terms and
time window a question is about, its language, and whether it is a *narrow*
task (the user only asks to confirm one service / alert / log / error / order /
time window, seeds 2.4).

Every engine gets the same `Intent` from the pipeline, and the offline engine
plans its tool calls from it, so it must never depend on a model. Matching is
case-insensitive on ASCII word boundaries (`支付服务的CPU` still finds an alias
next to CJK text) and every match consumes its span, so `payment service` is
one service and not also the alias `payment`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from evcli.backends.base import parse_window

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_LEFT = r"(?<![A-Za-z0-9_])"
_RIGHT = r"(?![A-Za-z0-9_])"
_SEPARATOR = r"[\s_-]*"  # "payment service", "payment_service", "payment-service"


@dataclass(frozen=True)
class Intent:
    language: str  # see detect_language: "en", "zh", "ja", "ko"
    narrow: bool  # the user only asks to confirm one thing (seeds 2.4)
    services: tuple[str, ...]  # canonical service names, in question order
    alertnames: tuple[str, ...]  # alert names, in question order
    terms: tuple[str, ...]  # what is worth searching logs and runbooks for, strongest first
    window: str | None  # "30m", "1h", "2h", ...; None when the question names none


_HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")
_KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def detect_language(question: str) -> str:
    """ "ko" with Hangul, "ja" with kana (Japanese mixes kana into its kanji), "zh" with Han
    characters only, else "en". Whether a language is answered in is the engines' business."""
    if _HANGUL.search(question):
        return "ko"
    if _KANA.search(question):
        return "ja"
    return "zh" if _HAN.search(question) else "en"


# --- search terms ----------------------------------------------------------------
#
# (term, cues). A cue equal to the term (case-insensitively) is a *literal* mention;
# other cues are synonyms, mostly bilingual. Literal mentions are searched first:
# the user's own word is the most precise query. The first term of a synonym entry
# is the one that matches real log text best (连接池 → "pool" finds `HikariPool-1`
# and `db pool` lines; "HikariCP" itself rarely occurs in log lines).
_TERM_TABLE: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    # HikariCP logs as `HikariPool-1` / `com.zaxxer.hikari`: "Hikari" finds all of them.
    (("Hikari",), ("hikaricp",)),
    (("HikariPool",), ("hikaripool",)),
    (("Hikari",), ("hikari",)),
    (
        ("pool", "HikariCP"),
        (
            "连接池",
            "connection pool",
            "connection pools",
            "db pool",
            "database pool",
            "pool exhaustion",
        ),
    ),
    (("thread pool",), ("thread pool", "线程池")),
    (("OOMKilled",), ("oomkilled", "oom killed", "oom-killed")),
    (("OutOfMemoryError", "OOM"), ("outofmemoryerror", "out of memory", "内存溢出")),
    (("OOM",), ("oom",)),
    (("Full GC",), ("full gc", "fullgc")),
    (("GC",), ("gc", "garbage collection", "垃圾回收")),
    (("memory", "heap"), ("memory", "内存", "heap", "堆内存")),
    (("restart", "OOMKilled"), ("restart", "重启", "crashloop", "crash loop")),
    (("timeout", "timed out"), ("timeout", "time out", "timed out", "超时")),
    (("slow query",), ("slow query", "slow sql", "慢查询", "慢sql", "慢 sql")),
    (("Redis",), ("redis",)),
    (("disk", "No space"), ("disk", "磁盘", "disk space", "no space", "空间不足")),
    (("CPU",), ("cpu",)),
    (("latency",), ("latency", "延迟", "响应慢", "slow response")),
    (("deadlock",), ("deadlock", "死锁")),
    (("eviction",), ("eviction", "evicted", "驱逐")),
    (("MySQL",), ("mysql",)),
    (("x509",), ("x509", "certificate", "certificates", "证书", "tls handshake")),
    (("rebalance",), ("rebalance", "rebalancing", "再平衡")),
    (("lag",), ("consumer lag", "lag", "积压")),
    (("NXDOMAIN",), ("nxdomain",)),
    (("no such host",), ("no such host", "dns", "域名解析", "解析失败")),
    (("panic",), ("panic",)),
    # Kubernetes container states: CamelCase like an alert name, but a log/status term.
    (("CrashLoopBackOff",), ("crashloopbackoff",)),
    (("ImagePullBackOff",), ("imagepullbackoff",)),
)
_TERM_SUFFIX = r"(?:s|es|ed|ing)?"

# CamelCase words that name an alert rather than a component: they carry one of these words.
_ALERT_WORDS = frozenset(
    [
        "high",
        "low",
        "usage",
        "rate",
        "latency",
        "down",
        "slow",
        "response",
        "exhausted",
        "full",
        "space",
        "unavailable",
        "failed",
        "failure",
        "failing",
        "restarts",
        "restarting",
        "killed",
        "pressure",
        "saturation",
        "saturated",
        "lag",
        "timeout",
        "timeouts",
        "throttling",
        "crash",
        "crashlooping",
        "looping",
        "backoff",
        "absent",
        "missing",
        "spike",
        "exceeded",
        "notready",
        "unhealthy",
        "almost",
        "errors",
    ]
)
_CAMEL = re.compile(rf"{_LEFT}([A-Z][A-Za-z0-9]*[a-z0-9][A-Z][A-Za-z0-9]*|[A-Z]{{2,}}[a-z][A-Za-z0-9]*){_RIGHT}")
_HUMPS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_IDENTIFIERS = re.compile(
    r"(?<![\w-])(?:[A-Z]{2,}-\d{3,}|[0-9a-f]{12,}|[A-Za-z][\w.-]*:\d{2,5})(?![\w-])"
)  # ORD-7188072, a trace id, redis-cluster-01:6379
_QUOTED = re.compile(r"\"([^\"]{2,80})\"|“([^”]{2,80})”|`([^`]{2,80})`|「([^」]{2,80})」")

# --- narrow / broad ------------------------------------------------------------------

_NARROW_CUES = re.compile(
    r"\b(?:only|just)\s+(?:confirm|check|verify|tell me)\b"
    r"|\b(?:confirm|check|verify)\s+(?:whether|if)\b"
    r"|\b(?:is|are)\s+there\b|^\s*(?:is|are|does|do|did|has|have|was|were)\b"
    r"|\b(?:does|do|did)\b[^?.!]{0,80}?\bhave\b"
    r"|只确认|仅确认|是否存在|是否有|有没有|只查|仅查|只看|确认一下|是否出现|是不是有",
    re.IGNORECASE,
)
_BROAD_CUES = re.compile(
    r"\bwhy\b|\broot[\s-]+cause|\bdiagnos|\bwrong\b"
    r"|\binvestigat|\btroubleshoot|\bwhat\s+happened|\bwhat\s+caused"
    r"|为什么|为何|原因|根因|排查|诊断|怎么回事|分析",
    re.IGNORECASE,
)

# --- windows -----------------------------------------------------------------------

_EN_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "forty-five": 45,
    "sixty": 60,
    "ninety": 90,
}
TIME_UNITS = {  # English time-unit words → the window suffix they mean
    "s": "s",
    "sec": "s",
    "secs": "s",
    "second": "s",
    "seconds": "s",
    "m": "m",
    "min": "m",
    "mins": "m",
    "minute": "m",
    "minutes": "m",
    "h": "h",
    "hr": "h",
    "hrs": "h",
    "hour": "h",
    "hours": "h",
    "d": "d",
    "day": "d",
    "days": "d",
}
_EN_WINDOW = re.compile(
    r"\b(?:last|past|previous|recent|within(?:\s+the)?(?:\s+(?:last|past))?|in\s+the\s+(?:last|past))\s+"
    r"(?P<count>\d{1,4}|forty-five|(?!half\b)[a-z]+)?\s*"
    r"(?P<half>half\s+(?:an?\s+)?)?"
    r"(?P<unit>seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|[smhd])\b",
    re.IGNORECASE,
)
_ZH_DIGITS = {
    "零": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_ZH_UNITS = {"秒": "s", "秒钟": "s", "分钟": "m", "小时": "h", "钟头": "h", "天": "d"}
_ZH_WINDOW = re.compile(
    r"(?:(?:最近|过去|近)\s*(?P<count>\d{1,4}|[零一二两三四五六七八九十]+|半)?\s*个?\s*(?P<unit>秒钟|秒|分钟|小时|钟头|天)"
    r"|(?P<count2>\d{1,4}|[零一二两三四五六七八九十]+|半)\s*个?\s*(?P<unit2>秒钟|秒|分钟|小时|钟头|天)(?:内|以内|之内))"
)


def extract_intent(
    question: str,
    *,
    services: list[str],
    aliases: dict[str, str] | dict[str, list[str]],
    alertnames: list[str],
) -> Intent:
    """What the question is about. `aliases` maps an alias to its canonical service name
    ({service: [aliases]}, the shape `SnapshotBackend.service_aliases()` returns, is accepted too)."""
    taken: list[tuple[int, int]] = []
    found_services = _find_services(question, services, aliases, taken)
    found_alerts = _find_alertnames(question, alertnames, taken)
    terms = _find_terms(
        question,
        taken,
        exclude={name.lower() for name in (*found_services, *found_alerts)},
    )
    return Intent(
        language=detect_language(question),
        narrow=bool(_NARROW_CUES.search(question)) and not _BROAD_CUES.search(question),
        services=tuple(found_services),
        alertnames=tuple(found_alerts),
        terms=tuple(terms),
        window=extract_window(question),
    )


# --- matching ------------------------------------------------------------------------


def _name_pattern(name: str) -> str:
    """A service or alert name, its parts joined by any of space, `_` and `-`."""
    if _CJK.search(name):
        return re.escape(name)
    parts = [re.escape(part) for part in re.split(r"[\s_-]+", name) if part]
    return _LEFT + _SEPARATOR.join(parts) + _RIGHT


def _free(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return all(span[1] <= start or end <= span[0] for start, end in taken)


def _claim_spans(
    question: str, candidates: list[tuple[str, str]], taken: list[tuple[int, int]]
) -> list[tuple[int, int, str]]:
    """(start, end, value) of every match that overlaps nothing taken, in question order.

    `candidates` are (pattern, value); where matches overlap, the longest wins."""
    matches = []
    for pattern, value in candidates:
        for match in re.finditer(pattern, question, re.IGNORECASE):
            matches.append((match.start(), match.end(), value))
    matches.sort(key=lambda match: (-(match[1] - match[0]), match[0]))
    accepted = []
    for start, end, value in matches:
        if _free((start, end), taken):
            taken.append((start, end))
            accepted.append((start, end, value))
    return sorted(accepted)


def _distinct(values: list[str]) -> list[str]:
    seen: dict[str, str] = {}
    for value in values:
        seen.setdefault(value.lower(), value)
    return list(seen.values())


def _alias_pairs(aliases: dict[str, Any]) -> list[tuple[str, str]]:
    """(alias, service) pairs from {alias: service}, or from {service: [aliases]} as a backend lists them."""
    pairs = []
    for key, value in aliases.items():
        if isinstance(value, str):
            pairs.append((key, value))
        else:
            pairs += [(alias, key) for alias in value or ()]
    return pairs


def _find_services(
    question: str,
    services: list[str],
    aliases: dict[str, Any],
    taken: list[tuple[int, int]],
) -> list[str]:
    canonical = {service.lower(): service for service in services}
    candidates = [(_name_pattern(service), service) for service in services]
    for alias, service in _alias_pairs(aliases):
        candidates.append((_name_pattern(alias), canonical.get(service.lower(), service)))
    if not services:
        # A backend that cannot list its services: take names that look like one.
        candidates.append((_LEFT + r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*-(?:service|svc)" + _RIGHT, ""))
    return _distinct(
        [value or question[start:end].lower() for start, end, value in _claim_spans(question, candidates, taken)]
    )


def humps(name: str) -> list[str]:
    """The words of a CamelCase name: HighCPUUsage → High, CPU, Usage."""
    return _HUMPS.findall(name)


def _alert_like(word: str) -> bool:
    return any(hump.lower() in _ALERT_WORDS for hump in humps(word))


def _find_alertnames(question: str, alertnames: list[str], taken: list[tuple[int, int]]) -> list[str]:
    # "HighCPUUsage" and also "high cpu usage".
    candidates = [(_LEFT + _SEPARATOR.join(map(re.escape, humps(name))) + _RIGHT, name) for name in alertnames]
    found = [value for _, _, value in _claim_spans(question, candidates, taken)]
    literal = {cue for cues in (c for _, c in _TERM_TABLE) for cue in cues}
    for match in _CAMEL.finditer(question):
        word = match.group(1)
        if (
            _free(match.span(1), taken)
            and word.lower() not in literal
            and not word.endswith(("Exception", "Error"))
            and _alert_like(word)
        ):
            taken.append(match.span(1))
            found.append(word)
    return _distinct(found)


def _find_terms(question: str, taken: list[tuple[int, int]], exclude: set[str]) -> list[str]:
    literal: list[tuple[int, str]] = []
    derived: list[tuple[int, str]] = []
    for match in _QUOTED.finditer(question):
        text = next(group for group in match.groups() if group).strip()
        if text and _free(match.span(), taken) and text.lower() not in exclude:
            taken.append(match.span())
            literal.append((match.start(), text))
    for match in _IDENTIFIERS.finditer(question):
        if _free(match.span(), taken) and match.group().lower() not in exclude:
            taken.append(match.span())
            literal.append((match.start(), match.group()))
    candidates = []
    for index, (_, cues) in enumerate(_TERM_TABLE):
        for cue in cues:
            pattern = (
                re.escape(cue)
                if _CJK.search(cue)
                else _LEFT + re.escape(cue).replace(r"\ ", r"\s+") + _TERM_SUFFIX + _RIGHT
            )
            candidates.append((pattern, f"{index}:{cue}"))
    for position, _, value in _claim_spans(question, candidates, taken):
        entry, cue = value.split(":", 1)
        entry_terms = _TERM_TABLE[int(entry)][0]
        if cue.lower() == entry_terms[0].lower():
            literal.append((position, entry_terms[0]))
            derived += [(position, term) for term in entry_terms[1:]]
        else:
            derived += [(position, term) for term in entry_terms]
    for match in _CAMEL.finditer(question):  # a class or component the user names: RiskScoreCalculator
        if _free(match.span(1), taken) and match.group(1).lower() not in exclude:
            taken.append(match.span(1))
            literal.append((match.start(1), match.group(1)))
    ordered = [term for _, term in sorted(literal)] + [term for _, term in sorted(derived, key=lambda item: item[0])]
    return [term for term in _distinct(ordered) if term.lower() not in exclude]


# --- windows -------------------------------------------------------------------------


def _zh_number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        high = _ZH_DIGITS.get(tens, 0) if tens else 1
        low = _ZH_DIGITS.get(ones, 0) if ones else 0
        return high * 10 + low if (not tens or tens in _ZH_DIGITS) and (not ones or ones in _ZH_DIGITS) else None
    return _ZH_DIGITS.get(text)


def _label(count: float, unit: str) -> str | None:
    seconds = count * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
    if seconds <= 0 or seconds != int(seconds):
        return None
    seconds = int(seconds)
    for size, suffix in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds % size == 0 and (suffix != "d" or unit == "d"):
            label = f"{seconds // size}{suffix}"
            break
    else:
        label = f"{seconds}s"
    try:
        parse_window(label, datetime(2000, 1, 1, tzinfo=UTC))
    except ValueError:
        return None
    return label


def extract_window(question: str) -> str | None:
    """The relative time window a question names ("last 30 minutes", "过去1小时"), or None."""
    for match in _EN_WINDOW.finditer(question):
        unit = TIME_UNITS[match["unit"].lower()]
        raw = (match["count"] or "").lower()
        if raw and not raw.isdigit() and raw not in _EN_NUMBERS:
            continue  # "the last deployment hour" is no window
        count: float = int(raw) if raw.isdigit() else _EN_NUMBERS.get(raw, 1)
        if match["half"]:
            count = count * 0.5 if raw else 0.5
        label = _label(count, unit)
        if label:
            return label
    for match in _ZH_WINDOW.finditer(question):
        raw = match["count"] or match["count2"] or "一"
        unit = _ZH_UNITS[match["unit"] or match["unit2"]]
        zh_count = 0.5 if raw == "半" else _zh_number(raw)
        if zh_count is None:
            continue
        label = _label(zh_count, unit)
        if label:
            return label
    return None
