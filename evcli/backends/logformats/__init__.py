"""The log format registry: which formats evcli recognises, detecting a file's format, and
parsing its lines with the detected format first (DESIGN §5, issue 9).

A format is one module with a `FORMAT` (see `base.LogFormat`); adding one is that module plus
one line in `FORMATS`. Order matters: detection breaks ties by it and a line that the detected
format does not read is tried against the others in this order, so a format that gives lines
more structure comes before one that reads the same lines with less (Python logging, Java and
OpenStack before the ISO 8601 catch-all; container JSON before plain JSON lines; CRI container lines
before ISO 8601).

Invariants:
  - `detect` looks only at the sample it is given; the best format parses the most sample
    lines (ties: registry order), except that a catch-all (`generic`: ISO 8601, epoch, JSON
    lines) beats the best specific format only when it reads more than GENERIC_MARGIN of the
    sample's event lines more (a Python log with a few other ISO lines stays Python; those
    lines are still read, by the per-line fallback); continuation lines (stack traces) and
    blank lines count neither for nor against any format;
  - `LineReader.read` never raises on any text; a line is PARSED, CONTINUATION (indented, `at `,
    `Caused by:`, `Traceback`, `... N more`, an exception class line, a logcat buffer marker
    `--------- beginning of main`, or a container runtime's line wrapping one), BLANK or
    UNRECOGNISED; a container runtime's line is read as the line it wraps would be alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import NamedTuple

from pydantic import BaseModel, computed_field

from evcli.backends.logformats import (
    access_log,
    apache_error,
    cfdr,
    epoch,
    glog,
    hdfs,
    healthapp,
    hpc,
    iso8601,
    java,
    json_lines,
    logcat,
    logfmt,
    nginx_error,
    openstack,
    postgres,
    proxifier,
    python_logging,
    rfc3164,
    rfc5424,
    spark,
    windows_cbs,
)
from evcli.backends.logformats.base import CONTINUATION as _CONTINUATION
from evcli.backends.logformats.base import LogFormat, ParseContext, ParsedLine
from evcli.backends.logformats.container_json import ContainerJson
from evcli.backends.logformats.cri import Cri

TEXT_FORMATS: tuple[LogFormat, ...] = (
    rfc5424.FORMAT,
    rfc3164.FORMAT,
    cfdr.FORMAT,
    apache_error.FORMAT,
    nginx_error.FORMAT,
    access_log.FORMAT,
    glog.FORMAT,
    hdfs.FORMAT,
    spark.FORMAT,
    logcat.FORMAT,
    healthapp.FORMAT,
    openstack.FORMAT,
    postgres.FORMAT,
    java.FORMAT,
    python_logging.FORMAT,
    windows_cbs.FORMAT,
    hpc.FORMAT,
    proxifier.FORMAT,
    logfmt.FORMAT,
    iso8601.FORMAT,
    epoch.FORMAT,
)
_INNER_FORMATS = (json_lines.FORMAT, *TEXT_FORMATS)  # what a container runtime's line may wrap
FORMATS: tuple[LogFormat, ...] = (ContainerJson(_INNER_FORMATS), Cri(_INNER_FORMATS), *_INNER_FORMATS)
SAMPLE_LINES = 200  # lines `detect` needs; env check reads this many from the top of a file
GENERIC_MARGIN = 0.1


class LineKind(StrEnum):
    PARSED = "parsed"
    CONTINUATION = "continuation"  # part of the previous event (stack trace): no timestamp of its own
    BLANK = "blank"
    UNRECOGNISED = "unrecognised"


class ReadLine(NamedTuple):
    kind: LineKind
    format: str | None  # the format that read it (PARSED, and a wrapped CONTINUATION line)
    parsed: ParsedLine | None  # a wrapped CONTINUATION line's holds its inner text as the message


_PARSED = LineKind.PARSED
_CONTINUED = LineKind.CONTINUATION
_BLANK_LINE = ReadLine(LineKind.BLANK, None, None)
_CONTINUATION_LINE = ReadLine(LineKind.CONTINUATION, None, None)
_UNRECOGNISED_LINE = ReadLine(LineKind.UNRECOGNISED, None, None)


def format_named(name: str) -> LogFormat:
    """The registered format of that name (KeyError names the known ones)."""
    for candidate in FORMATS:
        if candidate.name == name:
            return candidate
    raise KeyError(f"unknown log format {name!r}; known: {', '.join(known_formats())}")


def known_formats() -> list[str]:
    return [candidate.name for candidate in FORMATS]


def is_continuation(line: str) -> bool:
    return _CONTINUATION.match(line) is not None


class LineReader:
    """Reads lines with one format first (the detected one) and the others only for lines it
    does not read."""

    def __init__(self, first: LogFormat | None, context: ParseContext) -> None:
        self.first = first
        self.context = context
        self.others = tuple(candidate for candidate in FORMATS if candidate is not first)
        # bound once: `read` runs per line, and most lines of a mixed file try several formats
        self._first = None if first is None else (first.parse, first.name)
        self._others = tuple((candidate.sniff, candidate.parse, candidate.name) for candidate in self.others)

    def read(self, line: str) -> ReadLine:
        context = self.context
        if self._first is not None:
            parsed = self._first[0](line, context)
            if parsed is not None:
                return ReadLine(_CONTINUED if parsed.continues else _PARSED, self._first[1], parsed)
        if not line.strip():
            return _BLANK_LINE
        if _CONTINUATION.match(line) is not None:
            return _CONTINUATION_LINE
        for sniff, parse, name in self._others:
            if sniff(line):
                parsed = parse(line, context)
                if parsed is not None:
                    return ReadLine(_CONTINUED if parsed.continues else _PARSED, name, parsed)
        return _UNRECOGNISED_LINE


class Detection(BaseModel):
    """What a sample of a file says about its format (env check reports this per file)."""

    format: str | None  # None when no format reads any sample line
    lines: int  # non-blank sample lines
    continuation: int
    timestamped: int  # lines with a timestamp of their own
    levelled: int  # lines with a level (written, or derived from an access log status)
    unrecognised: int
    example_unrecognised: str | None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def timestamp_share(self) -> float:
        """Share of the sample's event lines (all but blank and continuation) with a timestamp."""
        return self.timestamped / max(1, self.lines - self.continuation)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def level_share(self) -> float:
        return self.levelled / max(1, self.lines - self.continuation)


