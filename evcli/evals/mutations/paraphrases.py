"""Honest paraphrases an on-call engineer or a capable model writes of the same recorded facts (issue 22):
units spelled or rescaled, counts abbreviated or reordered, fields worded, approximate and bound values,
spreads, times in another form or zone, states in other words, clauses swapped. Each must still pass;
what to rewrite is read from the claim's stated facts and its items' typed fields (evcli.mutations.facts).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from evcli.evals.mutations.base import Case, Output
from evcli.evals.mutations.facts import (
    Rewrite,
    _claims,
    _first_rewritten,
    _format,
    _language,
    _matched,
    _quantities,
    _spliced_text,
    _unit_of,
    _with_text,
)
from evcli.gatekeeper import typed

# --- honest paraphrases an on-call engineer or a capable model writes (issue 22) ---------------------------
# Each rewrites any claim where it fits, in the claim's own language; where a form needs a gate change (a bound,
# a date in words, a time in another zone) its class still makes it, and the eval reports it rejected.

LANGUAGES = ("en", "zh")
LanguageRewrite = Callable[[str], Rewrite]


def _in_each_language(document, output, rewrite_in: LanguageRewrite, own_words: bool = False) -> Iterator[Case]:
    for language in LANGUAGES:
        yield from _first_rewritten(document, output, rewrite_in(language), language, own_words)


def _spliced(output: Output, index: int, raw: dict[str, Any], span: tuple[int, int], new: str, what: str) -> Case:
    """The case of the claim with its `plain` text's span replaced by `new`."""
    text = _spliced_text(raw["claim_text"], span, new)
    return Case(f"{raw['claim_id']}: {what} -> {new}", _with_text(output, index, text))


def _number(digits: str) -> float:
    return float(digits.replace(",", ""))


# A unit written as a word; a byte or percent unit keeps its sign in Chinese ("28.8GB", "92%").
_SPELLED = {
    "en": {
        "ms": "milliseconds",
        "s": "seconds",
        "m": "minutes",
        "min": "minutes",
        "h": "hours",
        "%": "percent",
        "GB": "gigabytes",
        "MB": "megabytes",
    },
    "zh": {"ms": "毫秒", "s": "秒", "m": "分钟", "min": "分钟", "h": "小时"},
}


def benign_unit_spelled(document, output):
    """25m written "25 minutes" (zh "25 分钟"), 92% "92 percent", 28.8GB "28.8 gigabytes"."""

    def rewrite_in(language: str) -> Rewrite:
        def rewrite(fact, values):
            digits, unit = _unit_of(fact)
            word = _SPELLED[language].get(unit)
            if fact.kind != "number" or word is None or not _matched(fact, values):
                return None
            return f"{digits} {word.removesuffix('s') if digits == '1' else word}"

        return rewrite

    return _in_each_language(document, output, rewrite_in)


# Time units largest first, in seconds, with their words.
_DURATIONS = (
    (3600.0, {"en": "hours", "zh": "小时"}),
    (60.0, {"en": "minutes", "zh": "分钟"}),
    (1.0, {"en": "seconds", "zh": "秒"}),
)
_SECONDS = {"h": 3600.0, "m": 60.0, "min": 60.0, "s": 1.0}


def _rescaled(seconds: float) -> tuple[float, int] | None:
    """The duration in the unit above the largest one it is a whole number of, if that is exact within two
    decimals (30m as 0.5 hours), else in the unit below (17m as 1020 seconds); with the unit's index."""
    for index, (size, _words) in enumerate(_DURATIONS):
        if seconds % size == 0 and abs(seconds) >= size:
            larger = _DURATIONS[index - 1][0] if index else None
            if larger is not None and round(seconds / larger, 2) * larger == seconds:
                return seconds / larger, index - 1
            if index + 1 < len(_DURATIONS):
                return seconds / _DURATIONS[index + 1][0], index + 1
    return None


