"""The vectorised log reader's reading of structured lines (issue 27): JSON lines (`json`) and logfmt,
equal to json_lines.record_of and logfmt's parse, for evcli.backends.logcolumns.

A line is read here when its shape is certain: a JSON line that is one flat object (string values with
the escapes `\\" \\\\ \\/ \\b \\f \\n \\r \\t`, numbers, true, false, null: json.loads reads it as a dict of
scalars), a logfmt line its pairs cover (logfmt._pairs: the pairs of a covered line are the matches of
`^(?:PAIR)+$`, each pair's match being the only one from where it starts). Its pairs become a long table
(line, key, value): a later pair of a key wins, as in a dict; each role (time, level, message) takes the
first key of its list that has a non-empty value (_keys.role_keys), the instance the first of
logrows' instance keys. A value the vector path cannot read for certain (a message that is a number, a
time datetime.fromisoformat may read otherwise) leaves the line to Python.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl

from evcli.backends import logrows
from evcli.backends.logformats import ParseContext, logfmt
from evcli.backends.logformats._keys import LEVEL_KEYS, MESSAGE_KEYS, TIME_KEYS, level_value
from evcli.backends.logshapes_values import (
    _UNREAD,
    _index,
    _iso_naive,
    _localised,
    epoch_micros,
    rows_frame,
)

_STRING = r'"(?:[^"\\]|\\["\\/bfnrt])*"'
_NUMBER = r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?"
_VALUE = rf"(?:{_STRING}|{_NUMBER}|true|false|null)"
_JSON_PAIR = rf"{_STRING}[ \t]*:[ \t]*{_VALUE}"
_FLAT_JSON = rf"^\{{[ \t]*(?:{_JSON_PAIR}(?:[ \t]*,[ \t]*{_JSON_PAIR})*)?[ \t]*\}}[ \t]*$"
_ROLES = (TIME_KEYS, LEVEL_KEYS, MESSAGE_KEYS, logrows._INSTANCE_KEYS)  # time, level, message, instance
_KEY_CODES = {key: code for code, key in enumerate(key for keys in _ROLES for key in keys)}
_CODE_ROLE = np.array([role for role, keys in enumerate(_ROLES) for _ in keys])
_CODE_RANK = np.array([rank for keys in _ROLES for rank, _ in enumerate(keys)])
# a pair of a key with a role: its `{` or `,` first (a `,"` is never inside a string: its `"` would end it)
_KEYED = (
    '[{,][ \\t]*"(?:'
    + "|".join(key.replace(".", "\\.") for keys in _ROLES for key in keys)
    + rf')"[ \t]*:[ \t]*{_VALUE}'
)
_JSON_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\/": "/", "\\b": "\b", "\\f": "\f", "\\n": "\n", "\\r": "\r", "\\t": "\t"}
_LOGFMT_TILED = rf"^(?:{logfmt._PAIR.pattern})+$"
_NUMERIC = r"^\d+(?:\.\d*)?$"  # _keys.time_value: digits with at most one `.` are epoch numbers


def read_json(lines: pl.Series, context: ParseContext) -> tuple[pl.DataFrame, np.ndarray]:
    """(rows read: `row` its position in `lines`; lines surely not JSON: none, the lead tells them)."""
    flat = lines.str.contains(_FLAT_JSON).to_numpy()
    positions = np.flatnonzero(flat)
    pairs = pl.DataFrame({"row": positions, "pair": lines.filter(flat).str.extract_all(_KEYED)}).explode("pair")
    parts = pairs["pair"].str.splitn(":", 2).struct.unnest()  # no key with a role holds `:`
    token = parts["field_1"].str.strip_chars_start(" \t")
    string = token.str.starts_with('"').fill_null(False)
    text = pl.select(
        pl.when(string).then(_json_unescaped(token.str.slice(1, token.str.len_chars() - 2))).otherwise(token)
    )
    long = _long(pairs["row"], parts["field_0"].str.strip_chars('{, \t"'), text[:, 0], string)
    read, _ = _read_roles(long.filter(pl.col("key").is_not_null()), positions, context, json_token=True)
    return read, np.zeros(len(lines), bool)


def read_logfmt(lines: pl.Series, context: ParseContext) -> tuple[pl.DataFrame, np.ndarray]:
    """(rows read; lines surely not logfmt: not covered by pairs, or without a time, level or message)."""
    text = lines.str.strip_chars_end()
    covered = text.str.contains(_LOGFMT_TILED).to_numpy()
    positions = np.flatnonzero(covered)
    pairs = pl.DataFrame({"row": positions, "pair": text.filter(covered).str.extract_all(logfmt._PAIR.pattern)})
    pairs = pairs.explode("pair")
    parts = pairs["pair"].str.strip_chars_end().str.extract_groups(r"^(?P<key>[^=]*)=(?P<token>.*)$").struct.unnest()
    token = parts["token"]
    quoted = token.str.starts_with('"')
    unquoted = token.str.slice(1, token.str.len_chars() - 2).str.replace_all('\\"', '"', literal=True)
    value = pl.select(pl.when(quoted).then(unquoted.str.replace_all("\\\\", "\\", literal=True)).otherwise(token))
    long = _long(pairs["row"], parts["key"], value[:, 0], pl.repeat(True, len(pairs), eager=True))
    read, roleless = _read_roles(long, positions, context, json_token=False)
    rejected = ~covered
    rejected[positions[roleless]] = True
    return read, rejected


def _long(row: pl.Series, key: pl.Series, text: pl.Series, string: pl.Series) -> pl.DataFrame:
    columns = {"row": row, "key": key, "text": text, "string": string}
    return pl.DataFrame(columns).cast({"row": pl.Int64, "key": pl.String, "text": pl.String, "string": pl.Boolean})


def _json_unescaped(text: pl.Series) -> pl.Series:
    """JSON string contents (no `\\u`) decoded in one left-to-right pass: every escape is a backslash and
    one character, so the leftmost match at each backslash is the escape json.loads reads there."""
    return text.str.replace_many(list(_JSON_ESCAPES), list(_JSON_ESCAPES.values()), leftmost=True)


def _read_roles(
    long: pl.DataFrame, positions: np.ndarray, context: ParseContext, *, json_token: bool
) -> tuple[pl.DataFrame, np.ndarray]:
    """The rows of the lines whose pairs (row, key, text, string) are read for certain, and which lines
    have no time, level or message. A line naming a key twice is left to Python."""
    code = long["key"].replace_strict(_KEY_CODES, default=len(_KEY_CODES), return_dtype=pl.Int64).to_numpy()
    long = long.filter(pl.Series(code < len(_KEY_CODES)))
    code = code[code < len(_KEY_CODES)]
    count = len(positions)
    pos = np.searchsorted(positions, long["row"].to_numpy())
    seen = np.zeros(count, np.uint64)
    np.bitwise_or.at(seen, pos, np.left_shift(np.uint64(1), code.astype(np.uint64)))
    duplicated = np.bitwise_count(seen) != np.bincount(pos, minlength=count)
    text, string = long["text"], long["string"].to_numpy()
    present = np.where(string, (text != "").to_numpy(), (text != "null").to_numpy())
    role, rank = _CODE_ROLE[code], _CODE_RANK[code]
    best = np.full((count, len(_ROLES)), len(_CODE_RANK))
    np.minimum.at(best, (pos[present], role[present]), rank[present])
    chosen = present & (rank == best[pos, role])
    columns: dict[str, pl.Series] = {"row": pl.Series(positions.astype(np.int64))}
    for index, name in enumerate(("time", "level", "message", "instance_")):
        picked = chosen & (role == index)
        columns[name] = pl.repeat(None, count, dtype=pl.String, eager=True).scatter(pos[picked], text.filter(picked))
        flags = np.ones(count, bool)
        flags[pos[picked]] = string[picked]
        columns[name + "_s"] = pl.Series(flags)
    frame = pl.DataFrame(columns)
    micros, unsure = _times(frame["time"], frame["time_s"], context)
    level_keys = pl.when(pl.col("level_s")).then(pl.lit("s") + pl.col("level")).otherwise(pl.lit("n") + pl.col("level"))
    level = _levels(frame.select(level_keys)[:, 0], json_token)
    frame = frame.with_columns(
        ts=pl.Series(micros / 1_000_000), level=pl.Series(level), message_=pl.col("message").fill_null("")
    )
    certain = (
        ~unsure & (level != _UNREAD) & ~duplicated & frame["message_s"].to_numpy() & frame["instance__s"].to_numpy()
    )
    roleless = ~duplicated & (best[:, :3] == len(_CODE_RANK)).all(axis=1)
    return rows_frame(frame.filter(pl.Series(certain) & ~pl.Series(roleless)), pl.col("instance_")), roleless


def _times(text: pl.Series, string: pl.Series, context: ParseContext) -> tuple[np.ndarray, np.ndarray]:
    """µs of each time value (NaN: none) and whether it is unsure (_keys.time_value)."""
    present = text.is_not_null().to_numpy()
    string_values = string.fill_null(False).to_numpy()
    digit_first = text.str.contains(r"^\d").fill_null(False).to_numpy()
    numeric = text.str.contains(_NUMERIC).fill_null(False).to_numpy()
    boolean = text.is_in(["true", "false"]).fill_null(False).to_numpy() & ~string_values
    as_number = (numeric & string_values) | (~string_values & ~boolean & present)
    epoch = epoch_micros(text.cast(pl.Float64, strict=False).to_numpy())
    iso = _localised(*_iso_naive(text), context.tz)
    as_iso = string_values & digit_first & ~numeric
    micros = np.where(as_number, epoch, np.where(as_iso, iso, np.nan))
    unsure = (as_number | as_iso) & np.isnan(micros)
    return micros, unsure


def _levels(keys: pl.Series, json_token: bool) -> np.ndarray:
    """_keys.level_value of each value ("s" + a string, "n" + a JSON token), once per distinct value."""
    distinct = keys.drop_nulls().unique().sort()
    table = np.array([_level_of_key(key, json_token) for key in distinct.to_list()] + [-1], np.int64)
    codes = distinct.search_sorted(keys.fill_null("")).to_numpy()
    return table[np.where(keys.is_not_null().to_numpy(), codes, len(distinct))]


def _level_of_key(key: str, json_token: bool) -> int:
    value: Any = key[1:]
    try:
        if key[0] == "n" and json_token:
            value = json.loads(value)
        return _index(level_value(value))
    except (ValueError, OverflowError):
        return _UNREAD
