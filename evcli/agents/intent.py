"""Deterministic question understanding for the engines that read an `Intent`: the question
scope (evcli.scope) in the shape the offline engine and the pipeline used before issue 10.

One implementation: every field derives from `evcli.scope.extract_scope`. `terms` are the
scope's phrases, then its tokens, then its other content words (strongest first); `window`
is the relative window the question names ("30m"), None for absolute ranges or none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

from evcli.contracts import QuestionScope
from evcli.scope.cues import detect_language
from evcli.scope.extract import extract_scope
from evcli.scope.match import humps
from evcli.scope.windows import TIME_UNITS, extract_window

__all__ = ["TIME_UNITS", "Intent", "detect_language", "extract_intent", "extract_window", "humps", "intent_of_scope"]


@dataclass(frozen=True)
class Intent:
    language: str  # see detect_language: "en", "zh", "ja", "ko"
    narrow: bool  # the user only asks to confirm one thing (seeds 2.4)
    services: tuple[str, ...]  # canonical service names, in question order
    alertnames: tuple[str, ...]  # alert names, in question order
    terms: tuple[str, ...]  # what is worth searching logs and runbooks for, strongest first
    window: str | None  # "30m", "1h", "2h", ...; None when the question names none


def extract_intent(
    question: str,
    *,
    services: list[str],
    aliases: dict[str, str] | dict[str, list[str]],
    alertnames: list[str],
    clock: datetime | None = None,
    tz: tzinfo = UTC,
) -> Intent:
    """What the question is about. `aliases` maps an alias to its canonical service name
    ({service: [aliases]}, the shape `SnapshotBackend.service_aliases()` returns, is accepted too).
    `clock` (default: now) only places absolute ranges, which an Intent does not carry."""
    scope = extract_scope(
        question,
        services=services,
        aliases=aliases,
        alertnames=alertnames,
        clock=clock or datetime.now(UTC),
        tz=tz,
    )
    return intent_of_scope(scope, services_known=bool(services))


def intent_of_scope(scope: QuestionScope, *, services_known: bool = True) -> Intent:
    """The Intent view of a scope. A backend that cannot list its services (`services_known`
    False) takes the service-like names of the question as its services."""
    services: list[Any] = scope.services if services_known else scope.services + scope.unknown_services
    return Intent(
        language=scope.language,
        narrow=scope.task_scope == "narrow",
        services=tuple(services),
        alertnames=tuple(scope.alertnames),
        terms=tuple(dict.fromkeys([*scope.phrases, *scope.tokens, *scope.terms])),
        window=scope.range.relative if scope.range else None,
    )
