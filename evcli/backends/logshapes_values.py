"""The vectorised log reader's readings of values (issue 27): times, levels, instances and templates of
many lines at once with polars and numpy, each equal to the per-line reading it replaces (the rules of
evcli.backends.logformats.base, logrows and the formats' modules). evcli.backends.logcolumns applies them.

Invariants: every function reads lines of printable ASCII, tab and SAFE characters only
(evcli.backends.logshapes_unicode: Python's and Rust's regexes agree on them);
a value it cannot read for certain is marked (a NaN time, the level _UNREAD) and its line goes to the
per-line Python reading.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, tzinfo

import numpy as np
import polars as pl
import pyarrow as pa

from evcli.backends import logrows
from evcli.backends.base import LEVELS
from evcli.backends.logformats import ParseContext, base, rfc3164
from evcli.backends.logformats.base import MONTHS, SYSLOG_SEVERITIES, YEAR_SKEW, level_of
from evcli.backends.logformats.shapes import Shape
from evcli.backends.logshapes_unicode import templates
from evcli.core.time import abbreviated_zone


def _without(pattern: str, look: str, instead: str) -> str:
    """`pattern` with its one look-around `look` written as `instead` (Rust's regex has no look-around)."""
    if pattern.count(look) != 1:
        raise ValueError(f"{look!r} is not once in {pattern!r}")
    return pattern.replace(look, instead)


# logrows._VARIABLE without its look-ahead: `\b(?=[\w.-]*\d)[\w.-]+` matches what `\b[\w.-]*\d[\w.-]*` does
VARIABLE = _without(logrows._VARIABLE.pattern, r"\b(?=[\w.-]*\d)[\w.-]+", r"\b[\w.-]*\d[\w.-]*")
_ISO = (
    r"^(?P<Y>\d{4})-(?P<mon>\d\d)-(?P<d>\d\d)[T ](?P<H>\d\d):(?P<M>\d\d)(?::(?P<S>\d\d)(?:[.,](?P<f>\d{1,9}))?)?"
    r"(?P<z>Z|[+-]\d\d(?::?\d\d)?)?$"
)  # the ISO texts datetime.fromisoformat reads as the vector path does (others: the Python path)
_ZONE = r"^(?P<sign>[+-])(?P<zh>\d\d):?(?P<zm>\d\d)?$"
# base.leading_level's first rule: its look-ahead (after its level words) is followed by separators
# that take the character it looks at, so reading that character is the same match
_FIRST_LEVEL = (
    "^(?P<first>" + _without(base._FIRST_LEVEL.pattern, r"(?=[\s:|]|$)", r"(?:[\s:|]|$)") + ")(?P<message>.*)$"
)
_LEVEL_SEPARATORS = base._LEVEL_SEPARATORS + "[]"
# the words (any case) of every other rule of leading_level; a text with none of them and no `=` has no level
_LEVEL_HINTS = ["trace", "debug", "info", "notice", "warn", "err", "crit", "fatal", "severe", "emerg", "panic", "="]
# rfc3164.message_level's rules (no look-around in them)
_SYSLOG_WORDED = "^(?i:" + rfc3164._MESSAGE_LEVEL.pattern + ")"
_SYSLOG_UPPER = "^(?:" + rfc3164._UPPER_LEVEL.pattern + ")"
_LEVEL_FIELD = rfc3164._LEVEL_FIELD.pattern
_LEADING_INSTANCE = "^" + logrows._LEADING_INSTANCE.pattern
_INSTANCE_FIELD = logrows._INSTANCE_FIELD.pattern
_US = 1_000_000
# the bytes an ISO stamp's fields are read from: up to its fraction's sixth digit, its zone's longest layout
_HEAD_BYTES, _ZONE_BYTES = 26, 6
_DAYS_IN_MONTH = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], np.int64)
_NO_LEVEL = -1
_UNREAD = -2  # a level the vector path cannot place: the line goes to the Python path

# what a line became: read by the vector path (a row), or left to the Python path
_PARSED, _CONTINUED, _UNRECOGNISED, _BLANK, _PYTHON = 1, 2, 3, 4, 5


