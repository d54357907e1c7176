"""Relative windows a question names ("last 30 minutes", "past hour", "最近 20 分钟", "1小时内"),
as window labels ("30m", "1h") the backends accept (evcli.backends.base.parse_window).

The words and forms are each language's `time.window` table (grammar/<language>.toml): its `forms`
hold a `{unit}` (the language's `time.units`, or the table's own `unit` list), an optional `{count}` (a
number: one when none is written) and `{fraction}` (`time.fractions`, multiplying the count).

Invariants: the languages are read in file name order, each one's forms left to right; a count that is no
number or a window no backend accepts ("past 400 days") is no window; a unit the table lists under
`needs_count` names a window only with a count or a fraction ("the last hours" says no length); the
patterns are compiled once per process, on first use.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import cache

from evcli.backends.base import parse_window
from evcli.scope.time_language import Language, TimeWords, alternation, fold, packaged, scan

_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@cache
def _forms(words: TimeWords) -> tuple[tuple[Language, tuple[re.Pattern[str], ...]], ...]:
    return words.forms_by_language(
        "window",
        lambda language: {
            "count": language.count_pattern(),
            "fraction": alternation(language.part("fractions")),
            "unit": alternation(language.words("unit", "window") or language.part("units")),
        },
    )


def window_matches(question: str, words: TimeWords | None = None) -> Iterator[tuple[re.Match[str], str]]:
    """Every window the question names, with its label, language by language."""
    for language, forms in _forms(words or packaged()):
        for match in scan(forms, question):
            label = _window(match, language)
            if label:
                yield match, label


def _window(match: re.Match[str], language: Language) -> str | None:
    groups = match.groupdict()
    count = language.number(groups["count"]) if groups.get("count") else None
    fraction = language.value("fractions", groups["fraction"]) if groups.get("fraction") else None
    if groups.get("count") and count is None:
        return None
    unit = fold(groups["unit"])
    if (
        count is None
        and fraction is None
        and unit in {fold(word) for word in language.words("needs_count", "window") or ()}
    ):
        return None
    return _label((1 if count is None else count) * (fraction or 1), language.value("units", unit))


def extract_window(question: str) -> str | None:
    """The first relative window a question names, or None."""
    return next((label for _, label in window_matches(question)), None)


def _label(count: float, unit: str) -> str | None:
    seconds = count * _SECONDS[unit]
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