def benign_duration_rescaled(document, output):
    """30m written "0.5 hours", 17m "1020 seconds", -1200s "-20 minutes" (zh "0.5 小时")."""

    def rewrite_in(language: str) -> Rewrite:
        def rewrite(fact, values):
            digits, unit = _unit_of(fact)
            if fact.kind != "number" or unit not in _SECONDS or not _matched(fact, values):
                return None
            rescaled = _rescaled(_number(digits) * _SECONDS[unit])
            if rescaled is None:
                return None
            number, index = rescaled
            return f"{_format(number)} {_DURATIONS[index][1][language]}"

        return rewrite

    return _in_each_language(document, output, rewrite_in)


_COMPOUND_DURATION = re.compile(r"(?<![\w.])(\d+)h(\d+)m(?!\w)")


def benign_compound_duration(document, output):
    """168h20m written "168 hours 20 minutes" and "10100 minutes" (zh "168 小时 20 分钟")."""
    for index, raw, _stated, _values in _claims(document, output):
        match = _COMPOUND_DURATION.search(typed.plain(raw["claim_text"]))
        if match is None:
            continue
        hours, minutes = int(match.group(1)), int(match.group(2))
        words = {"en": ("hours", "minutes"), "zh": ("小时", "分钟")}[_language(raw["claim_text"])]
        for new in (f"{hours} {words[0]} {minutes} {words[1]}", f"{hours * 60 + minutes} {words[1]}"):
            yield _spliced(output, index, raw, match.span(), new, match.group(0))


def benign_count_abbreviated(document, output):
    """184000 written "184 thousand" (zh 18.4万), 1200 "1.2k" (zh 1.2千); a count in the claim's own words."""

    def rewrite_in(language: str) -> Rewrite:
        def rewrite(fact, values):
            digits, unit = _unit_of(fact)
            if fact.kind != "number" or unit or not re.fullmatch(r"[\d,]{4,}", digits) or not _matched(fact, values):
                return None
            count = int(_number(digits))
            if language == "zh":
                return f"{_format(count / 10_000)}万" if count >= 10_000 else f"{_format(count / 1000)}千"
            return f"{_format(count / 1000)}k" if count % 1000 else f"{count // 1000} thousand"

        return rewrite

    return _in_each_language(document, output, rewrite_in, own_words=True)


_COUNTED = re.compile(r"(?<![\w.=:/-])(\d[\d,]*) ((?:[A-Za-z]+ ){0,2}[A-Za-z]+s)\b")


def benign_count_reordered(document, output):
    """ "14 matching lines" written "matching lines: 14", "9 restarts" "restarts: 9": a count (a number
    without a unit) after its noun."""
    for index, raw, stated, values in _claims(document, output):
        counts = {
            fact.start
            for fact in stated
            if fact.kind == "number" and fact.number and not fact.number.dim and _matched(fact, values)
        }
        match = next((m for m in _COUNTED.finditer(typed.plain(raw["claim_text"])) if m.start() in counts), None)
        if match is not None:
            yield _spliced(output, index, raw, match.span(), f"{match.group(2)}: {match.group(1)}", match.group(0))


# A field written key=value said in words.
_FIELD_WORDS = {
    "en": {
        "min": "a low of",
        "max": "a peak of",
        "last": "ending at",
        "current": "currently",
        "duration": "for",
        "value": "at",
        "score": "scoring",
    },
    "zh": {
        "min": "最低",
        "max": "最高",
        "last": "最后为",
        "current": "当前为",
        "duration": "持续",
        "value": "数值为",
        "score": "得分",
    },
}
_KEY_VALUE = re.compile(r"(?<![\w.])([a-z_]+)=(?=[-−\d])")


def benign_field_worded(document, output):
    """ "min=43.1%, max=92%" written "a low of 43.1%, a peak of 92%" (zh "最低 43.1%，最高 92%"),
    "duration=25m" "for 25m": every key=value whose key has words, the value as recorded."""
    for index, raw, _stated, _values in _claims(document, output):
        worded = _fields_in_words(raw["claim_text"])
        if worded != raw["claim_text"]:
            yield Case(f"{raw['claim_id']}: key=value in words", _with_text(output, index, worded))


