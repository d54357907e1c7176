"""The candidate engines of bench_engines.py (issue 27): one table of line shapes per log format, read by each
engine's own kernels, and the numpy arithmetic all of them share to turn the parts they extract into columns.

The scripts run as `python bench/bench_X.py`, so this module is imported as `_engines` (bench/ is not a
package). None of the engines is a dependency of evcli (numpy is): `ENGINES` names each with the module it
needs and `available()` says which import; an engine whose module is missing is skipped by the bench.

Invariants:
  - every engine reads the same bytes: the file mmap'd and split at b"\\n" as `grep -n` counts lines (a last
    line without one counts too), so a line's index + 1 is grep's line number (`Source`);
  - a shape (`Shape`) is one regex that Python's re, RE2 (pyarrow, DuckDB, google-re2) and Rust's regex
    (polars) all read alike: no look-around, no back-reference, no class that can cross a b"\\n" (the numpy
    engine scans the whole buffer); its named groups say what each part is (INT_GROUPS, WORD_GROUPS, ...);
  - parts with few distinct values (level words, month names, zones, addresses, templates) are
    dictionary-encoded by the engine and read once per distinct value in Python with evcli's own tables
    (`level_of`, MONTHS, SYSLOG_SEVERITIES, the formats' level tables): no engine but the baseline runs
    Python per line, except the numpy engine's dictionary step, which is its glue;
  - what a shape does not read (a stack-trace line) is read by the next shapes, and only those lines are
    handed to them (`Source.subset`), as `LineReader` tries other formats only on lines the first does not read.
"""

from __future__ import annotations

import importlib.util
import mmap
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

import numpy as np

from evcli.backends.base import LEVELS
from evcli.backends.logformats import cfdr, glog, logcat, postgres
from evcli.backends.logformats.base import MONTHS, SYSLOG_SEVERITIES, YEAR_SKEW, level_of

NO_TIME = np.iinfo(np.int64).min  # ts of a line without a time of its own (µs since the epoch otherwise)
ENGINES = {  # name -> the module it needs (numpy_re: numpy and Python's re, always there)
    "numpy_re": "numpy",
    "pyarrow": "pyarrow",
    "polars": "polars",
    "duckdb": "duckdb",
    "re2": "re2",  # google-re2: matching only
    "hyperscan": "hyperscan",  # matching only
}
PARSERS = ("numpy_re", "pyarrow", "polars", "duckdb")  # the engines that also parse and store


def available() -> dict[str, bool]:
    return {name: importlib.util.find_spec(module) is not None for name, module in ENGINES.items()}


# --- the shapes: one per format of bench_logformats.LINES, and those of the mixed log -------------------------

_DATE = r"(?P<Y>\d{4})-(?P<mon>\d\d)-(?P<d>\d\d)"
_TIME = r"(?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)"
_ISO = _DATE + "[T ]" + _TIME + r"(?:[.,](?P<f>\d{1,9}))?"
_ZONE = r"(?P<z>Z|[+-]\d\d:?\d\d)?"
_LVL = r"(?P<lvl>TRACE|DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|ERR|CRITICAL|CRIT|FATAL|SEVERE)"
_IPV4 = r"\d{1,3}(?:\.\d{1,3}){3}"
INT_GROUPS = ("Y", "y2", "mon", "d", "H", "M", "S", "ms")  # numbers; f: fraction digits; E: epoch seconds
WORD_GROUPS = ("lvl", "b", "z", "addr", "path", "inst")  # dictionary-encoded; msg: the template's source
STORED_WORDS = ("addr", "path", "inst")  # kept per line (what count_by reads), with the template


@dataclass(frozen=True)
class Shape:
    """One line shape: `pattern` (anchored with ^), which level table reads its `lvl` group, and whether
    that level is derived (an access log's status) rather than written."""

    pattern: str
    levels: str = "word"
    derived: bool = False

    @property
    def groups(self) -> list[str]:
        return list(re.compile(self.pattern).groupindex)


def _table(levels: dict[str, str]) -> Callable[[str], str | None]:
    return levels.get


