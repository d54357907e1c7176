"""What every log format module provides, and the pieces they share.

A format is one module holding one `LogFormat` instance named `FORMAT`; the registry in
`__init__` lists them in order. Invariants:
  - `parse(line, context)` returns None when the line is not in the format, never raises;
  - a parsed timestamp is aware when the line names its zone, else naive: the caller applies
    the environment's zone (`evcli.core.time.localize`), so one cache serves every zone;
  - `level` is canonical (LEVELS) or None when the line has none; None is normal, not a failure;
  - `fields` hold the line's other parts as strings (host, program, pid, status, client, ...);
  - ISO-like timestamps are read with `datetime.fromisoformat` (C; Python 3.11 reads T/space,
    `,`/`.` fractions, Z and offsets) per line; other shapes (syslog, Apache, access log, nginx)
    are built once per distinct second text and cached (`remember`, bounded).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import NamedTuple

LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
# Level words of syslog, Apache, Python, Java (log4j, JUL), Go (zap, logrus), .NET, glog letters.
_LEVEL_WORDS = {
    "trace": "TRACE", "finest": "TRACE", "finer": "TRACE", "verbose": "TRACE",
    "debug": "DEBUG", "dbug": "DEBUG", "fine": "DEBUG", "config": "DEBUG",
    "info": "INFO", "information": "INFO", "informational": "INFO", "notice": "INFO", "note": "INFO",
    "warn": "WARN", "warning": "WARN", "wrn": "WARN",
    "error": "ERROR", "err": "ERROR", "eror": "ERROR", "severe": "ERROR",
    "fatal": "FATAL", "critical": "FATAL", "crit": "FATAL", "alert": "FATAL", "emerg": "FATAL",
    "emergency": "FATAL", "panic": "FATAL", "dpanic": "FATAL",
}  # fmt: skip
_LEVEL_WORDS.update({f"trace{number}": "TRACE" for number in range(1, 9)})  # Apache 2.4
SYSLOG_SEVERITIES = ("FATAL", "FATAL", "FATAL", "ERROR", "WARN", "INFO", "INFO", "DEBUG")  # 0 emerg .. 7 debug
MONTHS = {name: number for number, name in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}  # fmt: skip
CACHE_LIMIT = 1 << 12  # distinct timestamp texts kept per cache before it is cleared (lines come in time order)
# A syslog or glog line (no year) may lie this far after the clock (host clock skew, a clock
# taken a little early); beyond that it belongs to the previous year.
YEAR_SKEW = timedelta(days=1)

# Level words written bare (upper case) or bracketed (any case); each is a whole word: the rules below
# follow it with a look-ahead, so `WARNINGS` or `ERR_CONN` is no level (and `WARNING` is not `WARN`)
_BARE_LEVELS = (
    "TRACE|DEBUG|INFO|INFORMATION|INFORMATIONAL|NOTICE|WARN|WARNING|ERROR|ERR|CRIT|CRITICAL|FATAL|SEVERE"
    "|EMERG|EMERGENCY|PANIC"
)
# A level word within the first three tokens after the timestamp: upper-case bare (`ERROR`),
# bracketed in any case (`[error]`, `[Warning]`), or `level=error`.
_LEADING_LEVEL = re.compile(
    r"[\s\-|:]*(?:(?:\[[^\]]*\]|[^\s\[]+)\s+){0,2}?"
    rf"(?:\[(?P<bracketed>(?i:{_BARE_LEVELS}))\]|(?P<bare>{_BARE_LEVELS})"
    r"|(?:level|lvl|severity)=\"?(?P<keyed>[A-Za-z]+)\"?)(?=[\s:\]|,;]|$)"
)
# A level word first (its separators taken off with it): bracketed, or bare and followed by a blank, `:`,
# `|` or the end
_FIRST_LEVEL = re.compile(rf"\s*(?:\[(?i:{_BARE_LEVELS})\]|(?:{_BARE_LEVELS})(?=[\s:|]|$))[\s:\-|]*")
_LEVEL_KEY = re.compile(r"\b(?:level|lvl|severity|loglevel)=\"?(?P<word>[A-Za-z]+)", re.IGNORECASE)
_LEVEL_SEPARATORS = " \t:-|"
# A line that continues the event before it (a stack trace): indented, `at `, `Caused by:`, a
# traceback head, `... N more`, an exception class line, a logcat buffer marker
CONTINUATION = re.compile(
    r"\s|at |Caused by:|Traceback \(most recent call last\)|\.\.\. \d+ (?:more|common frames omitted)"
    r"|[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?:Error|Exception|Throwable|Warning)\b(?::|$)"
    r"|-{9} (?:beginning of|switch to) "  # logcat's buffer markers: no event, no time of their own
)


class ParsedLine(NamedTuple):
    """One log line as a format reads it."""

    timestamp: datetime | None  # aware when the line names its zone, else naive
    level: str | None  # one of LEVELS, or None when the line has none
    message: str
    fields: dict[str, str]
    level_derived: bool = False  # level inferred (an access log's status), not written in the line
    # a wrapped line whose inner line continues the event before it (a stack trace): no timestamp
    # or level of its own, as the same line unwrapped (the reader reads it as a continuation line)
    continues: bool = False

    @property
    def has_zone(self) -> bool:
        return self.timestamp is not None and self.timestamp.tzinfo is not None


@dataclass
class ParseContext:
    """What completes a line: the clock (years of syslog/glog lines) and the environment zone."""

    clock: datetime  # aware
    tz: tzinfo
    local_clock: datetime = field(init=False)  # the clock as a naive wall time in `tz`
    memo: dict[str, datetime | None] = field(default_factory=dict, repr=False)  # year-inferred stamps

    def __post_init__(self) -> None:
        self.local_clock = self.clock.astimezone(self.tz).replace(tzinfo=None)

    def with_year(self, month: int, day: int, hour: int, minute: int, second: int) -> datetime | None:
        """A naive wall time without a year placed in the latest year that is not after the clock
        (plus YEAR_SKEW); Feb 29 goes back to the last leap year. None for impossible dates."""
        latest = self.local_clock + YEAR_SKEW
        for year in range(self.local_clock.year + 1, self.local_clock.year - 8, -1):
            try:
                moment = datetime(year, month, day, hour, minute, second)
            except ValueError:
                if not 1 <= month <= 12 or not 1 <= day <= 29:
                    return None
                continue
            if moment <= latest:
                return moment
        return None

    def with_century(self, yy: int, month: int, day: int, hour: int, minute: int, second: int) -> datetime | None:
        """A naive wall time with a two-digit year (`yyMMdd`, `yy/MM/dd`): 20yy unless that puts it
        more than YEAR_SKEW after the clock, then 19yy. None for impossible dates."""
        try:
            moment = datetime(2000 + yy, month, day, hour, minute, second)
            return moment if moment <= self.local_clock + YEAR_SKEW else moment.replace(year=1900 + yy)
        except ValueError:  # month 13, day 32; also 00-02-29 when it must be 1900 (not a leap year)
            return None


class LogFormat:
    """One log format: a name, an example line, a cheap `sniff` and `parse`."""

    name: str = ""
    description: str = ""
    example: str = ""
    generic: bool = False  # reads lines that more specific formats also read (a catch-all)

    def sniff(self, line: str) -> bool:
        """A cheap test that the line may be in this format (parse decides)."""
        raise NotImplementedError

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        raise NotImplementedError


class WrapperFormat(LogFormat):
    """A format whose lines wrap another program's line (a container runtime's). The inner line is
    read as if it stood alone, by the formats `inner` in their order (JSON lines and the text
    formats, not another wrapper); a stack-trace line continues the event before it (`continues`);
    an inner line no format reads, which has no timestamp of its own, is read as the text after a
    timestamp is (`leading_level`: a level word in its first tokens or a `level=` key).

    The timestamp is always the runtime's, also where the inner line writes one: the runtime's is
    zoned and precise, an inner one is often a wall time in the container's zone, which the
    environment's zone need not be; so every line of a file is placed on one clock."""

    def __init__(self, inner: Sequence[LogFormat] = ()) -> None:
        self.inner = tuple(inner)

    def wrapped(self, moment: datetime | None, text: str, fields: dict[str, str], context: ParseContext) -> ParsedLine:
        """The line wrapping `text`: the runtime's time `moment` and `fields`, the inner line's level,
        message and fields."""
        if CONTINUATION.match(text) is not None:
            return ParsedLine(None, None, text.strip(), fields, continues=True)
        for candidate in self.inner:
            inner = candidate.parse(text, context) if candidate.sniff(text) else None
            if inner is not None:
                return ParsedLine(moment, inner.level, inner.message, fields | inner.fields, inner.level_derived)
        level, message = leading_level(text)
        return ParsedLine(moment, level, message, fields)