def _fields_in_words(text: str) -> str:
    words = _FIELD_WORDS[_language(text)]
    return _KEY_VALUE.sub(lambda m: f"{words[m.group(1)]} " if m.group(1) in words else m.group(0), text)


def benign_field_after_value(document, output):
    """ "min=43.1%, max=92%" written "43.1% min, 92% max", "duration=25m" "25m duration": each key=value
    whose value is one word, turned round."""
    for index, raw, _stated, _values in _claims(document, output):
        text = raw["claim_text"]
        turned = re.sub(r"(?<![\w.])([a-z_]+)=([-−]?\d[^\s,，;；)）]*)", r"\2 \1", text)
        if turned != text:
            yield Case(f"{raw['claim_id']}: values before their keys", _with_text(output, index, turned))


_MIN_MAX = re.compile(r"\bmin=([^,，;；\s]+)[,，] ?max=([^,，;；\s]+)")
_RANGES = {"en": ("ranging from {} to {}", "between {} and {}"), "zh": ("在 {} 到 {} 之间",)}


def benign_range_worded(document, output):
    """ "min=43.1%, max=92%" written "ranging from 43.1% to 92%" and "between 43.1% and 92%"
    (zh "在 43.1% 到 92% 之间"): a range, not a way the quantity went."""
    for index, raw, _stated, _values in _claims(document, output):
        match = _MIN_MAX.search(typed.plain(raw["claim_text"]))
        if match is not None:
            for form in _RANGES[_language(raw["claim_text"])]:
                yield _spliced(output, index, raw, match.span(), form.format(*match.groups()), match.group(0))


def _significant(number: float, digits: int) -> float:
    """The number rounded to `digits` significant digits (0.6945 -> 0.69, 184000 -> 180000)."""
    return round(number, digits - 1 - math.floor(math.log10(abs(number))))


_APPROXIMATE = {
    "en": ("~{}", "roughly {}", "nearly {}", "approx. {}", "around {}", "≈{}", "close to {}"),
    "zh": ("约 {}", "大约 {}", "差不多 {}", "接近 {}"),
}


def benign_approximate_worded(document, output):
    """0.6945s written "~0.69s", 184000 "roughly 180000", 99.4% "approx. 99%" (zh "约 99%", "差不多 99%"):
    a quantity of the claim's own words rounded to two significant digits with a word that says so, a
    role's value too ("max=~92%"); the words take turns from claim to claim."""
    for index, raw, stated, values in _claims(document, output):
        text = raw["claim_text"]
        for fact in _quantities(text, stated, own_words=True):
            digits, unit = _unit_of(fact)
            if fact.kind != "number" or fact.approximate or not fact.value or not _matched(fact, values):
                continue
            rounded = _significant(_number(digits), 2)
            if rounded != _number(digits):
                forms = _APPROXIMATE[_language(text)]
                yield _spliced(
                    output,
                    index,
                    raw,
                    (fact.start, fact.end),
                    forms[index % len(forms)].format(_format(rounded) + unit),
                    fact.text,
                )
                break


def _rounded_below(number: float) -> float:
    """The number cut to two significant digits, or to one if that is the number itself: strictly below
    it (184000 -> 180000, 137 -> 130, 92 -> 90); 0 when there is none."""
    magnitude = math.floor(math.log10(number))
    for step in (10.0 ** (magnitude - 1), 10.0**magnitude):
        below = math.floor(number / step) * step
        if below < number:
            return round(below, 6)
    return 0.0


def _rounded_above(number: float) -> float:
    """The number rounded up to one significant digit, strictly above it (184000 -> 200000, 92 -> 100)."""
    step = 10.0 ** math.floor(math.log10(number))
    above = math.ceil(number / step) * step
    return round(above + step if above == number else above, 6)


_BOUNDS = {"en": ("over {}", "under {}"), "zh": ("超过 {}", "不到 {}")}


