"""Relative windows a question names ("last 30 minutes", "past hour", "最近 20 分钟", "1小时内"),
as window labels ("30m", "1h") the backends accept (evcli.backends.base.parse_window).

A count that is no number ("the last deployment hour") or a window no backend accepts
("past 400 days") is no window.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime

from evcli.backends.base import parse_window

_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}


def zh_number(text: str) -> int | None:
    """A small number written in digits or Chinese numerals (十五, 二十, 两): None when unreadable."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        if (tens and tens not in _ZH_DIGITS) or (ones and ones not in _ZH_DIGITS):
            return None
        return (_ZH_DIGITS[tens] if tens else 1) * 10 + (_ZH_DIGITS[ones] if ones else 0)
    return _ZH_DIGITS.get(text)


EN_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30,
    "forty": 40, "forty-five": 45, "sixty": 60, "ninety": 90,
}  # fmt: skip
TIME_UNITS = {  # English time-unit words → the window suffix they mean
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
    "m": "m", "min": "m", "mins": "m", "minute": "m", "minutes": "m",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
    "d": "d", "day": "d", "days": "d",
}  # fmt: skip
_EN_WINDOW = re.compile(
    r"\b(?:(?:in|over|during|for)\s+the\s+(?:last|past)|last|past|previous|recent"
    r"|within(?:\s+the)?(?:\s+(?:last|past))?)\s+"
    r"(?P<count>\d{1,4}|forty-five|(?!half\b)[a-z]+)?\s*"
    r"(?P<half>half\s+(?:an?\s+)?)?"
    r"(?P<unit>seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|[smhd])\b",
    re.IGNORECASE,
)
ZH_UNITS = {"秒": "s", "秒钟": "s", "分钟": "m", "分": "m", "小时": "h", "钟头": "h", "天": "d"}
_ZH_WINDOW = re.compile(
    r"(?:(?:最近|过去|近)\s*(?P<count>\d{1,4}|[零一二两三四五六七八九十]+|半)?\s*个?\s*"
    r"(?P<unit>秒钟|秒|分钟|小时|钟头|天)"
    r"|(?P<count2>\d{1,4}|[零一二两三四五六七八九十]+|半)\s*个?\s*(?P<unit2>秒钟|秒|分钟|小时|钟头|天)(?:内|以内|之内))"
)


def window_matches(question: str) -> Iterator[tuple[re.Match[str], str]]:
    """Every window the question names, with its label, English forms first."""
    for match in _EN_WINDOW.finditer(question):
        raw = (match["count"] or "").lower()
        if raw and not raw.isdigit() and raw not in EN_NUMBERS:
            continue  # "the last deployment hour" is no window
        count: float = int(raw) if raw.isdigit() else EN_NUMBERS.get(raw, 1)
        if match["half"]:
            count = count * 0.5 if raw else 0.5
        label = _label(count, TIME_UNITS[match["unit"].lower()])
        if label:
            yield match, label
    for match in _ZH_WINDOW.finditer(question):
        raw = match["count"] or match["count2"] or "一"
        zh_count = 0.5 if raw == "半" else zh_number(raw)
        label = None if zh_count is None else _label(zh_count, ZH_UNITS[match["unit"] or match["unit2"]])
        if label:
            yield match, label


def extract_window(question: str) -> str | None:
    """The first relative window a question names, or None."""
    return next((label for _, label in window_matches(question)), None)


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