class IsoStampFormat(LogFormat):
    """A format read by one regex `line` whose `stamp` group is an ISO-like time (`iso_time`);
    `read` turns the match into the parsed line. A line the regex or its stamp rejects is None."""

    line: re.Pattern[str]

    def sniff(self, line: str) -> bool:
        return self.line.match(line) is not None

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = self.line.match(line)
        if match is None:
            return None
        try:  # `iso_time` inline: this is the per-line hot path, and `read` is a call already
            moment = datetime.fromisoformat(match["stamp"])
        except ValueError:
            return None
        return self.read(match, moment)

    def read(self, match: re.Match[str], moment: datetime) -> ParsedLine:
        raise NotImplementedError


class TwoDigitYearFormat(LogFormat):
    """A format read by one regex `line` with a two-digit-year time in groups `stamp` (the whole
    second text) and yy, month, day, hour, minute, second (`ParseContext.with_century`), built once
    per distinct second text in the context's memo under `key` + stamp (the century depends on the
    clock); `read` turns the match into the parsed line. A line the regex or its date rejects is None."""

    line: re.Pattern[str]
    key: str  # memo key prefix, unlike every other format's: memo keys of all formats share one dict

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = self.line.match(line)
        if match is None:
            return None
        key = self.key + match["stamp"]
        memo = context.memo
        if key not in memo:
            parts = (int(part) for part in match.group("yy", "month", "day", "hour", "minute", "second"))
            remember(memo, key, context.with_century(*parts))
        moment = memo[key]
        return None if moment is None else self.read(match, moment)

    def read(self, match: re.Match[str], moment: datetime) -> ParsedLine:
        raise NotImplementedError


