"""Counts by address and by requested path over a store's matching lines (issue 27), vectorised: exactly
`count_addresses` / `count_paths` (evcli.backends.addresses) over `logstore.matching_lines`, without
decoding and matching every line in Python.

A query takes the selected rows' bytes from the mapped log a block of rows at a time
(`logstore.selections`), in chunks (one Arrow binary array per chunk, line ends left out), releasing the
mapped pages of each chunk after it. Lines whose text is not their plain bytes go through the Python functions: those
with a `text`/`unescaped` entry (masked, cut, JSON escapes) and those holding a byte outside 0x01-0x7F
(not ASCII, or NUL, which the text shows as U+FFFD). Every other line is ASCII, where Python's `\\w`,
`\\d` and `\\b` are Rust's (polars) and RE2's, and its `\\s` is the class `_SPACE`.

Addresses: the lines holding a dotted quad (RE2 over the bytes) are searched with polars for
  - tokens: maximal runs of `[A-Za-z0-9_./]` holding a dotted quad. Every character ADDRESS matches or
    its look-arounds test for being a word character, '.' or '/' is in that class, and a token is
    bounded by characters outside it (or the line's ends), which every look-around accepts; so the
    line's ADDRESS matches are those of its tokens, each found by ADDRESS on the token alone;
  - sources: SOURCE's named prefix (with `\\b`, no look-around) followed by a maximal run of digits and
    dots. The prefix ends in `=`, `:` or white space and starts at a word boundary, so no SOURCE match
    starts inside such a run or another's prefix; SOURCE on the run's text alone matches as on the line
    (the look-behinds stay inside the prefix, the run is followed by neither digit nor '.').
Each distinct token or source run is settled once with the Python regexes (kept across chunks); a line
naming a source counts its source addresses, any other line its token addresses, each distinct address
once (polars: unique (line, address) pairs, counted per address).

Paths: REQUEST and PATH_FIELD use no look-around, so polars runs them as written (`\\s` as `_SPACE`) with
the same leftmost-first match and group; each distinct path is written as its endpoint (`endpoint`) once.

Invariants: the result equals the Python functions' over `matching_lines` (the full Counter); memory
holds one block of rows and the counts, not the log's rows (logstore's invariants); the tool call's
deadline is checked between chunks and every _CHECK_LINES lines read in Python; no array over the
mapped bytes outlives the chunk that made it (the store's mmap can be closed after a query).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from evcli.backends import logstore
from evcli.backends.addresses import (
    ADDRESS,
    PATH_FIELD,
    REQUEST,
    SOURCE,
    SOURCE_NAMED,
    count_addresses,
    count_paths,
    endpoint,
)
from evcli.backends.logsearch import Filter
from evcli.core.files import check_deadline

_CHUNK_ROWS = 1 << 19  # a row group's rows per chunk: the deadline is checked between chunks
_CHECK_LINES = 1 << 14  # lines read in Python between deadline checks
_SPACE = r"\t\n\x0b\x0c\r\x1c-\x1f "  # what Python's `\s` matches in ASCII text (Rust's `\s` lacks \x1c-\x1f)
_NOT_PLAIN = r"[^\x01-\x7f]"  # a byte that is not ASCII, or NUL
_QUAD = r"[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}"  # every ADDRESS match has this form
_TOKEN = rf"[A-Za-z0-9_./]*{_QUAD}[A-Za-z0-9_./]*"

Counted = Callable[[Any], Counter[str]]  # the counts of an Arrow array of plain lines' bytes


def rust_pattern(pattern: str) -> str:
    """A Python regex without look-around as polars (Rust's regex) reads it on ASCII text: `\\s` (alone or
    in a class) as Python's ASCII white space."""

    def translated(part: re.Match[str]) -> str:
        text = part.group()
        if text == r"\s":
            return f"[{_SPACE}]"
        return re.sub(r"\\.", lambda escape: _SPACE if escape.group() == r"\s" else escape.group(), text)

    return re.sub(r"\[(?:\\.|[^\]\\])*\]|\\.", translated, pattern)


_SOURCE_RUN = rust_pattern(SOURCE_NAMED) + "[0-9][0-9.]*"
_REQUEST_RUST = rust_pattern(REQUEST.pattern)
_PATH_FIELD_RUST = rust_pattern(PATH_FIELD.pattern)


def address_counts(stored: logstore.StoredLog, wanted: Filter) -> Counter[str]:
    """`count_addresses` over the lines `wanted` keeps in `stored`."""
    settled: dict[str, list[str]] = {}
    return _counted(stored, wanted, count_addresses, lambda lines: _addresses(lines, settled))


def path_counts(stored: logstore.StoredLog, wanted: Filter) -> Counter[str]:
    """`count_paths` over the lines `wanted` keeps in `stored`."""
    return _counted(stored, wanted, count_paths, _paths)


