"""What a comparison question compares its window against: "compare 14:00-14:10 with the hour before",
"what's different from yesterday?", "与昨天相比有什么变化".

The words and forms are each language's `time.baseline` table (grammar/<language>.toml): after a
comparison `{cue}` either a `{day}` phrase (the same hours a day earlier: mode "day") or a length right
before the window (mode "before"): a `{previous}` word and a length, or a length and an `{after}` word. A
length is an optional `{count}` (one when none is written) and a `{unit}` (the language's `time.units`).

Invariants: only a question of the `changes` answer kind (its grammar group) has a baseline, so
"trouble with yesterday's deploy" names none (nor does a day word followed by an apostrophe); the cue and
what it names are read as one span and claimed, so the time words in it are not read again as the window;
a length that is no whole number or that no backend accepts ("the 400 days before") is no baseline; the
patterns are compiled once per process, on first use.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import cache

from evcli.backends.base import parse_window
from evcli.contracts import AskedBaseline
from evcli.scope.grammar import has
from evcli.scope.match import Spans
from evcli.scope.time_language import Language, TimeWords, alternation, packaged, scan


@cache
def _forms(words: TimeWords) -> tuple[tuple[Language, tuple[re.Pattern[str], ...]], ...]:
    """Each language's forms: a day phrase is no possessive ("yesterday's deploy")."""
    return words.forms_by_language(
        "baseline",
        lambda language: {
            "count": language.count_pattern(),
            "unit": alternation(language.part("units")),
            "day": alternation(language.words("day", "baseline") or ()) + "(?!')",
        },
    )


def find_baseline(question: str, spans: Spans) -> AskedBaseline | None:
    """The baseline a comparison question names, claiming its words; None when it names none."""
    if not has(question, "changes"):
        return None
    for language, forms in _forms(packaged()):
        for match in scan(forms, question):
            found = _baseline(match, language)
            if found is not None and spans.claim(match.start(), match.end()):
                return found
    return None


def _baseline(match: re.Match[str], language: Language) -> AskedBaseline | None:
    text = match.group(0).strip()
    groups = match.groupdict()
    if groups.get("day"):
        return AskedBaseline(text=text, mode="day")
    suffix = language.value("units", groups["unit"])
    count = language.number(groups["count"]) if groups.get("count") else 1
    if suffix is None or not count or count != int(count):
        return None
    label = f"{int(count)}{suffix}"
    try:
        parse_window(label, datetime.now(UTC))  # only to check the length is one a backend accepts
    except ValueError:
        return None
    return AskedBaseline(text=text, mode="before", length=label)