_COLUMNS = ("row", "parsed", "unrecognised", "ts", "level", "derived", "instance", "template")
_SCHEMA = {
    "row": pl.Int64,
    "parsed": pl.Boolean,
    "unrecognised": pl.Boolean,
    "ts": pl.Float64,
    "level": pl.Int8,
    "derived": pl.Boolean,
    "instance": pl.String,
    "template": pl.String,
}


def _shape_frame(groups: pl.DataFrame, shape: Shape, context: ParseContext) -> pl.DataFrame:
    """The rows of the lines a shape matched whose reading is certain (time, level and message)."""
    micros = _TIMES[shape.time](groups, context)
    frame = groups.with_columns(pl.Series("ts", micros / _US))
    frame = frame.with_columns(_message(shape).alias("message_"))
    if shape.after:
        frame = _leading_level(frame, blank=shape.after == "leading_level")
    else:
        frame = frame.with_columns(_level(frame, shape).alias("level"))
    frame = frame.filter(pl.col("ts").is_not_nan() & pl.col("message_").is_not_null() & (pl.col("level") != _UNREAD))
    field = _field(shape.instance_fields, shape.nil)
    return rows_frame(frame, field, derived=pl.lit(shape.derived == "status") & (pl.col("level") >= 0))


def rows_frame(frame: pl.DataFrame, field: pl.Expr, derived: pl.Expr | None = None) -> pl.DataFrame:
    """Parsed rows of `frame` (row, ts in seconds, level, message_): `field` the instance field, if any."""
    instance, message = _split_instance(field)
    rows = frame.select(
        pl.col("row"),
        parsed=pl.lit(True),
        unrecognised=pl.lit(False),
        ts=pl.col("ts"),
        level=pl.col("level").cast(pl.Int8),
        derived=pl.lit(False) if derived is None else derived,
        instance=instance,
        template=message,
    )
    return rows.with_columns(templates(rows["template"], VARIABLE))


def _field(names: tuple[str, ...], nil: str = "") -> pl.Expr:
    """The first of the groups `names` that is neither empty nor `nil` (None: none is)."""
    kept = [pl.when((pl.col(name) != "") & (pl.col(name) != (nil or ""))).then(pl.col(name)) for name in names]
    return pl.coalesce(kept) if kept else pl.lit(None, pl.String)


def _message(shape: Shape) -> pl.Expr:
    if shape.after == "leading_level":
        return pl.col("rest_")
    if shape.after == "epoch":
        return pl.col("rest_").str.strip_chars_start(",;|")
    names = (shape.message,) if isinstance(shape.message, str) else shape.message
    message = pl.coalesce([pl.col(name) for name in names]).fill_null("")
    return message.str.strip_chars(" \t") if shape.strip else message


def _level(frame: pl.DataFrame, shape: Shape) -> pl.Series:
    """Index into LEVELS (-1: none) of each row."""
    if shape.level_table == "error":  # proxifier: ERROR when the message reports ` error : `
        failed = frame["message_"].str.contains(shape.levels[0]).to_numpy()
        return pl.Series("level", np.where(failed, LEVELS.index("ERROR"), _NO_LEVEL))
    if not shape.levels:
        return pl.Series("level", np.full(len(frame), _NO_LEVEL))
    values = frame.select(pl.coalesce([pl.col(name) for name in shape.levels]).alias("word"))["word"]
    if shape.level_table == "syslog":
        return _syslog_levels(values, frame["message_"])
    if shape.level_table == "pri":
        return _per_word(values, _pri_or_unread)
    if shape.derived == "status":
        first = values.str.slice(0, 1)
        return pl.select(pl.when(first == "5").then(4).when(first == "4").then(3).otherwise(-1))[:, 0].alias("level")
    if shape.level_words:
        words_table = dict(shape.level_words)
        fallback = level_of if shape.level_table == "word" else lambda word: None
        return _per_word(values, lambda word: _index(words_table.get(word or "") or fallback(word)))
    return _per_word(values, _level_index)


def _index(level: str | None) -> int:
    return _NO_LEVEL if level is None else LEVELS.index(level)