def _counted(
    stored: logstore.StoredLog, wanted: Filter, per_line: Callable[[Iterable[str]], Counter[str]], plain: Counted
) -> Counter[str]:
    """`per_line` over the kept lines' text, `plain` counting the plain ones, row group by row group and
    chunk by chunk."""
    counts: Counter[str] = Counter()
    texts = stored.texts()
    for group, keep in logstore.selections(stored, wanted):
        special_rows, special_texts = stored.special_in(group)
        counts += per_line(
            _checked(text for row, text in zip(special_rows.tolist(), special_texts, strict=True) if keep[row])
        )
        keep[special_rows] = False
        for low in range(0, len(group), _CHUNK_ROWS):
            check_deadline()
            high = min(low + _CHUNK_ROWS, len(group))
            if not keep[low:high].any():
                continue
            lines = _lines(stored, group, low, high, keep[low:high])
            odd = _matches(lines, _NOT_PLAIN)
            odd_rows = np.flatnonzero(keep[low:high])[odd] + low
            counts += per_line(_checked(logstore.group_line(stored, group, row, texts) for row in odd_rows.tolist()))
            counts += plain(lines.filter(_arrow_mask(~odd)))
    return counts


def _lines(stored: logstore.StoredLog, group: logstore.Group, low: int, high: int, chosen: np.ndarray) -> Any:
    """The bytes of the group's rows among [low, high) that `chosen` marks, line ends left out, copied into
    one Arrow binary array: the chunk's lines and the gaps between them as one array over the mapped bytes
    (no copy), of which the chosen lines are taken; the mapped pages are released after."""
    import pyarrow as pa

    start = group["start"][low:high]
    end = start + group["length"][low:high]
    spans = 2 * (high - low)
    offsets = np.empty(spans + 1, np.int64)
    offsets[0:spans:2], offsets[1:spans:2], offsets[spans] = start, end, end[-1]
    pieces = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), spans, [None, pa.py_buffer(offsets), pa.py_buffer(stored.data)]
    )
    taken = np.zeros(spans, bool)
    taken[0::2] = chosen
    lines = pieces.filter(_arrow_mask(taken))
    del pieces
    stored.release(int(start[0]), int(end[-1]))
    return lines


def _addresses(lines: Any, settled: dict[str, list[str]]) -> Counter[str]:
    """`count_addresses` over plain lines (the module's docstring); `settled` keeps each distinct token's
    and source run's addresses across chunks."""
    import polars as pl

    quads = lines.filter(_arrow_mask(_matches(lines, _QUAD)))
    frame = pl.DataFrame({"text": _text(quads)}).with_row_index("line")
    sources = _found(frame, _SOURCE_RUN, _source_address, settled)
    tokens = _found(frame, _TOKEN, ADDRESS.findall, settled)
    pairs = pl.concat([sources, tokens.join(sources.select("line").unique(), on="line", how="anti")])
    counted = pairs.unique().group_by("address").len()
    return Counter(dict(zip(counted["address"].to_list(), counted["len"].to_list(), strict=True)))


def _source_address(run: str) -> list[str]:
    """The address a source run names ([] when SOURCE does not match it)."""
    found = SOURCE.match(run)
    return [found.group(1)] if found else []


def _found(frame: Any, pattern: str, settle: Callable[[str], list[str]], settled: dict[str, list[str]]) -> Any:
    """(line, address) for every match of `pattern` in the frame's lines, each distinct match settled once.
    A token and a source run never share a text (a run holds `=`, `:` or white space, a token none of
    them), so one cache holds both."""
    import polars as pl

    found = frame.select("line", pl.col("text").str.extract_all(pattern).alias("found")).explode("found").drop_nulls()
    distinct = found["found"].unique().to_list()
    settled.update((text, settle(text)) for text in distinct if text not in settled)
    named = [(text, address) for text in distinct for address in settled[text]]
    names = pl.DataFrame(named, schema={"found": pl.String, "address": pl.String}, orient="row")
    return found.join(names, on="found").select("line", "address")


def _paths(lines: Any) -> Counter[str]:
    """`count_paths` over plain lines: the first REQUEST match's path, else PATH_FIELD's, as its endpoint."""
    text = _text(lines)
    requested = text.str.extract(_REQUEST_RUST, 1)
    fields = text.filter(requested.is_null()).str.extract(_PATH_FIELD_RUST, 1)
    counts: Counter[str] = Counter()
    for found in (requested, fields):
        counted = found.drop_nulls().value_counts()
        for path, lines_of_path in zip(counted[found.name].to_list(), counted["count"].to_list(), strict=True):
            counts[endpoint(path)] += lines_of_path
    return counts


def _matches(lines: Any, pattern: str) -> np.ndarray:
    """Which lines' bytes hold a match of `pattern` (RE2, byte by byte)."""
    import pyarrow.compute as pc

    return pc.match_substring_regex(lines, pattern).to_numpy(zero_copy_only=False)


def _arrow_mask(mask: np.ndarray) -> Any:
    """A numpy mask as the Arrow boolean array that `filter` takes."""
    import pyarrow as pa

    return pa.array(mask, pa.bool_())


def _text(lines: Any) -> Any:
    """Plain (ASCII) lines' bytes as a polars string series (ASCII is UTF-8: viewed, not checked)."""
    import polars as pl
    import pyarrow as pa

    return pl.Series("text", lines.view(pa.large_string()))


def _checked(texts: Iterable[str]) -> Iterator[str]:
    """`texts`, the deadline checked every _CHECK_LINES of them."""
    for done, text in enumerate(texts):
        if done % _CHECK_LINES == 0:
            check_deadline()
        yield text
