"""The questions an on-call engineer asks about an incident, in English and Chinese.

Templates are data: per language, ones that state the onset time (HH:MM in the environment's
timezone, rounded down to the minute) and ones that do not, for either symptom users notice
(`slow` pages or `errors`). `{entry}` is the user-facing service, `{time}` the onset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from random import Random
from zoneinfo import ZoneInfo


@dataclass(frozen=True)
class Question:
    text: str
    language: str  # "en" or "zh"
    names_time: bool  # whether the question states the onset time


@dataclass(frozen=True)
class Template:
    text: str
    symptom: str | None = None  # only for incidents users notice as this ("slow" or "errors")

    @property
    def names_time(self) -> bool:
        return "{time}" in self.text


TEMPLATES: Mapping[str, tuple[Template, ...]] = {
    "en": (
        Template("Users report errors and slow pages since {time}. What is the root cause?"),
        Template("What is the root cause of the incident?"),
        Template("Why is {entry} slow?", "slow"),
        Template("Why is {entry} returning errors?", "errors"),
        Template("Since {time} {entry} has been failing requests. Which service is at fault?", "errors"),
        Template("{entry} latency went up at {time}. What is causing it?", "slow"),
        Template("Something changed around {time}. Find the service that caused it."),
        Template("Which service is behind the current outage?"),
        Template("Customers see failed requests and timeouts. What broke?", "errors"),
        Template("We get paged for {entry} since {time}; what is the underlying cause?"),
    ),
    "zh": (
        Template("从 {time} 开始用户反馈报错，根因是什么？"),
        Template("{entry} 为什么报错？", "errors"),
        Template("{entry} 为什么这么慢？", "slow"),
        Template("这次故障的根因是什么？"),
        Template("{time} 起 {entry} 响应变慢，是哪个服务导致的？", "slow"),
        Template("大约 {time} 开始大量请求失败，请定位根因。", "errors"),
        Template("线上从 {time} 开始出问题了，哪个服务是源头？"),
        Template("用户说页面打不开或者很慢，帮忙查一下根本原因。"),
    ),
}


def ask(rng: Random, entry: str, onset: datetime, timezone: str, symptom: str) -> tuple[Question, ...]:
    """3–5 distinct questions, at least one in each language, at least one stating the time."""
    time = onset.astimezone(ZoneInfo(timezone)).strftime("%H:%M")
    fitting = [
        (language, t) for language, templates in TEMPLATES.items() for t in templates if t.symptom in (None, symptom)
    ]
    while True:
        chosen = rng.sample(fitting, rng.randint(3, 5))
        languages = {language for language, _ in chosen}
        if len(languages) == len(TEMPLATES) and any(t.names_time for _, t in chosen):
            break
    return tuple(Question(t.text.format(entry=entry, time=time), language, t.names_time) for language, t in chosen)