def benign_bound_stated(document, output):
    """28.8GB written "over 28GB", 184000 "under 200000" (zh "超过 28GB", "不到 200000"): a true bound on a
    measured quantity (one with a unit, or a count of thousands) of the claim's own words; over and
    under take turns from claim to claim."""
    for index, raw, stated, values in _claims(document, output):
        text = raw["claim_text"]
        for fact in _quantities(text, stated, own_words=True):
            digits, unit = _unit_of(fact)
            number = _number(digits) if fact.kind == "number" else 0.0
            if number <= 0 or not (unit or number >= 1000) or not _matched(fact, values):
                continue
            over, under = _BOUNDS[_language(text)]
            below = _rounded_below(number)
            new = (
                over.format(_format(below) + unit)
                if index % 2 == 0 and below > 0
                else under.format(_format(_rounded_above(number)) + unit)
            )
            yield _spliced(output, index, raw, (fact.start, fact.end), new, fact.text)
            break


def benign_percent_as_fraction(document, output):
    """92% written as the fraction 0.92 (a ratio's usual form), 37.6% as 0.376."""

    def rewrite(fact, values):
        digits, unit = _unit_of(fact)
        matched = _matched(fact, values)
        if fact.kind != "number" or unit != "%" or matched is None or matched.dim != "percent":
            return None
        decimals = len(digits.partition(".")[2]) + 2
        return f"{_number(digits) / 100:.{decimals}f}"

    return _first_rewritten(document, output, rewrite)


def benign_negative_as_ago(document, output):
    """current=-1200s written "current=1200s ago" (zh "1200秒前"): the sign said with a past word."""

    def rewrite_in(language: str) -> Rewrite:
        def rewrite(fact, values):
            digits, unit = _unit_of(fact)
            if fact.kind != "number" or not digits.startswith(("-", "−")) or unit not in _SECONDS:
                return None
            if not _matched(fact, values):
                return None
            return f"{digits[1:]}{unit} ago" if language == "en" else f"{digits[1:]}{_SPELLED['zh'][unit]}前"

        return rewrite

    return _in_each_language(document, output, rewrite_in)


# An alert's state in other words a writer uses.
_STATE_WORDS = {
    "en": {"firing": "triggered", "resolved": "has stopped firing", "pending": "not firing yet"},
    "zh": {"firing": "触发中", "resolved": "已经恢复", "pending": "还未触发"},
}


def benign_state_worded(document, output):
    """ "firing" written "triggered" (zh 触发中), "resolved" "has stopped firing" (zh 已经恢复), "pending" "not
    firing yet" (zh 还未触发)."""

    def rewrite_in(language: str) -> Rewrite:
        def rewrite(fact, values):
            if fact.kind != "state" or not any(v.kind == "state" and v.value == fact.value for v in values):
                return None
            return _STATE_WORDS[language][fact.value]

        return rewrite

    return _in_each_language(document, output, rewrite_in)


def benign_time_reformatted(document, output):
    """2026-07-08T22:49:00+00:00 written "2026-07-08 22:49:00Z", without its seconds ("2026-07-08 22:49"), or
    without its date ("22:49:00"); the forms take turns from claim to claim."""
    for index, raw, stated, values in _claims(document, output):
        fact = next((f for f in stated if f.kind == "time" and f.value.date and f.value.hour is not None), None)
        if fact is None or not any(v.kind == "time" for v in values):
            continue
        clock = fact.value
        seconds = f"{clock.hour:02d}:{clock.minute:02d}:{clock.second or 0:02d}"
        utc = fact.text.endswith(("Z", "+00:00"))
        forms = (
            f"{clock.date} {seconds}" + (f".{clock.fraction}" if clock.fraction else "") + ("Z" if utc else ""),
            f"{clock.date} {clock.hour:02d}:{clock.minute:02d}",
            seconds,
        )
        yield _spliced(output, index, raw, (fact.start, fact.end), forms[index % len(forms)], fact.text)


_ISO_INSTANT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})")