LEVEL_READERS: dict[str, Callable[[str], str | None]] = {
    "word": level_of,
    "glog": _table(glog._LEVELS),
    "logcat": _table(logcat._LEVELS),
    "postgres": _table(postgres._LEVELS),
    "cfdr": _table(cfdr._LEVELS),
    "pri": lambda pri: SYSLOG_SEVERITIES[int(pri) % 8] if pri.isdigit() and int(pri) < 192 else None,
    "status": lambda status: "ERROR" if status[:1] == "5" else "WARN" if status[:1] == "4" else None,
    "proxifier": lambda word: "ERROR" if word else None,
    "none": lambda _: None,
}
_RFC3164 = (
    r"^(?:<(?P<lvl>\d{1,3})>)?(?P<b>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) " + _TIME + r" (?P<inst>\S+) "
    r"(?:[^\s:\[\]]+(?:\[\d+\])?: )?(?P<msg>(?:.*?\bfrom (?P<addr>" + _IPV4 + r")\b)?.*)"
)
_ACCESS = (
    r"^(?P<addr>\S+) \S+ \S+ \[(?P<d>\d\d)/(?P<b>[A-Z][a-z]{2})/(?P<Y>\d{4}):" + _TIME + r" (?P<z>[+-]\d{4})\] "
    r'(?P<msg>"[A-Z]+ (?P<path>/[^\s"?]*)[^"\n]*" (?P<lvl>\d{3}) .*)'
)
SHAPES: dict[str, Shape] = {
    "iso8601": Shape(rf"^{_ISO}{_ZONE} {_LVL} (?P<msg>.*)"),
    "python": Shape(rf"^{_ISO} - \S+ - {_LVL} - (?P<msg>.*)"),
    "java": Shape(rf"^{_ISO}{_ZONE} \[(?P<inst>[^\]\n]*)\] {_LVL} +\S+ - (?P<msg>.*)"),
    "openstack": Shape(rf"^{_ISO} \d+ {_LVL} \S+ (?:\[[^\]\n]*\] )?(?P<msg>.*)"),
    "rfc3164": Shape(_RFC3164, levels="pri"),
    "rfc5424": Shape(
        rf"^<(?P<lvl>\d{{1,3}})>1 {_ISO}{_ZONE} (?P<inst>\S+) \S+ \S+ \S+ (?:-|\[[^\]\n]*\]) ?(?P<msg>.*)", "pri"
    ),
    "apache_error": Shape(
        r"^\[[A-Z][a-z]{2} (?P<b>[A-Z][a-z]{2}) +(?P<d>\d{1,2}) " + _TIME + r"(?:\.(?P<f>\d{1,6}))? (?P<Y>\d{4})\] "
        r"\[(?:[\w-]+:)?(?P<lvl>[a-z]+\d?)\](?: \[pid \d+(?::tid \d+)?\])?(?: \[client (?P<addr>[^\]:\n]+)"
        r"(?::\d+)?\])? ?(?P<msg>.*)"
    ),
    "nginx_error": Shape(
        r"^(?P<Y>\d{4})/(?P<mon>\d\d)/(?P<d>\d\d) " + _TIME + r" \[(?P<lvl>[a-z]+)\] \d+#\d+: (?:\*\d+ )?"
        r"(?P<msg>(?:.*?, client: (?P<addr>[^,\n]+))?(?:.*?, request: \"[A-Z]+ (?P<path>/[^\s\"?]*))?.*)"
    ),
    "access_log": Shape(_ACCESS, levels="status", derived=True),
    "glog": Shape(
        r"^(?P<lvl>[IWEF])(?P<mon>\d\d)(?P<d>\d\d) " + _TIME + r"\.(?P<f>\d{6}) +\d+ [^:\s\]]+:\d+\] ?(?P<msg>.*)",
        "glog",
    ),
    "logfmt": Shape(rf'^ts={_ISO}{_ZONE} level=(?P<lvl>\w+) (?:[^"\n]*?msg="(?P<msg>[^"\n]*)")?'),
    "json": Shape(rf'^\{{"ts":"{_ISO}{_ZONE}","level":"(?P<lvl>\w+)","msg":"(?P<msg>[^"\n]*)"'),
    "container_json": Shape(
        rf'^\{{"log":"\d{{4}}-\d\d-\d\d \S+ {_LVL} (?:\[(?P<inst>[^\]\n]*)\] )?(?:[^\s:"]+: )?(?P<msg>[^"\n]*?)(?:\\n)?",'
        rf'"stream":"\w+","time":"{_ISO}{_ZONE}"'
    ),
    "postgres": Shape(rf"^{_ISO} (?P<z>UTC|GMT) \[\d+\] (?P<lvl>[A-Z]+):  (?P<msg>.*)", "postgres"),
    "cri": Shape(rf"^{_ISO}{_ZONE} (?:stdout|stderr) [FP] (?:{_LVL} )?(?P<msg>.*)"),
    "epoch": Shape(rf"^(?P<E>\d{{10}}(?:\.\d{{1,9}})?) {_LVL} (?P<msg>.*)"),
    "hdfs": Shape(
        rf"^(?P<y2>\d\d)(?P<mon>\d\d)(?P<d>\d\d) (?P<H>\d\d)(?P<M>\d\d)(?P<S>\d\d) \d+ {_LVL} [^:\s]+: (?P<msg>.*)"
    ),
    "spark": Shape(rf"^(?P<y2>\d\d)/(?P<mon>\d\d)/(?P<d>\d\d) {_TIME} {_LVL} [^:\s]+: (?P<msg>.*)"),
    "logcat": Shape(
        r"^(?P<mon>\d\d)-(?P<d>\d\d) " + _TIME + r"\.(?P<f>\d{3}) +\d+ +\d+ (?P<lvl>[VDIWEFA]) [^:\n]*: (?P<msg>.*)",
        "logcat",
    ),
    "healthapp": Shape(
        r"^(?P<Y>\d{4})(?P<mon>\d\d)(?P<d>\d\d)-(?P<H>\d{1,2}):(?P<M>\d{1,2}):(?P<S>\d{1,2}):(?P<ms>\d{1,3})"
        r"\|[^|\n]*\|\d+\|(?P<msg>.*)"
    ),
    "cfdr": Shape(
        r"^(?:-|[A-Z][A-Z0-9_]*) (?P<E>\d{10}) \d{4}\.\d\d\.\d\d (?P<inst>\S+) \d{4}-\d\d-\d\d-\d\d\.\d\d\.\d\d\."
        r"(?P<f>\d{6}) \S+ \S+ \S+ (?P<lvl>INFO|WARNING|SEVERE|ERROR|FATAL|FAILURE) (?P<msg>.*)",
        "cfdr",
    ),
    "hpc": Shape(r"^\d+ (?P<inst>\S+) \S+ \S+ (?P<E>\d{10}) \d+ ?(?P<msg>.*)", "none"),
    "windows_cbs": Shape(rf"^{_ISO}, (?P<lvl>[A-Za-z]+) +\S+ *(?P<msg>.*)"),
    "proxifier": Shape(
        r"^\[(?P<mon>\d\d)\.(?P<d>\d\d) " + _TIME + r"\] (?:\S[^\[\]\n]*? - )?(?P<msg>(?:.*?(?P<lvl>error) : )?.*)",
        "proxifier",
    ),
}
# bench_tools.write_mixed_log: an app log with levels, syslog, an access log, timed lines without a level,
# stack-trace lines; the last shape reads any line (no time: it takes the previous line's)
MIXED_SHAPES = (
    Shape(rf"^{_ISO}{_ZONE} {_LVL} \[(?P<inst>[^\]\n]*)\] (?P<msg>.*)"),
    Shape(_RFC3164, levels="pri"),
    Shape(_ACCESS, levels="status", derived=True),
    Shape(rf"^{_ISO}{_ZONE} (?P<msg>.*)"),
    Shape(r"^[ \t]*(?P<msg>.*)", levels="none"),
)
# evcli.backends.logrows._VARIABLE without its look-ahead (`\b(?=[\w.-]*\d)[\w.-]+` is `\b[\w.-]*\d[\w.-]*`)
# and with quotes that stop at a line end: the template of a message is this replaced by <*>
VARIABLE = (
    r"\"[^\"\n]*\"|'[^'\n]*'"
    r"|\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
    r"|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"
    r"|(?:/[\w.-]*)*/[\w.-]*\d[\w./-]*"
    r"|\b0x[0-9a-fA-F]+\b"
    r"|\b[\w.-]*\d[\w.-]*"
)