def detect(lines: Iterable[str], context: ParseContext) -> Detection:
    """The format that reads most of the sample (ties: registry order) and the shares of lines
    with a timestamp and with a level when read with it."""
    sample = [line.rstrip("\r\n") for line in lines]
    candidates = [line for line in sample if line.strip() and not is_continuation(line)]
    scores = {candidate: sum(1 for line in candidates if _reads(candidate, line, context)) for candidate in FORMATS}
    chosen = _best([name for name in FORMATS if not name.generic], scores)
    generic = _best([name for name in FORMATS if name.generic], scores)
    if generic is not None and (chosen is None or scores[generic] - scores[chosen] > GENERIC_MARGIN * len(candidates)):
        chosen = generic
    return _tally(LineReader(chosen, context), sample)


def _best(formats: list[LogFormat], scores: dict[LogFormat, int]) -> LogFormat | None:
    """The format with the highest score (first in registry order on ties), None if all are 0."""
    best = max(formats, key=lambda candidate: scores[candidate])  # max keeps the first of equals
    return best if scores[best] else None


def _reads(candidate: LogFormat, line: str, context: ParseContext) -> bool:
    return candidate.sniff(line) and candidate.parse(line, context) is not None


def _tally(reader: LineReader, sample: list[str]) -> Detection:
    counts = dict.fromkeys(LineKind, 0)
    timestamped = levelled = 0
    example: str | None = None
    for line in sample:
        read = reader.read(line)
        counts[read.kind] += 1
        if read.parsed is not None:
            timestamped += read.parsed.timestamp is not None
            levelled += read.parsed.level is not None
        elif read.kind is LineKind.UNRECOGNISED and example is None:
            example = line
    return Detection(
        format=None if reader.first is None else reader.first.name,
        lines=len(sample) - counts[LineKind.BLANK],
        continuation=counts[LineKind.CONTINUATION],
        timestamped=timestamped,
        levelled=levelled,
        unrecognised=counts[LineKind.UNRECOGNISED],
        example_unrecognised=example,
    )


__all__ = [
    "FORMATS",
    "SAMPLE_LINES",
    "Detection",
    "LineKind",
    "LineReader",
    "LogFormat",
    "ParseContext",
    "ParsedLine",
    "ReadLine",
    "detect",
    "format_named",
    "is_continuation",
    "known_formats",
]
