"""The questions an on-call engineer asks about an incident, in English and Chinese.

Templates are data: per language, ones that state the onset time (HH:MM in the environment's
timezone, rounded down to the minute) and ones that do not, for either symptom users notice
(`slow` pages or `errors`). `{entry}` is the user-facing service, `{time}` the onset.

Trace questions (TRACE_TEMPLATES) are asked only of incidents with traces, one per kind the spans
answer: where the time goes (`slow_origin`) and where the errors come from (`error_origin`) when the
spans show an origin (`spans.SpanFacts`), and who calls a service (`callers`, `{service}`: one whose
callers in the spans are its callers in the graph). Each carries its expected answer.
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


@dataclass(frozen=True)
class TraceQuestion:
    text: str
    language: str  # "en" or "zh"
    kind: str  # one of TRACE_KINDS
    subject: str | None  # the service asked about (the callee of a callers question, the entry), or None
    expected: tuple[str, ...]  # the origin (one service), or every caller of the subject (in graph order)


@dataclass(frozen=True)
class TraceTemplate:
    text: str
    kind: str  # one of TRACE_KINDS


TRACE_KINDS = ("slow_origin", "error_origin", "callers")
TRACE_TEMPLATES: Mapping[str, tuple[TraceTemplate, ...]] = {
    "en": (
        TraceTemplate("Which service is slow?", "slow_origin"),
        TraceTemplate("Which call is the slowest?", "slow_origin"),
        TraceTemplate("Where does the time of {entry}'s requests go?", "slow_origin"),
        TraceTemplate("Who calls {service}?", "callers"),
        TraceTemplate("Which services call {service}?", "callers"),
        TraceTemplate("Where do {entry}'s errors come from?", "error_origin"),
        TraceTemplate("Which service do the failing requests of {entry} fail in?", "error_origin"),
    ),
    "zh": (
        TraceTemplate("哪个服务调用最慢？", "slow_origin"),
        TraceTemplate("哪个服务变慢了？", "slow_origin"),
        TraceTemplate("谁调用了 {service}？", "callers"),
        TraceTemplate("哪些服务调用 {service}？", "callers"),
        TraceTemplate("{entry}的错误来自哪里？", "error_origin"),
        TraceTemplate("{entry} 的报错是从哪个服务来的？", "error_origin"),
    ),
}


def ask_traces(
    rng: Random, entry: str, origins: Mapping[str, str | None], callers: Mapping[str, tuple[str, ...]]
) -> tuple[TraceQuestion, ...]:
    """One question per kind the spans answer, in alternating languages (both once there are two):
    `origins` gives the slow and error origin (None: the spans show none), `callers` the services a
    callers question may ask about, each with its callers."""
    kinds = [kind for kind in TRACE_KINDS if origins.get(kind) or (kind == "callers" and callers)]
    languages = sorted(TRACE_TEMPLATES)
    first = rng.randrange(len(languages))
    questions = []
    for index, kind in enumerate(kinds):
        language = languages[(first + index) % len(languages)]
        template = rng.choice([t for t in TRACE_TEMPLATES[language] if t.kind == kind])
        subject: str | None = rng.choice(sorted(callers)) if kind == "callers" else None
        if subject is not None:
            expected = callers[subject]
        else:
            subject, expected = (entry if "{entry}" in template.text else None), (str(origins[kind]),)
        text = template.text.format(entry=entry, service=subject)
        questions.append(TraceQuestion(text, language, kind, subject, expected))
    return tuple(questions)


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
