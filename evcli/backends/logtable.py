"""One log file read as columns (issue 27): what the vectorised log index keeps per line, and the
reference reading it must equal.

`LogTable` is the contract between the reader (evcli.backends.logcolumns: bytes -> columns without a
per-line Python loop) and the store and its queries (evcli.backends.logstore). `reference_table` builds
the same table from the per-line reading the SQLite index used (evcli.backends.logrows.line_rows over
masked lines): tests hold the vectorised reader equal to it, column by column, on every format.

Invariants:
  - one row per non-blank line, in file order; `lineno` is the 1-based line number as `grep -n`
    counts lines (b"\\n" ends a line; a last line without one counts);
  - `start[i]`/`end[i]` are the byte offsets of row i's line in the file, its line end excluded from
    `end` (b"\\n", and a b"\\r" before it);
  - the columns hold no line text: a row's text is its bytes decoded (UTF-8 with replacement, NUL as
    U+FFFD), unless `text` holds it: the lines masking changed (their masked text, never the secret)
    and the lines cut at the longest line (their kept part);
  - `unescaped` holds, per line writing JSON `\\uXXXX` escapes, its text with them decoded (a keyword
    matches either);
  - ts: UTC epoch seconds, NaN for a line before any timestamp; a line without one of its own takes
    the previous event's; level: index into LEVELS, -1 for none; template and instance: codes into
    `templates` and `instances` (-1: no instance); record: the line number of the record's first line.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

import numpy as np

from evcli.backends.logformats import SAMPLE_LINES, LineReader, ParseContext, detect, format_named
from evcli.backends.logrows import Cursor, line_rows, masked_lines
from evcli.core import files
from evcli.core.files import Lines, check_deadline, open_binary, open_text


@dataclass
class LogTable:
    """The columns of one file's non-blank lines (see the module's invariants)."""

    lineno: np.ndarray  # int64
    start: np.ndarray  # int64
    end: np.ndarray  # int64
    ts: np.ndarray  # float64, NaN: none
    level: np.ndarray  # int8, -1: none
    derived: np.ndarray  # bool
    template: np.ndarray  # int32 into templates
    instance: np.ndarray  # int32 into instances, -1: none
    record: np.ndarray  # int64
    templates: list[str] = field(default_factory=list)
    instances: list[str] = field(default_factory=list)
    text: dict[int, str] = field(default_factory=dict)  # lineno -> text, where it is not the decoded bytes
    unescaped: dict[int, str] = field(default_factory=dict)  # lineno -> text with JSON escapes decoded
    lines: int = 0  # lines read, blank ones too
    size: int = 0  # the file's bytes
    format: str | None = None
    cut: int = 0  # lines cut at the longest line

    def rows(self) -> list[tuple[object, ...]]:
        """(lineno, ts, level, derived, template text, instance text, record) per row: what a test compares."""
        return [
            (
                int(self.lineno[i]),
                None if np.isnan(self.ts[i]) else float(self.ts[i]),
                None if self.level[i] < 0 else int(self.level[i]),
                bool(self.derived[i]),
                self.templates[self.template[i]],
                "" if self.instance[i] < 0 else self.instances[self.instance[i]],
                int(self.record[i]),
            )
            for i in range(len(self.lineno))
        ]


def decoded(raw: bytes) -> str:
    """A line's bytes as the index reads them: UTF-8 with replacement, line end dropped, NUL as U+FFFD."""
    return raw.decode("utf-8", "replace").rstrip("\r\n").replace("\x00", "\ufffd")


_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def unescaped_text(line: str) -> str | None:
    """The line with its JSON `\\uXXXX` escapes decoded, each to its code unit (nothing else of the line
    changes: `\\"` stays as written), or None when it holds no `\\u`."""
    return _ESCAPE.sub(_unescape, line) if "\\u" in line else None


def _unescape(match: re.Match[str]) -> str:
    return chr(int(match.group(1), 16))


def reference_table(path: Path, root: Path, context: ParseContext) -> LogTable:
    """The table the per-line reading gives (the oracle of the vectorised reader; slow: a Python loop)."""
    with open_text(path, root) as handle:
        fmt = detect(masked_lines(islice(Lines(handle), SAMPLE_LINES)), context).format
    with open_binary(path, root) as binary:
        data = binary.read()
    offsets = _line_offsets(data)
    reader = LineReader(None if fmt is None else format_named(fmt), context)
    templates: dict[str, int] = {}
    instances: dict[str, int] = {}
    columns: list[list[object]] = [[] for _ in range(9)]
    text: dict[int, str] = {}
    unescaped: dict[int, str] = {}
    cursor = Cursor()
    lines = _FileLines(data)
    for lineno, ts, level, derived, template, instance, line, record in line_rows(
        masked_lines(iter(lines)), reader, context.tz, cursor
    ):
        start, end = offsets[lineno - 1]
        if line != decoded(data[start:end]):
            text[lineno] = line
        decoded_escapes = unescaped_text(line)
        if decoded_escapes is not None:
            unescaped[lineno] = decoded_escapes
        values = (
            lineno,
            start,
            end,
            np.nan if ts is None else ts,
            -1 if level is None else level,
            bool(derived),
            templates.setdefault(template, len(templates)),
            instances.setdefault(instance, len(instances)) if instance else -1,
            record,
        )
        for column, value in zip(columns, values, strict=True):
            column.append(value)
    kinds = (np.int64, np.int64, np.int64, np.float64, np.int8, np.bool_, np.int32, np.int32, np.int64)
    lineno, start, end, ts, level, derived, template, instance, record = (
        np.array(column, dtype=kind) for column, kind in zip(columns, kinds, strict=True)
    )
    return LogTable(
        lineno,
        start,
        end,
        ts,
        level,
        derived,
        template,
        instance,
        record,
        templates=list(templates),
        instances=list(instances),
        text=text,
        unescaped=unescaped,
        lines=cursor.lines,
        size=len(data),
        format=fmt,
        cut=lines.cut,
    )


@dataclass
class _FileLines:
    """The lines of a file's bytes as `grep -n` counts them (b"\\n" ends a line), line ends kept, each as
    evcli.core.files.Lines reads it alone (`read_alone`); `cut` counts the lines cut. Lines reading the
    whole file would take a cut ending in "\\r" for a line end and read the rest of the line as the next."""

    data: bytes
    cut: int = 0

    def __iter__(self) -> Iterator[str]:
        data, limit, start = self.data, files.LIMITS.max_line_chars, 0
        while start < len(data):
            check_deadline()
            stop = data.find(b"\n", start) + 1 or len(data)
            if stop - start < limit:  # no more characters than bytes: shorter than the cut, read whole
                yield data[start:stop].decode("utf-8", "replace")
            else:
                kept, cut = read_alone(data[start:stop])
                self.cut += cut
                yield kept
            start = stop


def read_alone(raw: bytes) -> tuple[str, bool]:
    """One line's bytes (its line end kept) as evcli.core.files.Lines reads the line alone: the text it keeps
    (at most the longest line), and whether it cut the line (skipped a rest)."""
    lines = Lines(io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8", errors="replace", newline="\n"))
    kept = next(iter(lines))
    return kept, bool(lines.cut)


def _line_offsets(data: bytes) -> list[tuple[int, int]]:
    """(start, end without the line end) of every line, as `grep -n` numbers them."""
    offsets, start = [], 0
    while start < len(data):
        newline = data.find(b"\n", start)
        stop = len(data) if newline < 0 else newline
        end = stop - 1 if stop > start and data[stop - 1 : stop] == b"\r" else stop
        offsets.append((start, end))
        start = stop + 1
    return offsets
