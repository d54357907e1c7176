"""What a comparison question compares its window against (baselines.toml): "compare 14:00-14:10 with
the hour before", "what's different from yesterday?", "与昨天相比有什么变化".

Invariants: only a question of the `changes` answer kind (its grammar group) has a baseline, so
"trouble with yesterday's deploy" names none; the cue and what it names are read as one span and
claimed, so the time words in it are not read again as the window; a length no backend accepts
("the 400 days before") is no baseline.
"""

from __future__ import annotations

import re
import tomllib
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from evcli.backends.base import parse_window
from evcli.contracts import AskedBaseline
from evcli.scope.grammar import has
from evcli.scope.match import Spans
from evcli.scope.windows import EN_NUMBERS, TIME_UNITS, ZH_UNITS, zh_number

TABLE = Path(__file__).with_name("baselines.toml")
_UNITS = {"en": TIME_UNITS, "zh": ZH_UNITS}


def _either(words: list[str]) -> str:
    return "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True))


def _length(tag: str, count: str, between: str, unit: str, bound: str) -> str:
    """A length ("the 30 minutes", "hour", "一小时"), its groups named by `tag` (a pattern holds two)."""
    return rf"(?:(?P<count_{tag}>{count}){between})?(?P<unit_{tag}>{unit}){bound}"


@cache
def _patterns() -> tuple[re.Pattern[str], ...]:
    """One pattern per language of the table: cue, optional article, then a day phrase or a length."""
    found = []
    for language, row in tomllib.loads(TABLE.read_text(encoding="utf-8")).items():
        gap = r"\s+" if language == "en" else r"\s*"
        bound = r"\b" if language == "en" else ""
        count = r"\d{1,4}|" + (_either(list(EN_NUMBERS)) if language == "en" else "[零一二两三四五六七八九十]+")
        unit = _either(list(_UNITS[language]))
        article = rf"(?:(?:{_either(row['articles'])}){gap})?" if row["articles"] else ""
        between = gap if language == "en" else r"\s*个?\s*"
        before_length = _length("p", count, between, unit, bound)
        after_length = _length("a", count, between, unit, bound)
        found.append(
            re.compile(
                rf"{bound}(?:{_either(row['cues'])}){gap}{article}"
                rf"(?:(?P<day>{_either(row['day'])}){bound}(?!')"
                rf"|(?:{_either(row['previous'])})\s*{before_length}"
                rf"|{after_length}\s*(?:{_either(row['after'])}){bound})",
                re.IGNORECASE,
            )
        )
    return tuple(found)


def find_baseline(question: str, spans: Spans) -> AskedBaseline | None:
    """The baseline a comparison question names, claiming its words; None when it names none."""
    if not has(question, "changes"):
        return None
    for pattern in _patterns():
        for match in pattern.finditer(question):
            found = _baseline(match)
            if found is not None and spans.claim(match.start(), match.end()):
                return found
    return None


def _baseline(match: re.Match[str]) -> AskedBaseline | None:
    text = match.group(0).strip()
    if match["day"]:
        return AskedBaseline(text=text, mode="day")
    tag = "p" if match["unit_p"] else "a"
    unit = match[f"unit_{tag}"].lower()
    suffix = TIME_UNITS.get(unit) or ZH_UNITS.get(unit)
    count_text = (match[f"count_{tag}"] or "1").lower()
    count = int(count_text) if count_text.isdigit() else EN_NUMBERS.get(count_text) or zh_number(count_text)
    if suffix is None or not count:
        return None
    label = f"{count}{suffix}"
    try:
        parse_window(label, datetime.now(UTC))  # only to check the length is one a backend accepts
    except ValueError:
        return None
    return AskedBaseline(text=text, mode="before", length=label)
