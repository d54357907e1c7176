"""The vectorised log reader's unwrapping of container runtime lines (issue 27): Docker json-file lines
(`container_json`) and CRI lines (`cri`), equal to those formats' `parse` up to `WrapperFormat.wrapped`,
for evcli.backends.logcolumns (which reads the inner lines by the other formats' shapes, as `wrapped`
reads them).

Per line an unwrapper tells one of three things: read (the inner line's text and the runtime's time, both
certain), surely rejected (the format's `parse` returns None: the line goes on to the next format), or
neither (the caller hands the line to the Python path where the format's lead matches it).

Invariants: a read line's inner text is exactly the `text` `parse` hands to `wrapped` and its time the
runtime's (µs since the epoch, never NaN); the stream and partial tag are fields no instance key names,
so they change no column of the table and are not read.
"""

from __future__ import annotations

from datetime import tzinfo
from typing import NamedTuple

import numpy as np
import polars as pl

from evcli.backends.logformats import cri, format_named
from evcli.backends.logformats.base import WrapperFormat
from evcli.backends.logshapes_structured import _FLAT_JSON, _json_unescaped
from evcli.backends.logshapes_values import _iso_naive, _localised, _zone_offsets

# a key of a flat JSON object: `{` or `,` first (a `"` inside a string is escaped, and one that closes a
# string is followed by `:`, `,` or `}`, never by a key name), so each match is one of the object's keys
_KEY = r'[{{,][ \t]*"{name}"[ \t]*:[ \t]*'
_LOG_KEY = _KEY.format(name="log")
_TIME_KEY = _KEY.format(name="time")
_CRI = "^(?:" + cri._LINE.pattern + ")"
# ContainerJson.sniff: `{"log":` first, or both keys written somewhere
_SNIFF_FIRST = '{"log":'
_SNIFF_KEYS = ('"stream":', '"log":')
_CONTENT = r'"((?:[^"\\]|\\["\\/bfnrt])*)"'  # a JSON string (no `\u`), its contents captured
# the json-file layout: its strings hold no tab (json.loads refuses one), the time no escape
_DOCKER = (
    r'^\{"log":"(?P<log>[^"\\\t]*(?:\\["\\/bfnrt][^"\\\t]*)*)","stream":"(?:stdout|stderr)",'
    r'"time":"(?P<time>[^"\\\t]*)"\}$'
)
PRINTABLE = r"^[\t\x20-\x7e]*$"  # the text a vector reading reads (see evcli.backends.logcolumns)


class Unwrapped(NamedTuple):
    """What an unwrapper read of `lines`: `read` its positions in them, `texts` and `micros` the inner line
    and the runtime's time of each (in `read`'s order), `rejected` the lines the format surely rejects."""

    read: np.ndarray
    texts: pl.Series
    micros: np.ndarray
    rejected: np.ndarray


def inner_names(name: str) -> list[str]:
    """The formats a wrapper reads its inner lines by, in its order (`WrapperFormat.inner`)."""
    wrapper = format_named(name)
    if not isinstance(wrapper, WrapperFormat):
        raise TypeError(f"{name} wraps no line")
    return [candidate.name for candidate in wrapper.inner]


def unwrap_docker(lines: pl.Series, tz: tzinfo, sniff: bool) -> Unwrapped:
    """ContainerJson.parse (after its sniff where `sniff`): the json-file layout `{"log":..,"stream":..,
    "time":..}` by one regex, any other flat JSON object as `_flat_docker` reads it; the `time` a string
    datetime.fromisoformat reads as the vector path does."""
    groups = lines.str.extract_groups(_DOCKER).struct.unnest()
    log, stamp = groups["log"], groups["time"]
    rejected = np.zeros(len(lines), bool)
    other = np.flatnonzero(log.is_null().to_numpy())
    if len(other):
        flat_log, flat_stamp, rejected[other] = _flat_docker(lines.gather(other), sniff)
        log, stamp = log.scatter(other, flat_log), stamp.scatter(other, flat_stamp)
    micros = _zoned_micros(stamp, tz)
    read = np.flatnonzero(log.is_not_null().to_numpy() & ~np.isnan(micros))
    text = _json_unescaped(log.gather(read)).str.strip_chars_end("\r\n")
    return Unwrapped(read, text, micros[read], rejected)


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
    does not match is surely rejected."""
    groups = lines.str.extract_groups(_CRI).struct.unnest()
    matched = groups["stamp"].is_not_null().to_numpy()
    micros = _zoned_micros(groups["stamp"], tz)
    read = np.flatnonzero(matched & ~np.isnan(micros))
    return Unwrapped(read, groups["text"].gather(read).fill_null(""), micros[read], ~matched)


def _zoned_micros(stamps: pl.Series, tz: tzinfo) -> np.ndarray:
    """_keys.time_value of ISO strings (a naive one in `tz`): µs, NaN where the vector path does not read it."""
    naive, zones = _iso_naive(stamps)
    return _localised(naive, _zone_offsets(zones), tz)