def level_of(word: str | None) -> str | None:
    """A level word in any case (`warning`, `ERR`, `Information`, `trace3`) as one of LEVELS."""
    if not word:
        return None
    return _LEVEL_WORDS.get(word.lower())


def leading_level(rest: str) -> tuple[str | None, str]:
    """(level, message) of the text after a timestamp. A level in first position is removed
    from the message; one after a thread/host token (`[main] ERROR ...`) or a `level=` key
    anywhere is reported but the text kept whole."""
    first = _FIRST_LEVEL.match(rest)
    if first is not None:
        return level_of(first.group().strip(_LEVEL_SEPARATORS + "[]")), rest[first.end() :]
    match = _LEADING_LEVEL.match(rest)
    if match is not None:
        group = "bracketed" if match["bracketed"] else "bare" if match["bare"] else "keyed"
        level = level_of(match[group])
        if level is not None:
            in_front = group != "keyed" and not rest[: match.start(group)].strip(_LEVEL_SEPARATORS + "[")
            return level, rest[match.end() :].lstrip(_LEVEL_SEPARATORS) if in_front else rest.strip()
    keyed = _LEVEL_KEY.search(rest) if "=" in rest else None  # the key needs its `=`: skip the scan
    return (level_of(keyed["word"]) if keyed else None), rest.strip()


def remember(cache: dict[str, datetime | None], key: str, moment: datetime | None) -> datetime | None:
    """Store a parsed timestamp, clearing the cache when it is full (memory stays bounded)."""
    if len(cache) >= CACHE_LIMIT:
        cache.clear()
    cache[key] = moment
    return moment


def iso_time(text: str) -> datetime | None:
    """An ISO 8601 date and time as `datetime.fromisoformat` reads it (T or space, `,`/`.`
    fraction of any length, Z or offset, also after a space), or None when out of range.
    fromisoformat runs in C and beats a cache lookup, so it is called per line."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def epoch_stamp(value: float) -> datetime | None:
    """Epoch seconds, milliseconds, microseconds or nanoseconds (told apart by magnitude) in UTC."""
    magnitude = abs(value)
    for limit, scale in ((1e17, 1e9), (1e14, 1e6), (1e11, 1e3)):
        if magnitude > limit:
            value /= scale
            break
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        return None
