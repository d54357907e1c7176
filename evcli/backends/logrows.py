"""A log file read line by line as the rows of its index (evcli.backends.logindex states the invariants of
the rows).

Every line is masked (evcli.core.redaction) before it is parsed; a parsed line gives its timestamp as UTC
epoch seconds, its level, its message template (`mask`), its instance and the record it belongs to, and a
line without a timestamp of its own takes the previous event's. The per-line reading the vectorised one
must equal (evcli.backends.logtable.reference_table) and the lines the vectorised reader leaves to Python
(evcli.backends.logcolumns) read these rows; the searches of snapshot logs read the same helpers
(`epoch`, `split_instance`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any

from evcli.backends.base import LEVELS
from evcli.backends.logformats import LineKind, LineReader
from evcli.core.redaction import Redactor

_INSTANCE_KEYS = ("instance", "pod", "host", "node", "thread")
_LEADING_INSTANCE = re.compile(r"\[([^\]\s]+)\]\s*")
_INSTANCE_FIELD = re.compile(r"\binstance=\"?([^\s\",]+)")
# Variable parts of a message: quoted values, UUIDs, IPv4 addresses (with port), paths holding
# a digit, hex numbers, and any token holding a digit (numbers, ids like ORD-7113541, 453ms).
_VARIABLE = re.compile(
    r"\"[^\"]*\"|'[^']*'"
    r"|\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
    r"|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"
    r"|(?:/[\w.-]*)*/[\w.-]*\d[\w./-]*"
    r"|\b0x[0-9a-fA-F]+\b"
    r"|\b(?=[\w.-]*\d)[\w.-]+"
)
_TOKENS_KEPT = 1 << 10  # token templates remembered by `mask` (then forgotten: memory stays bounded)
_TOKEN_TEMPLATES: dict[str, str] = {}
_TEMPLATES_BY_SHAPE: dict[bytes, str] = {}  # message bytes with digits as `1` -> template (see `mask`)
_DIGITS_AS_ONE = bytes.maketrans(b"0123456789", b"1111111111")
_DIGIT = re.compile(r"\d")
_NAIVE_EPOCH = datetime(1970, 1, 1)


def mask(message: str) -> str:
    """A message with its variable parts replaced by `<*>` (the pattern's template).

    Messages that differ only in ASCII digits have the same template when no `0x` occurs (the
    one rule naming a digit): every other rule treats all digits alike, so the same parts are
    replaced. The template is therefore remembered under the message's bytes with each digit
    read as `1`, when it holds no digit itself (every digit of the message was replaced, so no
    other message of that key shows a different one); most lines of a log share few such keys."""
    if "0x" in message:
        return _mask_tokens(message)
    key = message.encode("utf-8", "surrogatepass").translate(_DIGITS_AS_ONE)
    template = _TEMPLATES_BY_SHAPE.get(key)
    if template is None:
        template = _mask_tokens(message)
        if _DIGIT.search(template) is None:
            if len(_TEMPLATES_BY_SHAPE) >= _TOKENS_KEPT:
                _TEMPLATES_BY_SHAPE.clear()
            _TEMPLATES_BY_SHAPE[key] = template
    return template


def _mask_tokens(message: str) -> str:
    """`mask` by the regex. Only a quoted part spans a space, so a message without quotes is
    masked space-separated token by token, with the same result: the templates of tokens are
    remembered (most tokens repeat)."""
    if '"' in message or "'" in message:
        return _VARIABLE.sub("<*>", message)
    tokens = message.split(" ")
    for index, token in enumerate(tokens):
        template = _TOKEN_TEMPLATES.get(token)
        if template is None:
            if len(_TOKEN_TEMPLATES) >= _TOKENS_KEPT:
                _TOKEN_TEMPLATES.clear()
            template = _TOKEN_TEMPLATES[token] = _VARIABLE.sub("<*>", token)
        tokens[index] = template
    return " ".join(tokens)


def masked_lines(lines: Iterator[str]) -> Iterator[str]:
    """The lines, masked, without their line end. A NUL is read as U+FFFD (SQLite's text matching stops at
    a NUL: the words after it could never be found)."""
    return Redactor.from_env().mask_stream(line.rstrip("\r\n").replace("\x00", "\ufffd") for line in lines)


@dataclass
class Cursor:
    """Where `_rows` stands when its lines end: lines read (blank ones too), the state later
    continuation lines inherit (last ts; level, derived, instance of the last parsed line; the
    open record), the first parsed line and the first line with a timestamp of its own (None:
    none was), and `orphan`: the first row when it is a continuation line that started a record
    only because no record was open (it joins the record an earlier part ended in)."""

    lines: int = 0
    ts: float | None = None
    level: int | None = None
    derived: int = 0
    instance: str = ""
    first_parsed: int | None = None
    record: int | None = None
    first_timed: int | None = None
    orphan: int | None = None


def line_rows(lines: Iterator[str], reader: LineReader, tz: tzinfo, cursor: Cursor) -> Iterator[tuple[Any, ...]]:
    """(lineno, ts, level, derived, template text, instance, line, record) of every non-blank line.
    A line with a timestamp of its own starts a record; a line without one (stack trace,
    continuation, unrecognised) belongs to the record of the line before, except that before
    the first timestamp only continuation lines join (each other line is a record of its own)."""
    read = reader.read
    to_epoch = Epochs(tz)
    continuation = LineKind.CONTINUATION
    blank = LineKind.BLANK
    ts: float | None = None
    level: int | None = None
    derived = 0
    instance = ""
    first_parsed = first_timed = record = orphan = None
    lineno = 0
    for lineno, line in enumerate(lines, 1):
        kind, _, parsed = read(line)
        if kind is blank:
            continue
        if parsed is None or parsed.continues:  # continuation or unrecognised: part of the previous event
            if record is None:
                record, orphan = lineno, (lineno if kind is continuation else None)
            elif ts is None and kind is not continuation:
                record = lineno
            text = line if parsed is None else parsed.message  # a wrapped continuation: its inner line
            yield lineno, ts, level, derived, mask(text.strip()), instance, line, record
            continue
        if first_parsed is None:
            first_parsed = lineno
        if parsed.timestamp is not None:
            ts = to_epoch(parsed.timestamp)
            record = lineno
            if first_timed is None:
                first_timed = lineno
        elif record is None or ts is None:
            record = lineno
        level = None if parsed.level is None else LEVELS.index(parsed.level)
        derived = int(parsed.level_derived)
        instance, message = split_instance(parsed.fields, parsed.message)
        yield lineno, ts, level, derived, mask(message), instance, line, record
    cursor.lines, cursor.ts, cursor.level, cursor.derived = lineno, ts, level, derived
    cursor.instance, cursor.first_parsed, cursor.record = instance, first_parsed, record
    cursor.first_timed, cursor.orphan = first_timed, orphan


def epoch(moment: datetime, tz: tzinfo) -> float:
    """UTC epoch seconds; a naive time is a wall time in `tz` (fold=0, as evcli.core.time.localize)."""
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=tz, fold=0)).timestamp()


class Epochs:
    """`epoch` for many times in one zone: a naive time's zone offset is looked up once per
    minute of wall time (zones change offsets on whole minutes) and kept as the naive time of
    the epoch in that offset, so each time costs one subtraction, exactly `epoch`'s value."""

    def __init__(self, tz: tzinfo) -> None:
        self.tz = tz
        self.anchors: dict[int, datetime] = {}  # minute of wall time -> the epoch as a wall time

    def __call__(self, moment: datetime) -> float:
        if moment.tzinfo is not None:
            return moment.timestamp()
        minute = moment.toordinal() * 1440 + moment.hour * 60 + moment.minute
        anchor = self.anchors.get(minute)
        if anchor is None:
            if len(self.anchors) >= _TOKENS_KEPT:
                self.anchors.clear()
            offset = moment.replace(second=0, microsecond=0, tzinfo=self.tz, fold=0).utcoffset() or timedelta(0)
            anchor = self.anchors[minute] = _NAIVE_EPOCH + offset
        return (moment - anchor).total_seconds()


def split_instance(fields: dict[str, str], message: str) -> tuple[str, str]:
    """(instance, message): a field naming the instance, else a leading `[name]` of the message
    (removed from it), else an `instance=` key in it."""
    if fields:
        for key in _INSTANCE_KEYS:
            if fields.get(key):
                return fields[key], message
    leading = _LEADING_INSTANCE.match(message) if message[:1] == "[" else None
    if leading:
        return leading.group(1), message[leading.end() :]
    keyed = _INSTANCE_FIELD.search(message) if "instance=" in message else None
    return (keyed.group(1) if keyed else ""), message