def _pri_or_unread(pri: str | None) -> int:
    """rfc5424: the PRI's severity; a PRI of 192 or more the format rejects (the line is left to Python)."""
    return _UNREAD if pri is None or int(pri) >= 192 else LEVELS.index(SYSLOG_SEVERITIES[int(pri) % 8])


def _level_index(word: str | None) -> int:
    level = level_of(word)
    return _NO_LEVEL if level is None else LEVELS.index(level)


def _per_word(words: pl.Series, value: Callable[[str | None], int]) -> pl.Series:
    """`value(word)` of each row's word, computed once per distinct word (None: a missing word)."""
    distinct = words.drop_nulls().unique().sort()
    table = np.array([value(word) for word in distinct.to_list()] + [value(None)], np.int64)
    codes = distinct.search_sorted(words.fill_null("")).to_numpy()
    present = words.is_not_null().to_numpy()
    return pl.Series("level", table[np.where(present, codes, len(distinct))])


def _syslog_levels(pri: pl.Series, messages: pl.Series) -> pl.Series:
    """rfc3164's level: PRI below 192 as its severity, else the message's (`message_level`)."""
    by_pri = _per_word(pri, _pri_level)
    worded = messages.str.extract(_SYSLOG_WORDED, 1)
    upper = messages.str.extract(_SYSLOG_UPPER, 1)
    keyed = messages.str.extract(_LEVEL_FIELD, 1)
    word = pl.DataFrame({"w": worded, "u": upper, "k": keyed}).select(pl.coalesce("w", "u", "k"))
    by_message = _per_word(word[:, 0], _level_index)
    return pl.Series("level", np.where(by_pri.to_numpy() >= 0, by_pri.to_numpy(), by_message.to_numpy()))


def _pri_level(pri: str | None) -> int:
    if pri is None or int(pri) >= 192:
        return _NO_LEVEL
    return LEVELS.index(SYSLOG_SEVERITIES[int(pri) % 8])


def _leading_level(frame: pl.DataFrame, *, blank: bool = True) -> pl.DataFrame:
    """base.leading_level of the text `message_` (with `blank`: where it starts with a blank or is empty,
    as iso8601 requires): a level word first (taken off the message), or no level hint at all (the
    message stripped); else _UNREAD."""
    rest = frame["message_"]
    blank_after = (rest.str.len_chars() == 0) | rest.str.contains(r"^[ \t]")
    first = rest.str.extract_groups(_FIRST_LEVEL).struct.unnest()
    word = first["first"].str.strip_chars(_LEVEL_SEPARATORS)
    levels = _per_word(word, _level_index).to_numpy()
    hinted = rest.str.contains_any(_LEVEL_HINTS, ascii_case_insensitive=True).to_numpy()
    worded = word.is_not_null().to_numpy()
    level = np.where(worded, levels, np.where(hinted, _UNREAD, _NO_LEVEL))
    message = first["message"].zip_with(pl.Series(worded), rest.str.strip_chars(" \t"))
    level = np.where(blank_after.to_numpy() | (not blank), level, _UNREAD)
    return frame.with_columns(pl.Series("level", level), message.alias("message_"))