def _instant_rewritten(document, output, write: Callable[[datetime, str], str | None]) -> Iterator[Case]:
    """Each observation claim with its first ISO instant written by `write` (given the instant and the
    claim's language; None: leave the claim)."""
    for index, raw, _stated, _values in _claims(document, output):
        match = _ISO_INSTANT.search(typed.plain(raw["claim_text"]))
        if match is not None:
            new = write(datetime.fromisoformat(match.group(0).replace("Z", "+00:00")), _language(raw["claim_text"]))
            if new is not None:
                yield _spliced(output, index, raw, match.span(), new, match.group(0))


def benign_time_in_utc(document, output):
    """2026-09-14T12:01:00+08:00 written as the same instant in UTC, 2026-09-14T04:01:00Z."""

    def write(instant: datetime, _language: str) -> str | None:
        if instant.utcoffset() == timedelta(0):
            return None
        return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    return _instant_rewritten(document, output, write)


def benign_zone_named(document, output):
    """2026-09-14T12:01:00+08:00 written "2026-09-14 12:01:00 (UTC+8)", +05:30 as "(UTC+5:30)", +00:00 as
    "(UTC)"."""

    def write(instant: datetime, _language: str) -> str:
        minutes = int((instant.utcoffset() or timedelta(0)).total_seconds() // 60)
        hours, rest = divmod(abs(minutes), 60)
        zone = f"{'+' if minutes > 0 else '-'}{hours}" + (f":{rest:02d}" if rest else "") if minutes else ""
        return f"{instant:%Y-%m-%d %H:%M:%S} (UTC{zone})"

    return _instant_rewritten(document, output, write)


def benign_date_in_words(document, output):
    """2026-03-18T09:05:00+01:00 written "Mar 18 09:05:00" (zh "2026年3月18日 09:05:00")."""

    def write(instant: datetime, language: str) -> str:
        if language == "zh":
            return f"{instant.year}年{instant.month}月{instant.day}日 {instant:%H:%M:%S}"
        return f"{instant:%b} {instant.day} {instant:%H:%M:%S}"

    return _instant_rewritten(document, output, write)


_DECIMAL_BYTES = {"GB": 1e9, "G": 1e9, "MB": 1e6, "M": 1e6}
# A decimal byte unit's size: the unit a thousandth of it, as a sign and as a word, and its binary unit.
_SMALLER = {1e9: ("MB", "megabytes", "GiB", 1024.0**3), 1e6: ("KB", "kilobytes", "MiB", 1024.0**2)}


def benign_bytes_rescaled(document, output):
    """28.8GB written "28,800 MB", "28,800 megabytes" and "26.82 GiB" (the binary reading, to two decimals)."""
    for index, raw, stated, values in _claims(document, output):
        for fact in _quantities(raw["claim_text"], stated):
            digits, unit = _unit_of(fact)
            if fact.kind != "number" or unit not in _DECIMAL_BYTES or not _matched(fact, values):
                continue
            factor = _DECIMAL_BYTES[unit]
            smaller, smaller_word, binary, binary_factor = _SMALLER[factor]
            size = _number(digits) * factor
            thousandths = f"{round(size / factor * 1000):,}"
            for new in (
                f"{thousandths} {smaller}",
                f"{thousandths} {smaller_word}",
                f"{size / binary_factor:.2f} {binary}",
            ):
                yield _spliced(output, index, raw, (fact.start, fact.end), new, fact.text)
            break


_CLAUSE = re.compile(r"^(.{8,}?)(?:: |：)(?=\S)(.{8,}?)([.。]?)$", re.DOTALL)


def benign_clauses_swapped(document, output):
    """ "A: B." written "B (A).": what was seen first, its source after it in parentheses."""
    for index, raw, _stated, _values in _claims(document, output):
        match = _CLAUSE.match(raw["claim_text"])
        if match and re.search(r"[A-Za-z\u4e00-\u9fff]", match.group(2)):
            swapped = f"{match.group(2)} ({match.group(1)}){match.group(3)}"
            yield Case(f"{raw['claim_id']}: clauses swapped", _with_text(output, index, swapped))
