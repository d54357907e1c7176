"""The vectorised log reader's unwrapping of container runtime lines (issue 27): Docker json-file lines
(`container_json`) and CRI lines (`cri`), equal to those formats' `parse` up to `WrapperFormat.wrapped`,
for evcli.backends.logcolumns (which reads the inner lines by the other formats' shapes, as `wrapped`
reads them).

Per line an unwrapper tells one of three things: read (the inner line's text and the runtime's time, both
certain), surely rejected (the format's `parse` returns None: the line goes on to the next format), or
neither (the caller hands the line to the Python path where the format's lead matches it).

Invariants: a read line's inner text is exactly the `text` `parse` hands to `wrapped` and its time the
runtime's (µs since the epoch, never NaN); the stream and partial tag are fields no instance key names,
so they change no column of the table and are not read. The lines given are printable ASCII and tab (the
vector path's), so a CRI text is too, and a json-file text is unless an escape wrote a control character.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import NamedTuple

import numpy as np
import polars as pl

from evcli.backends.logformats import cri, format_named
from evcli.backends.logformats.base import WrapperFormat
from evcli.backends.logshapes_structured import _FLAT_JSON, _json_unescaped
from evcli.backends.logshapes_values import _iso_naive, _localised

# a key of a flat JSON object: `{` or `,` first (a `"` inside a string is escaped, and one that closes a
# string is followed by `:`, `,` or `}`, never by a key name), so each match is one of the object's keys
_KEY = r'[{{,][ \t]*"{name}"[ \t]*:[ \t]*'
_LOG_KEY = _KEY.format(name="log")
_TIME_KEY = _KEY.format(name="time")
_CRI_TEXT = "(?: (?P<text>.*))?$"  # the end of cri._LINE: its head is matched, the text sliced off
_CRI_HEAD = "^(?:" + cri._LINE.pattern.removesuffix(_CRI_TEXT) + ")(?: |$)"
if not cri._LINE.pattern.endswith(_CRI_TEXT):
    raise ValueError(f"cri._LINE does not end with {_CRI_TEXT!r}")
# ContainerJson.sniff: `{"log":` first, or both keys written somewhere
_SNIFF_FIRST = '{"log":'
_SNIFF_KEYS = ('"stream":', '"log":')
_CONTENT = r'"((?:[^"\\]|\\["\\/bfnrt])*)"'  # a JSON string (no `\u`), its contents captured
# the json-file layout: `{"log":"…","stream":"stdout|stderr","time":"…"}`; its strings hold no tab (json.loads
# refuses one), the time no escape
_LOG_FIRST = '{"log":"'
_STREAM_KEY = '","stream":"'
_RUNTIME_KEYS = tuple(f'{_STREAM_KEY}{stream}","time":"' for stream in ("stdout", "stderr"))  # equally long
_LAST = '"}'
_LOG_CONTENT = r'^[^"\\\t]*(?:\\["\\/bfnrt][^"\\\t]*)*$'
_NOT_PLAIN = ['"', "\\", "\t"]  # not in the time; in the log string only as the escapes `\"`, `\\`
_LINE_END = "\\n"  # the escape ending the `log` string of a whole line
# what a JSON string's escapes write that is not printable ASCII or tab (a `\u` escape: the Python path)
_UNPRINTABLE_ESCAPED = ["\b", "\f", "\n", "\r"]


class Unwrapped(NamedTuple):
    """What an unwrapper read of `lines`: `read` its positions in them, `texts` and `micros` the inner line
    and the runtime's time of each (in `read`'s order), `odd` which inner lines are not printable ASCII and
    tab (the Python path reads them), `rejected` the lines the format surely rejects."""

    read: np.ndarray
    texts: pl.Series
    micros: np.ndarray
    odd: np.ndarray
    rejected: np.ndarray


def inner_names(name: str) -> list[str]:
    """The formats a wrapper reads its inner lines by, in its order (`WrapperFormat.inner`)."""
    wrapper = format_named(name)
    if not isinstance(wrapper, WrapperFormat):
        raise TypeError(f"{name} wraps no line")
    return [candidate.name for candidate in wrapper.inner]


def unwrap_docker(lines: pl.Series, tz: tzinfo, sniff: bool) -> Unwrapped:
    """ContainerJson.parse (after its sniff where `sniff`): the json-file layout `{"log":..,"stream":..,
    "time":..}` sliced (`_json_file`), any other flat JSON object as `_flat_docker` reads it; the `time` a
    string datetime.fromisoformat reads as the vector path does."""
    log, stamp = _json_file(lines)
    rejected = np.zeros(len(lines), bool)
    other = np.flatnonzero(log.is_null().to_numpy())
    if len(other):
        flat_log, flat_stamp, rejected[other] = _flat_docker(lines.gather(other), sniff)
        log, stamp = log.scatter(other, flat_log), stamp.scatter(other, flat_stamp)
    micros = _zoned_micros(stamp, tz)
    read = np.flatnonzero(log.is_not_null().to_numpy() & ~np.isnan(micros))
    texts, odd = _inner_texts(log.gather(read))
    return Unwrapped(read, texts, micros[read], odd, rejected)


def _inner_texts(logs: pl.Series) -> tuple[pl.Series, np.ndarray]:
    """The inner lines `logs` (JSON strings' contents) write: decoded, their line end stripped (as
    ContainerJson.parse), and which of them are not printable ASCII and tab; a content holding no escape
    but a last `\\n` (Docker ends each line so) is its text as written, but that `\\n`."""
    texts = logs.str.strip_suffix(_LINE_END)
    escaped = np.flatnonzero(texts.str.contains("\\", literal=True).to_numpy())
    decoded = _json_unescaped(logs.gather(escaped)).str.strip_chars_end("\r\n")
    odd = np.zeros(len(logs), bool)
    odd[escaped] = decoded.str.contains_any(_UNPRINTABLE_ESCAPED).to_numpy()
    return texts.scatter(escaped, decoded), odd


def _json_file(lines: pl.Series) -> tuple[pl.Series, pl.Series]:
    """The `log` and `time` strings' contents of lines in the json-file layout (null: another layout), by
    splitting and slicing: the log string ends at the line's first `","stream":"` (a `"` inside a JSON
    string is escaped, so the one after its `,` would end the string), the runtime keys and the end are
    fixed texts. Split, not found: polars finds by byte and slices by character, and a line may hold
    characters beyond ASCII (evcli.backends.logshapes_unicode)."""
    halves = lines.str.splitn(_STREAM_KEY, 2)
    log = halves.struct.field("field_0").str.slice(len(_LOG_FIRST)).alias(lines.name)
    rest = _STREAM_KEY + halves.struct.field("field_1")  # null where the line holds no stream key
    keys = len(_RUNTIME_KEYS[0])
    stamp = rest.str.slice(keys, (rest.str.len_chars().cast(pl.Int64) - keys - len(_LAST)).clip(0)).alias(lines.name)
    layout = (
        (
            lines.str.starts_with(_LOG_FIRST)
            & (rest.str.starts_with(_RUNTIME_KEYS[0]) | rest.str.starts_with(_RUNTIME_KEYS[1]))
            & rest.str.ends_with(_LAST)
            & (rest.str.len_chars() >= keys + len(_LAST))
            & ~stamp.str.contains_any(_NOT_PLAIN)
        )
        .fill_null(False)
        .to_numpy()
    )
    # a log string holding none of _NOT_PLAIN but a last `\\n` is a JSON string: only the others are matched
    unsure = np.flatnonzero(layout & log.str.strip_suffix(_LINE_END).str.contains_any(_NOT_PLAIN).to_numpy())
    layout[unsure] = log.gather(unsure).str.contains(_LOG_CONTENT).to_numpy()
    other = np.flatnonzero(~layout)
    return log.scatter(other, None), stamp.scatter(other, None)


def _flat_docker(lines: pl.Series, sniff: bool) -> tuple[pl.Series, pl.Series, np.ndarray]:
    """(the `log` and `time` strings' contents, null where not certain; the lines surely rejected) of lines
    not in the json-file layout: a flat JSON object (no tab: json.loads refuses one in a string) with one
    `log` key, a string, and one `time` key, a string, is read; a flat one without a `log` string or a
    `time` key, or one the sniff refuses, is surely rejected."""
    sniffed = np.ones(len(lines), bool)
    if sniff:
        keyed = lines.str.contains(_SNIFF_KEYS[0], literal=True) & lines.str.contains(_SNIFF_KEYS[1], literal=True)
        sniffed = (lines.str.starts_with(_SNIFF_FIRST) | keyed).to_numpy()
    flat = sniffed & lines.str.contains(_FLAT_JSON).to_numpy() & ~lines.str.contains("\t", literal=True).to_numpy()
    logs = lines.str.count_matches(_LOG_KEY).to_numpy()
    times = lines.str.count_matches(_TIME_KEY).to_numpy()
    log = lines.str.extract(_LOG_KEY + _CONTENT, 1)
    stamp = lines.str.extract(_TIME_KEY + _CONTENT, 1)
    is_string = log.is_not_null().to_numpy()
    unsure = np.flatnonzero(~(flat & (logs == 1) & (times == 1) & is_string))
    rejected = ~sniffed | (flat & ((logs == 0) | (times == 0) | ((logs == 1) & ~is_string)))
    return log.scatter(unsure, None), stamp.scatter(unsure, None), rejected


def unwrap_cri(lines: pl.Series, tz: tzinfo) -> Unwrapped:
    """Cri.parse: its regex (which implies its sniff) and a stamp the vector path reads; a line the regex
    does not match is surely rejected. The regex's head (up to the tag and the blank after it) is matched,
    the stamp (no blank in it) and the text sliced off the line."""
    matched = lines.str.contains(_CRI_HEAD).to_numpy()
    stamp_end = lines.str.find(" ", literal=True)
    micros = _zoned_micros(lines.str.slice(0, stamp_end), tz)
    read = np.flatnonzero(matched & ~np.isnan(micros))
    texts = lines.gather(read).str.slice(stamp_end.gather(read) + len(" stdout F "))
    return Unwrapped(read, texts, micros[read], np.zeros(len(read), bool), ~matched)


def _zoned_micros(stamps: pl.Series, tz: tzinfo) -> np.ndarray:
    """_keys.time_value of ISO strings (a naive one in `tz`): µs, NaN where the vector path does not read it."""
    return _localised(*_iso_naive(stamps), tz)