# --- the bytes every engine reads --------------------------------------------------------------------------


@dataclass
class Source:
    """A log's bytes and its line starts: line i is data[starts[i]:starts[i + 1]], its b"\\n" included."""

    data: Any  # mmap.mmap or bytes
    starts: np.ndarray  # int64, lines + 1 entries
    _arrow: Any = field(default=None, repr=False)

    @property
    def lines(self) -> int:
        return len(self.starts) - 1

    def arrow(self) -> Any:
        """The lines as one Arrow LargeStringArray over the same memory (no copy)."""
        if self._arrow is None:
            import pyarrow as pa

            self._arrow = pa.LargeStringArray.from_buffers(
                self.lines, pa.py_buffer(self.starts), pa.py_buffer(self.data)
            )
        return self._arrow

    def subset(self, rows: np.ndarray) -> Source:
        """The lines `rows` (ascending) as a Source of their own: their bytes gathered by a numpy byte mask."""
        lengths = np.diff(self.starts)
        kept = np.zeros(self.lines, bool)
        kept[rows] = True
        starts = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(lengths[rows], out=starts[1:])
        return Source(np.frombuffer(self.data, np.uint8)[np.repeat(kept, lengths)].tobytes(), starts)

    def text(self, row: int) -> str:
        """Line `row` as evcli reads it (UTF-8 with replacement, no line end, NUL as U+FFFD)."""
        raw = self.data[self.starts[row] : self.starts[row + 1]]
        return raw.decode("utf-8", "replace").rstrip("\r\n").replace("\x00", "\ufffd")


