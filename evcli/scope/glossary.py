"""A small bilingual operations glossary: Chinese words → the English words logs use.

Only a mapping for reading Chinese questions against English logs, never a list of what to
search: a question's words are searched whether or not they are here. The first English word
of an entry is the one real log lines use most. Longer keys win (连接池 before 连接). A few
English idioms whose words say less than the idiom ("requests time out", "crash looping") map the
same way.
"""

from __future__ import annotations

import re

GLOSSARY: dict[str, tuple[str, ...]] = {
    "登录失败": ("authentication failure", "Failed password"),
    "登录成功": ("Accepted", "session opened"),
    "暴力破解": ("Failed password", "Invalid user"),
    "认证失败": ("authentication failure",),
    "登录": ("login", "Accepted"),
    "超时": ("timeout", "timed out"),
    "拒绝": ("refused", "denied"),
    "连接池": ("pool",),
    "连接": ("connection",),
    "断开": ("disconnect", "reset"),
    "重启": ("restart",),
    "内存溢出": ("OutOfMemoryError", "out of memory"),
    "内存": ("memory",),
    "磁盘": ("disk",),
    "空间不足": ("No space left", "disk full"),
    "死锁": ("deadlock",),
    "慢查询": ("slow query",),
    "证书": ("certificate", "x509"),
    "过期": ("expired",),
    "崩溃": ("crash", "segfault"),
    "会话": ("session",),
    "线程池": ("thread pool",),
    "垃圾回收": ("GC",),
    "延迟": ("latency",),
    "响应慢": ("slow",),
    "慢": ("slow",),
    "积压": ("lag",),
    "域名解析": ("DNS", "no such host"),
    "解析失败": ("no such host", "NXDOMAIN"),
    "权限": ("permission denied",),
    "进程": ("process",),
    "队列": ("queue",),
    "缓存": ("cache",),
    "数据库": ("database",),
    "主从": ("replication",),
    "复制": ("replication",),
    "驱逐": ("evicted",),
    "再平衡": ("rebalance",),
    "限流": ("rate limit", "throttled"),
    "熔断": ("circuit breaker",),
    "失败": ("failed",),
    "请求": ("request",),
    "部署": ("deploy",),
    "上游": ("upstream",),
    "握手": ("handshake",),
    "端口": ("port",),
    "密码": ("password",),
    "密钥": ("publickey",),
    "心跳": ("heartbeat",),
}


# English idioms whose words are stop words one by one: (pattern, the words logs use)
IDIOMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"\btim(?:e|es|ed|ing)\s+out\b", ("timeout", "timed out")),
    (r"\bout\s+of\s+(?:memory|mem)\b", ("out of memory", "OOM")),
    (r"\bcrash[\s-]*loop(?:s|ing|ed)?\b", ("restart", "CrashLoopBackOff", "crash")),
    (r"\bno\s+space\s+left\b|\bout\s+of\s+(?:disk|space)\b", ("No space left",)),
    (
        r"\bsuccessful(?:ly)?\s+(?:ssh\s+)?log\s*(?:ins?|ged\s+in)\b|\blog(?:ged)?\s*ins?\s+successfully\b"
        r"|\blog\s*ins?\s+succeeded\b|\baccepted\s+log\s*ins?\b",
        ("Accepted", "session opened"),
    ),
    (r"\bfailed\s+(?:ssh\s+)?log\s*ins?\b|\blog\s*in\s+failures?\b", ("Failed password", "authentication failure")),
    (r"\bbrute[\s-]*forc(?:e|ed|ing)\b", ("Failed password", "Invalid user")),
    (r"\b(?:get|gets|got|getting)\s+in\b|\blogged\s+in\b", ("Accepted", "logged in")),
)


def translate(text: str) -> list[tuple[int, int, tuple[str, ...]]]:
    """(start, end, english words) of every glossary word in the text, longest keys first,
    never overlapping, in text order."""
    taken = [False] * len(text)
    found = []
    for pattern, words in IDIOMS:
        for match in re.finditer(pattern, text, re.IGNORECASE):
            if any(taken[match.start() : match.end()]):
                continue
            taken[match.start() : match.end()] = [True] * (match.end() - match.start())
            found.append((match.start(), match.end(), words))
    for key in sorted(GLOSSARY, key=len, reverse=True):
        start = text.find(key)
        while start != -1:
            end = start + len(key)
            if not any(taken[start:end]):
                taken[start:end] = [True] * len(key)
                found.append((start, end, GLOSSARY[key]))
            start = text.find(key, end)
    return sorted(found)


def alternatives(terms: list[str] | tuple[str, ...]) -> list[tuple[str, ...]]:
    """The terms that are alternative English words of one glossary word or idiom ("timeout", "timed out"
    of 超时), as groups in the terms' order: a log line holds one of them, rarely all, so a search
    wanting the thing asked looks for each of them apart."""
    entries = [*GLOSSARY.values(), *(words for _, words in IDIOMS)]
    groups: list[tuple[str, ...]] = []
    taken: set[str] = set()
    for term in terms:
        if term in taken:
            continue
        entry = next((words for words in entries if term in words and len(set(words) & set(terms)) > 1), None)
        group = tuple(t for t in terms if entry is not None and t in entry and t not in taken) or (term,)
        taken.update(group)
        groups.append(group)
    return groups