def _split_instance(field: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """logrows.split_instance: a non-empty instance field, else a leading `[name]` of the message (taken
    off it), else an `instance=` key in it."""
    message = pl.col("message_")
    leading = message.str.extract(_LEADING_INSTANCE, 1)
    keyed = message.str.extract(_INSTANCE_FIELD, 1)
    fielded = field.is_not_null()
    instance = pl.when(fielded).then(field).otherwise(pl.coalesce(leading, keyed))
    stripped = (
        pl.when(~fielded & leading.is_not_null()).then(message.str.replace(_LEADING_INSTANCE, "")).otherwise(message)
    )
    return instance, stripped


# --- times: µs since the epoch as float64, NaN where the vector path does not read the time -----------------


def _iso_times(groups: pl.DataFrame, context: ParseContext) -> np.ndarray:
    return _localised(*_iso_naive(groups["stamp"]), context.tz)


def _slashed_times(groups: pl.DataFrame, context: ParseContext) -> np.ndarray:
    """nginx_error: the stamp with `/` read as `-` by datetime.fromisoformat."""
    return _localised(*_iso_naive(groups["stamp"].str.replace_all("/", "-", literal=True)), context.tz)


def _postgres_times(groups: pl.DataFrame, context: ParseContext) -> np.ndarray:
    """postgres: a naive ISO stamp, then its zone: an abbreviation core.time knows, an offset, else none."""
    naive, _ = _iso_naive(groups["stamp"])
    return _localised(naive, _per_value(groups["zone"], _postgres_offset), context.tz)


def _postgres_offset(zone: str | None) -> float:
    named = None if zone is None else abbreviated_zone(zone)
    if named is not None:
        return (named.utcoffset(None) or timedelta()) // timedelta(microseconds=1)
    if zone is None or zone[0] not in "+-":
        return np.nan
    digits = zone[1:].replace(":", "")
    minutes = int(digits[:2]) * 60 + int(digits[2:4] or 0)
    if minutes >= 24 * 60:  # timezone() refuses it: the Python reading raises
        return -np.inf
    return (1 if zone[0] == "+" else -1) * minutes * 60 * _US


def _iso_naive(stamps: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """µs of each stamp's wall time (NaN: not read) and µs east of UTC of its zone (`_zone_offsets`), read
    off the bytes of the stamps `_ISO` matches: the fields up to the fraction sit at fixed places from the
    start, the zone's at fixed places from the end (its layout told by where its sign is), and the
    fraction's digits fill the place between."""
    matched = stamps.str.contains(_ISO).fill_null(False).to_numpy()
    naive, offsets = np.full(len(stamps), np.nan), np.full(len(stamps), np.nan)
    rows = np.flatnonzero(matched)
    for at in range(0, len(rows), _STAMPS_AT_ONCE):  # a slice at a time: each number column is int64
        part = rows[at : at + _STAMPS_AT_ONCE]
        naive[part], offsets[part] = _read_stamps(stamps.gather(part))
    return naive, offsets


_STAMPS_AT_ONCE = 8192


def _read_stamps(stamps: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """`_iso_naive` of stamps `_ISO` matches (no nulls)."""
    head, tail, length = _stamp_bytes(stamps)
    seconds = (length > 16) & (head[:, 16] == ord(":"))
    point = seconds & (length > 19) & np.isin(head[:, 19], (ord("."), ord(",")))
    zone = _zone_size(tail)
    digits = np.where(point, length - zone - 20, 0)
    micro = np.zeros(len(length), np.int64)
    for place in range(20, 26):
        micro = micro * 10 + np.where(place - 20 < digits, head[:, place].astype(np.int64) - ord("0"), 0)
    second = np.where(seconds, _number(head, 17, 18), 0)
    day, hour, minute = _number(head, 8, 9), _number(head, 11, 12), _number(head, 14, 15)
    naive = _naive_micros(_number(head, 0, 1, 2, 3), _number(head, 5, 6), day, hour, minute, second, micro)
    return naive, _tail_offsets(tail, zone)


def _stamp_bytes(texts: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the first _HEAD_BYTES bytes of each text, its last _ZONE_BYTES, its length) of ASCII texts of at
    least _ZONE_BYTES bytes (no nulls); bytes past a text's end are another text's or 0."""
    array = texts.to_arrow().cast(pa.large_string())  # 64-bit offsets
    bounds = np.frombuffer(array.buffers()[1], np.int64)[array.offset : array.offset + len(array) + 1]
    data = np.frombuffer(array.buffers()[2], np.uint8)
    padded = np.concatenate([data, np.zeros(_HEAD_BYTES, np.uint8)])
    head = np.lib.stride_tricks.sliding_window_view(padded, _HEAD_BYTES)[bounds[:-1]]
    tail = np.lib.stride_tricks.sliding_window_view(data, _ZONE_BYTES)[bounds[1:] - _ZONE_BYTES]
    return head, tail, np.diff(bounds)


def _number(grid: np.ndarray, *places: int) -> np.ndarray:
    """The decimal number the digits at `places` of each row of `grid` write."""
    value = np.zeros(len(grid), np.int64)
    for place in places:
        value = value * 10 + grid[:, place].astype(np.int64) - ord("0")
    return value


def _zone_size(tail: np.ndarray) -> np.ndarray:
    """How long the zone ending each ISO stamp is (0: none, `Z`, ±hh, ±hhmm, ±hh:mm) by its last bytes:
    the place of its sign or `Z` (no other `+`, `-` or `Z` is among an ISO stamp's last six bytes)."""
    sign = (tail == ord("+")) | (tail == ord("-"))
    return np.select([tail[:, 5] == ord("Z"), sign[:, 3], sign[:, 1], sign[:, 0]], [1, 3, 5, 6], 0)


def _tail_offsets(tail: np.ndarray, zone: np.ndarray) -> np.ndarray:
    """_zone_offsets of the zones of `zone` bytes ending the stamps whose last bytes are `tail`."""
    layouts = [zone == 6, zone == 5, zone == 3]
    hours = np.select(layouts, [_number(tail, 1, 2), _number(tail, 2, 3), _number(tail, 4, 5)], 0)
    minutes = np.where(zone >= 5, _number(tail, 4, 5), 0)
    negative = np.select(layouts, [tail[:, 0], tail[:, 1], tail[:, 3]], 0) == ord("-")
    offsets = np.where(negative, -1.0, 1.0) * (hours * 3600 + minutes * 60) * _US
    offsets = np.where((hours >= 24) | (minutes >= 60), -np.inf, offsets)
    return np.where(zone == 0, np.nan, np.where(zone == 1, 0.0, offsets))


def _ints(values: pl.Series, missing: int) -> np.ndarray:
    return values.cast(pl.Int64).fill_null(missing).to_numpy()


def _syslog_times(groups: pl.DataFrame, context: ParseContext) -> np.ndarray:
    month = groups["month"].replace_strict(MONTHS, return_dtype=pl.Int64).to_numpy()
    return _with_year(groups, month, context, np.zeros(len(month), np.int64))


def _monthday_times(groups: pl.DataFrame, context: ParseContext) -> np.ndarray:
    """glog, logcat, proxifier: digits, the year written (`year`) or inferred; `fraction` µs or `millis`."""
    month = _ints(groups["month"], -1)
    micro = _micro(groups)
    inferred = _with_year(groups, month, context, micro)
    if "year" not in groups.columns:
        return inferred
    year = _ints(groups["year"], -1)
    written = _naive_micros(year, month, *_clock(groups), micro)
    return np.where(year >= 0, _localised(written, np.full(len(month), np.nan), context.tz), inferred)


def _micro(groups: pl.DataFrame) -> np.ndarray:
    if "fraction" in groups.columns:
        return _ints(groups["fraction"], 0)
    if "millis" in groups.columns:
        return _ints(groups["millis"], 0) * 1000
    return np.zeros(len(groups), np.int64)


def _clock(groups: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """day, hour, minute and second of each row (blank-padded digits)."""
    day, hour, minute, second = (
        _ints(groups[name].str.strip_chars(" "), -1) for name in ("day", "hour", "minute", "second")
    )
    return day, hour, minute, second


def _with_year(groups: pl.DataFrame, month: np.ndarray, context: ParseContext, micro: np.ndarray) -> np.ndarray:
    """ParseContext.with_year: the latest year that puts the time no later than the clock + YEAR_SKEW."""
    day, hour, minute, second = _clock(groups)
    local = context.local_clock
    latest = (local + YEAR_SKEW - datetime(1970, 1, 1)) // timedelta(microseconds=1)
    naive = np.full(len(month), np.nan)
    zero = np.zeros(len(month), np.int64)
    for year in range(local.year + 1, local.year - 8, -1):
        moment = _naive_micros(np.full(len(month), year), month, day, hour, minute, second, zero)
        naive = np.where(np.isnan(naive) & (moment <= latest), moment, naive)
    return _localised(naive + micro, np.full(len(month), np.nan), context.tz)


def _century_times(groups: pl.DataFrame, context: ParseContext) -> np.ndarray:
    """hdfs, spark: ParseContext.with_century (20yy unless after the clock + YEAR_SKEW, then 19yy)."""
    yy, month = _ints(groups["yy"], -1), _ints(groups["month"], -1)
    clock = _clock(groups)
    zero = np.zeros(len(yy), np.int64)
    latest = (context.local_clock + YEAR_SKEW - datetime(1970, 1, 1)) // timedelta(microseconds=1)
    recent = _naive_micros(2000 + yy, month, *clock, zero)
    naive = np.where(recent <= latest, recent, _naive_micros(1900 + yy, month, *clock, zero))
    naive = np.where(np.isnan(recent), np.nan, naive)
    return _localised(naive + _micro(groups), np.full(len(yy), np.nan), context.tz)


def _apache_times(groups: pl.DataFrame, context: ParseContext) -> np.ndarray:
    month = groups["month"].replace_strict(MONTHS, default=0, return_dtype=pl.Int64).to_numpy()
    clock = groups["time"].str.extract_groups(r"^(?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)$").struct.unnest()
    day = _ints(groups["day"].str.strip_chars(" "), -1)
    fraction = _ints(groups["fraction"].str.pad_end(6, "0"), 0)
    hour, minute, second = (_ints(clock[name], -1) for name in ("H", "M", "S"))
    naive = _naive_micros(_ints(groups["year"], -1), month, day, hour, minute, second, fraction)
    return _localised(naive, np.full(len(month), np.nan), context.tz)


def _healthapp_times(groups: pl.DataFrame, context: ParseContext) -> np.ndarray:
    year, month, day, hour, minute, second, millis = (
        _ints(groups[name], -1) for name in ("year", "month", "day", "hour", "minute", "second", "millis")
    )
    naive = _naive_micros(year, month, day, hour, minute, second, millis * 1000)
    return _localised(naive, np.full(len(year), np.nan), context.tz)


def _epoch_times(groups: pl.DataFrame, context: ParseContext) -> np.ndarray:
    """base.epoch_stamp: s, ms, µs or ns by magnitude, then datetime.fromtimestamp (µs rounded half to
    even); NaN outside the years datetime holds."""
    return epoch_micros(groups["number"].cast(pl.Float64).to_numpy())


def epoch_micros(value: np.ndarray) -> np.ndarray:
    """base.epoch_stamp of float64 values as µs (NaN: not read)."""
    magnitude = np.abs(value)
    value = np.where(
        magnitude > 1e17,
        value / 1e9,
        np.where(magnitude > 1e14, value / 1e6, np.where(magnitude > 1e11, value / 1e3, value)),
    )
    fraction, whole = np.modf(value)
    micros = whole * _US + np.rint(fraction * _US)
    return np.where((value >= 0) & (value < 2**53 / _US), micros, np.nan)  # µs exact in a float64


def _seconds_times(groups: pl.DataFrame, context: ParseContext) -> np.ndarray:
    """cfdr, hpc: 10-digit epoch seconds in UTC; cfdr adds its stamp's µs where its second agrees."""
    seconds = _ints(groups["epoch"], -1)
    micros = (seconds * _US).astype(np.float64)
    if "fraction" in groups.columns:
        agrees = _ints(groups["second"], -1) == seconds % 60
        micros = micros + np.where(agrees, _ints(groups["fraction"], 0), 0)
    return micros


def _per_value(values: pl.Series, value: Callable[[str | None], float]) -> np.ndarray:
    """`value(text)` of each row's text as float64, computed once per distinct text."""
    distinct = values.drop_nulls().unique().sort()
    table = np.array([value(text) for text in distinct.to_list()] + [value(None)], np.float64)
    codes = distinct.search_sorted(values.fill_null("")).to_numpy()
    return table[np.where(values.is_not_null().to_numpy(), codes, len(distinct))]


def _access_times(groups: pl.DataFrame, context: ParseContext) -> np.ndarray:
    parts = (
        groups["stamp"]
        .str.extract_groups(
            r"^(?P<d>\d\d)/(?P<b>[A-Z][a-z]{2})/(?P<Y>\d{4}):(?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d) (?P<z>[+-]\d{4})$"
        )
        .struct.unnest()
    )
    month = parts["b"].replace_strict(MONTHS, default=0, return_dtype=pl.Int64).to_numpy()
    year, day, hour, minute, second = (parts[name].cast(pl.Int64).to_numpy() for name in ("Y", "d", "H", "M", "S"))
    naive = _naive_micros(year, month, day, hour, minute, second, np.zeros(len(month), np.int64))
    return _localised(naive, _zone_offsets(parts["z"]), context.tz)


_TIMES = {
    "iso": _iso_times,
    "slashed": _slashed_times,
    "postgres": _postgres_times,
    "syslog": _syslog_times,
    "monthday": _monthday_times,
    "century": _century_times,
    "access": _access_times,
    "apache": _apache_times,
    "healthapp": _healthapp_times,
    "epoch": _epoch_times,
    "seconds": _seconds_times,
}


def _naive_micros(
    year: np.ndarray,
    month: np.ndarray,
    day: np.ndarray,
    hour: np.ndarray,
    minute: np.ndarray,
    second: np.ndarray,
    micro: np.ndarray,
) -> np.ndarray:
    """µs of naive times since 1970-01-01 as float64 (exact below 2**53), NaN for a time datetime rejects."""
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    days_in = _DAYS_IN_MONTH[np.clip(month, 0, 12)] + (leap & (month == 2))
    valid = (year >= 1) & (year <= 9999) & (month >= 1) & (month <= 12) & (day >= 1) & (day <= days_in)
    valid &= (hour >= 0) & (hour < 24) & (minute >= 0) & (minute < 60) & (second >= 0) & (second < 60)
    shifted = year - (month <= 2)
    era = np.floor_divide(shifted, 400)
    of_era = shifted - era * 400
    of_year = (153 * (month + np.where(month > 2, -3, 9)) + 2) // 5 + day - 1
    days = era * 146097 + of_era * 365 + of_era // 4 - of_era // 100 + of_year - 719468
    micros = ((days * 24 + hour) * 60 + minute) * 60 * _US + second * _US + micro
    return np.where(valid, micros.astype(np.float64), np.nan)


def _zone_offsets(zones: pl.Series) -> np.ndarray:
    """µs east of UTC each zone text names (Z, ±hh, ±hhmm, ±hh:mm); NaN: none; an offset datetime rejects
    reads as -inf (its time is then NaN: the row leaves the vector path)."""
    parts = zones.str.extract_groups(_ZONE).struct.unnest()
    hours = parts["zh"].cast(pl.Int64).to_numpy().astype(np.float64)
    minutes = parts["zm"].cast(pl.Int64).fill_null(0).to_numpy().astype(np.float64)
    sign = np.where(parts["sign"].to_numpy() == "-", -1.0, 1.0)
    offsets = sign * (hours * 3600 + minutes * 60) * _US
    offsets = np.where((hours >= 24) | (minutes >= 60), -np.inf, offsets)
    utc = (zones == "Z").fill_null(False).to_numpy()
    return np.where(utc, 0.0, offsets)


def _localised(naive: np.ndarray, offsets: np.ndarray, tz: tzinfo) -> np.ndarray:
    """UTC µs of naive times with their zone offsets; a time without one takes `tz`'s offset (fold=0) at
    its minute, looked up once per distinct minute (logrows.Epochs)."""
    unzoned = np.isnan(offsets) & ~np.isnan(naive)
    if unzoned.any():
        minutes = (naive[unzoned] // (60 * _US)).astype(np.int64)
        distinct, inverse = np.unique(minutes, return_inverse=True)
        found = [
            (datetime(1970, 1, 1) + timedelta(minutes=int(minute))).replace(tzinfo=tz, fold=0).utcoffset()
            or timedelta()
            for minute in distinct
        ]
        offsets = offsets.copy()
        offsets[unzoned] = np.array([offset // timedelta(microseconds=1) for offset in found], np.float64)[inverse]
    utc = naive - offsets
    return np.where(np.isfinite(utc), utc, np.nan)