def open_source(path: Path, starts: np.ndarray | None = None) -> Source:
    """The file mmap'd; its line starts found with one numpy pass unless given (a stored index has them)."""
    with path.open("rb") as handle:
        data: Any = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if path.stat().st_size else b""
    if starts is None:
        ends = np.flatnonzero(np.frombuffer(data, np.uint8) == 10) + 1
        if len(data) and (not len(ends) or ends[-1] != len(data)):
            ends = np.append(ends, len(data))
        starts = np.concatenate((np.zeros(1, np.int64), ends.astype(np.int64)))
    return Source(data, starts)


# --- what an engine extracts, and the columns made of it ------------------------------------------------------


@dataclass
class Parts:
    """A shape's groups over every line of a Source: numbers (-1: no match), the fraction in µs, epoch
    seconds (nan) and dictionary codes (-1: none) with their distinct values."""

    ints: dict[str, np.ndarray] = field(default_factory=dict)
    fraction: np.ndarray | None = None
    epoch: np.ndarray | None = None
    words: dict[str, tuple[np.ndarray, list[str]]] = field(default_factory=dict)


@dataclass
class Columns:
    """What an index keeps per line: ts (µs, NO_TIME), level (index into LEVELS, -1), derived, and codes
    into distinct values for the template and STORED_WORDS; `read` says which lines a shape read."""

    ts: np.ndarray
    level: np.ndarray
    derived: np.ndarray
    words: dict[str, tuple[np.ndarray, list[str]]]
    read: np.ndarray


def days_from_civil(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (H. Hinnant's algorithm, vectorised)."""
    year = year - (month <= 2)
    era = np.floor_divide(year, 400)
    of_era = year - era * 400
    of_year = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
    return era * 146097 + of_era * 365 + of_era // 4 - of_era // 100 + of_year - 719468


def _zone_offsets_us(naive_us: np.ndarray, tz: tzinfo) -> np.ndarray:
    """The zone's UTC offset (µs) of each naive wall time, looked up once per distinct minute (as
    evcli.backends.logrows.Epochs does; fold=0)."""
    minutes = naive_us // 60_000_000
    if len(minutes) and np.all(minutes[1:] >= minutes[:-1]):  # in time order: distinct minutes without a sort
        firsts = np.flatnonzero(np.concatenate(([True], minutes[1:] != minutes[:-1])))
        marks = np.zeros(len(minutes), np.int64)
        marks[firsts] = 1
        distinct, inverse = minutes[firsts], np.cumsum(marks) - 1
    else:
        distinct, inverse = np.unique(minutes, return_inverse=True)
    offsets = np.array(
        [
            ((datetime(1970, 1, 1) + timedelta(minutes=int(m))).replace(tzinfo=tz, fold=0).utcoffset() or timedelta())
            // timedelta(microseconds=1)
            for m in distinct
        ],
        np.int64,
    )
    return offsets[inverse] if len(offsets) else np.zeros(0, np.int64)


def _per_value(words: tuple[np.ndarray, list[str]], value: Callable[[str], int], missing: int) -> np.ndarray:
    codes, distinct = words
    table = np.array([value(word) for word in distinct] + [missing], np.int64)
    return table[np.where(codes >= 0, codes, len(distinct))]


def _zone_offset(text: str) -> int:
    """µs east of UTC a zone text names; -1 << 62 when it names none."""
    if text in ("Z", "UTC", "GMT"):
        return 0
    digits = text.replace(":", "")
    if len(digits) != 5 or not digits[1:].isdigit():
        return -1 << 62
    sign = -1 if digits[0] == "-" else 1
    return sign * (int(digits[1:3]) * 3600 + int(digits[3:5]) * 60) * 1_000_000


def columns(parts: Parts, shape: Shape, clock: datetime, tz: tzinfo, lines: int) -> Columns:
    """The stored columns of one shape's parts; `clock` (aware) completes year-less and two-digit years."""
    ints = parts.ints
    if "S" in ints:
        read = ints["S"] >= 0
    elif parts.epoch is not None:
        read = ~np.isnan(parts.epoch)
    else:
        read = np.ones(lines, bool)  # a shape without a time (the catch-all) reads every line
    readers = LEVEL_READERS[shape.levels]
    if "lvl" in parts.words:
        level = _per_value(parts.words["lvl"], lambda word: _level_index(readers(word)), -1)
    else:
        level = np.full(lines, -1, np.int64)
    ts = _times(parts, clock, tz, lines)
    stored = {name: parts.words[name] for name in STORED_WORDS if name in parts.words}
    stored["template"] = parts.words["msg"]
    derived = np.full(lines, shape.derived) & (level >= 0)
    return Columns(ts, level.astype(np.int8), derived, stored, read)


def _level_index(level: str | None) -> int:
    return -1 if level is None else LEVELS.index(level)


def _times(parts: Parts, clock: datetime, tz: tzinfo, lines: int) -> np.ndarray:
    ints = parts.ints
    if parts.epoch is not None:
        seconds = parts.epoch.copy()
        for limit, scale in ((1e17, 1e9), (1e14, 1e6), (1e11, 1e3)):
            big = np.abs(seconds) > limit
            seconds[big] /= scale
        ts = np.round(seconds * 1e6)
        if parts.fraction is not None:
            ts += parts.fraction
        return np.where(np.isnan(ts), NO_TIME, ts).astype(np.int64)
    if "S" not in ints:
        return np.full(lines, NO_TIME, np.int64)
    month = ints["mon"] if "mon" in ints else _per_value(parts.words["b"], lambda name: MONTHS.get(name, 0), 0)
    local = clock.astimezone(tz).replace(tzinfo=None) + YEAR_SKEW
    latest_us = (local - datetime(1970, 1, 1)) // timedelta(microseconds=1)
    within = ints["S"] * 1_000_000 + ints["M"] * 60_000_000 + ints["H"] * 3_600_000_000
    within += parts.fraction if parts.fraction is not None else 0
    within += ints["ms"] * 1000 if "ms" in ints else 0

    def naive(year: np.ndarray) -> np.ndarray:
        return days_from_civil(year, month, ints["d"]) * 86_400_000_000 + within

    if "Y" in ints:
        naive_us = naive(ints["Y"])
    elif "y2" in ints:  # 20yy unless that is after the clock (ParseContext.with_century)
        naive_us = naive(2000 + ints["y2"])
        naive_us = np.where(naive_us > latest_us, naive(1900 + ints["y2"]), naive_us)
    else:  # no year: the latest not after the clock (ParseContext.with_year)
        naive_us = naive(np.full(lines, local.year, np.int64))
        naive_us = np.where(naive_us > latest_us, naive(np.full(lines, local.year - 1, np.int64)), naive_us)
    valid = (ints["S"] >= 0) & (month >= 1) & (month <= 12) & (ints["d"] >= 1) & (ints["d"] <= 31)
    offset = _per_value(parts.words["z"], _zone_offset, -1 << 62) if "z" in parts.words else np.full(lines, -1 << 62)
    unzoned = valid & (offset == -1 << 62)
    if unzoned.any():
        offset[unzoned] = _zone_offsets_us(naive_us[unzoned], tz)
    return np.where(valid, naive_us - offset, NO_TIME)


def parse(engine: str, source: Source, shapes: tuple[Shape, ...], clock: datetime, tz: tzinfo) -> Columns:
    """The columns of every line: the first shape over all lines, each next one over the lines no shape
    before it read; a line without a time of its own takes the previous line's (forward fill)."""
    extract = EXTRACTORS[engine]
    merged: Columns | None = None
    rows = np.arange(source.lines)
    part = source
    for shape in shapes:
        found = columns(extract(part, shape), shape, clock, tz, part.lines)
        merged = found if merged is None else scatter(merged, found, rows)
        rows = np.flatnonzero(~merged.read)
        if not len(rows):
            break
        part = source.subset(rows)
    assert merged is not None
    own = merged.ts != NO_TIME
    last = np.maximum.accumulate(np.where(own, np.arange(len(own)), -1))
    merged.ts = np.where(last >= 0, merged.ts[np.maximum(last, 0)], NO_TIME)
    return merged


def scatter(into: Columns, found: Columns, rows: np.ndarray) -> Columns:
    """`found` (columns of the lines `rows`) written into `into` where it read them."""
    hit = rows[found.read]
    for name in ("ts", "level", "derived", "read"):
        getattr(into, name)[hit] = getattr(found, name)[found.read]
    for name, (codes, distinct) in found.words.items():
        old_codes, old_distinct = into.words.get(name, (np.full(len(into.ts), -1, np.int64), []))
        index = {word: code for code, word in enumerate(old_distinct)}
        remap = np.array([index.setdefault(word, len(index)) for word in distinct] + [-1], np.int64)
        old_codes = old_codes.copy()
        old_codes[hit] = remap[np.where(codes >= 0, codes, len(distinct))][found.read]
        into.words[name] = (old_codes, list(index))
    return into


def compact(found: Columns) -> None:
    """Drop the distinct values no line refers to any more (after `scatter` replaced some lines' words)."""
    for name, (codes, distinct) in found.words.items():
        used = np.unique(codes[codes >= 0])
        remap = np.full(len(distinct) + 1, -1, np.int64)
        remap[used] = np.arange(len(used))
        found.words[name] = (remap[np.where(codes >= 0, codes, len(distinct))], [distinct[code] for code in used])


# --- the engines' extraction kernels --------------------------------------------------------------------------


def _dictionary(values: list[bytes] | tuple[bytes, ...]) -> tuple[np.ndarray, list[str]]:
    """Codes and distinct values of a column of byte strings (b"": no value, code -1)."""
    index: dict[bytes, int] = {b"": -1}
    codes = np.fromiter((index.setdefault(value, len(index) - 1) for value in values), np.int64, len(values))
    return codes, [value.decode("utf-8", "replace") for value in list(index)[1:]]


def _numpy_ints(values: tuple[bytes, ...]) -> np.ndarray:
    column = np.array(values, dtype="S")
    return np.where(column == b"", b"-1", column).astype(np.int64)


def _numpy_fraction(values: tuple[bytes, ...]) -> np.ndarray:
    """µs of fraction digits: the first six digits, NUL padding read as 0."""
    digits = np.array(values, dtype="S6").view(np.uint8).reshape(-1, 6).astype(np.int64)
    digits = np.where(digits == 0, 0, digits - 48)
    return digits @ np.array([100_000, 10_000, 1_000, 100, 10, 1], np.int64)


_NUMPY_PATTERNS: dict[str, re.Pattern[bytes]] = {}
_NUMPY_VARIABLE = re.compile(VARIABLE.encode())


def extract_numpy(source: Source, shape: Shape) -> Parts:
    """Python's re over the whole buffer (one findall: every line one match), numpy for the rest."""
    pattern = _NUMPY_PATTERNS.get(shape.pattern)
    if pattern is None:
        pattern = _NUMPY_PATTERNS[shape.pattern] = re.compile(b"(?m)^(?:" + shape.pattern[1:].encode() + b")?[^\n]*")
    found = pattern.findall(source.data)[: source.lines] if source.lines else []
    names = list(pattern.groupindex)
    groups = list(zip(*found, strict=True)) if len(names) > 1 else [tuple(found)]
    if not found:
        groups = [() for _ in names]
    parts = Parts()
    for name, values in zip(names, groups, strict=True):
        if name in INT_GROUPS:
            parts.ints[name] = _numpy_ints(values)
        elif name == "f":
            parts.fraction = _numpy_fraction(values)
        elif name == "E":
            column = np.array(values, dtype="S")
            parts.epoch = np.where(column == b"", b"nan", column).astype(np.float64)
        elif name == "msg":
            templates = _NUMPY_VARIABLE.sub(b"<*>", b"\n".join(values)).split(b"\n") if values else []
            parts.words[name] = _dictionary(templates)
        else:
            parts.words[name] = _dictionary(values)
    return parts


def extract_pyarrow(source: Source, shape: Shape) -> Parts:
    """pyarrow.compute: extract_regex (RE2), casts, replace_substring_regex, dictionary_encode."""
    import pyarrow as pa
    import pyarrow.compute as pc

    found = pc.extract_regex(source.arrow(), shape.pattern)
    parts = Parts()
    for name, column in zip(found.type.names, found.flatten(), strict=True):
        present = pc.if_else(pc.equal(column, ""), pa.scalar(None, column.type), column)
        if name in INT_GROUPS:
            parts.ints[name] = pc.cast(present, pa.int64()).fill_null(-1).to_numpy()
        elif name == "f":
            padded = pc.utf8_slice_codeunits(pc.utf8_rpad(column, 6, "0"), 0, 6)
            parts.fraction = pc.cast(padded, pa.int64()).fill_null(0).to_numpy()
        elif name == "E":
            parts.epoch = pc.cast(present, pa.float64()).fill_null(np.nan).to_numpy()
        else:
            if name == "msg":
                present = pc.replace_substring_regex(present, VARIABLE, "<*>")
            encoded = pc.dictionary_encode(present)
            parts.words[name] = (
                encoded.indices.fill_null(-1).to_numpy().astype(np.int64),
                encoded.dictionary.to_pylist(),
            )
    return parts


def _polars_dictionary(column: Any) -> tuple[np.ndarray, list[str]]:
    import polars as pl

    codes = column.cast(pl.Categorical).to_physical()
    pairs = pl.DataFrame({"code": codes, "word": column}).drop_nulls().unique("code")
    local = np.full(int(pairs["code"].to_numpy().max(initial=0)) + 1, -1, np.int64)
    local[pairs["code"].to_numpy()] = np.arange(len(pairs))
    found = codes.fill_null(len(local)).to_numpy().astype(np.int64)
    return np.append(local, -1)[found], pairs["word"].to_list()


def extract_polars(source: Source, shape: Shape) -> Parts:
    """polars: str.extract_groups (Rust regex), casts, str.replace_all; categorical codes."""
    import polars as pl

    frame = pl.from_arrow(source.arrow()).str.extract_groups(shape.pattern).struct.unnest()  # type: ignore[union-attr]
    present = {name: pl.when(pl.col(name) != "").then(pl.col(name)) for name in frame.columns}
    exprs = []
    for name in frame.columns:
        if name in INT_GROUPS:
            exprs.append(present[name].cast(pl.Int64, strict=False).fill_null(-1).alias(name))
        elif name == "f":
            padded = pl.col(name).str.pad_end(6, "0").str.slice(0, 6)
            exprs.append(padded.cast(pl.Int64, strict=False).fill_null(0).alias(name))
        elif name == "E":
            exprs.append(present[name].cast(pl.Float64, strict=False).fill_null(np.nan).alias(name))
        elif name == "msg":
            exprs.append(present[name].str.replace_all(VARIABLE, "<*>").alias(name))
        else:
            exprs.append(present[name].alias(name))
    table = frame.select(exprs)
    parts = Parts()
    for name in table.columns:
        if name in INT_GROUPS:
            parts.ints[name] = table[name].to_numpy()
        elif name == "f":
            parts.fraction = table[name].to_numpy()
        elif name == "E":
            parts.epoch = table[name].to_numpy()
        else:
            parts.words[name] = _polars_dictionary(table[name])
    return parts


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def extract_duckdb(source: Source, shape: Shape) -> Parts:
    """DuckDB over the Arrow lines: regexp_extract (RE2) to a struct, TRY_CAST, regexp_replace; the
    result comes back as Arrow, whose dictionary_encode codes the words."""
    import duckdb
    import pyarrow as pa
    import pyarrow.compute as pc

    names = shape.groups
    selects = []
    for name in names:
        part = f"nullif(g.{name}, '')"
        if name in INT_GROUPS:
            selects.append(f"coalesce(TRY_CAST({part} AS BIGINT), -1) AS {name}")
        elif name == "f":
            selects.append(f"coalesce(TRY_CAST(left(rpad(g.f, 6, '0'), 6) AS BIGINT), 0) AS {name}")
        elif name == "E":
            selects.append(f"coalesce(TRY_CAST({part} AS DOUBLE), 'nan'::DOUBLE) AS {name}")
        elif name == "msg":
            selects.append(f"regexp_replace({part}, {_sql_text(VARIABLE)}, '<*>', 'g') AS {name}")
        else:
            selects.append(f"{part} AS {name}")
    listed = ", ".join(_sql_text(name) for name in names)
    query = (
        f"SELECT {', '.join(selects)} FROM "
        f"(SELECT regexp_extract(line, {_sql_text(shape.pattern)}, [{listed}]) AS g FROM lines)"
    )
    with duckdb.connect() as connection:
        connection.register("lines", pa.table({"line": source.arrow()}))
        table = connection.sql(query).to_arrow_table()
    parts = Parts()
    for name in names:
        column = table[name].combine_chunks() if len(table) else pa.array([], table.schema.field(name).type)
        if name in INT_GROUPS:
            parts.ints[name] = column.to_numpy()
        elif name == "f":
            parts.fraction = column.to_numpy()
        elif name == "E":
            parts.epoch = column.to_numpy()
        else:
            encoded = pc.dictionary_encode(column)
            parts.words[name] = (
                encoded.indices.fill_null(-1).to_numpy().astype(np.int64),
                encoded.dictionary.to_pylist(),
            )
    return parts


EXTRACTORS: dict[str, Callable[[Source, Shape], Parts]] = {
    "numpy_re": extract_numpy,
    "pyarrow": extract_pyarrow,
    "polars": extract_polars,
    "duckdb": extract_duckdb,
}
