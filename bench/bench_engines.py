#!/usr/bin/env python
"""Which engine should index and search snapshot logs (issue 27): candidate engines measured on the same
generated logs in the same run, against evcli's LineReader and against grep.

    python bench/bench_engines.py                      # 200k lines per format, a 1M-line mixed log
    python bench/bench_engines.py --quick              # 20k / 100k lines, fewer repetitions
    python bench/bench_engines.py --log-lines 5000000 --sections build,queries  # the issue's warm size
    python bench/bench_engines.py --engines polars,re2 # some engines only

Prints ONE JSON object to stdout; progress goes to stderr; the temporary directory is removed. Engines
(bench/_engines.py): numpy_re (Python's re over the mmap'd buffer, numpy for the rest), pyarrow compute,
polars, DuckDB; google-re2 and hyperscan for matching only (over the first parser's columns). An engine that
does not import is skipped and listed under meta.not_importable. Sections:

* formats: per format of bench_logformats.LINES, lines per CPU second of LineReader.read (the baseline) and
  of each engine's parse of the same file (read, split, extract timestamp -> epoch, level, address, path,
  instance and the message template, as columns), with the share of lines whose ts, level and template
  agree with evcli's (first 20,000 lines). Target: every format >= 300k lines per CPU second.
* build: the first use of bench_tools.write_mixed_log's log per engine: parse (every shape of the mix),
  the masking screen and overlay (the lines it changed parsed again from their masked text), the store
  written (bench/_engine_stores.py); seconds (<= 3 s per million lines), CPU, and the store's size as a
  share of the log (<= 0.6).
* queries: warm, on that log, each engine opening its store every time: keyword, keyword + 30-minute range,
  level, count by address; median seconds against `grep -c -i -F` / `grep -c -E` / `grep -o | sort | uniq -c`
  on the same file (<= 2x, 2x, 2x, 3x), counts and keyword line numbers checked equal to grep's.
* masking: bench_tools.write_log's log (bearer tokens, JDBC passwords): evcli's Redactor.mask_stream per
  line against each engine's screen of the whole buffer + mask_line on the lines it flags; every line
  checked identical to mask_stream's; a secret searched as a keyword must find nothing.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from functools import partial
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import _engines as eng
import numpy as np
from _common import T0, finish, log, r4, run_sections
from _engine_stores import STORES, NumpyStore
from bench_logformats import LINES, _at
from bench_tools import MIXED_START, write_log, write_mixed_log

from evcli.backends.base import LEVELS
from evcli.core.redaction import _KEY_BEGIN, _KEYWORD_RULES, MAX_KEY_BLOCK_LINES, Redactor

TARGETS = {"lines_per_cpu_s": 300_000, "first_use_s_per_million": 3.0, "store_ratio": 0.6}
QUERY_TARGETS = {"keyword": 2.0, "keyword_range": 2.0, "level": 2.0, "by_address": 3.0}
KEYWORD = "ord-12"
LEVEL = "ERROR"
# the lines grep counts at level ERROR in the mixed log: the app log's written level, the access log's 5xx
LEVEL_GREP = r'^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:.]+ ERROR |^[^ ]+ [^ ]+ [^ ]+ \[[^]]*\] "[^"]*" 5[0-9][0-9] '
ADDRESS_GREP = r"[0-9]{1,3}(\.[0-9]{1,3}){3}"
AGREEMENT_LINES = 20_000
MIXED_TZ = ZoneInfo("UTC")
MIXED_CLOCK = datetime(2026, 7, 9, tzinfo=UTC)  # bench_tools.mixed_snapshot's env.toml `now`
SCREEN_KEYWORDS = [keyword for keyword, _ in _KEYWORD_RULES]
BASE64_RUN = r"[A-Za-z0-9+/]{40}"


def cpu_best(call: Callable[[], Any], runs: int) -> tuple[float, float, Any]:
    """(best CPU seconds of this process, all threads; wall seconds of that run; its result)."""
    best = (float("inf"), 0.0, None)
    for _ in range(runs):
        cpu, wall = time.process_time(), time.perf_counter()
        result = call()
        spent = (time.process_time() - cpu, time.perf_counter() - wall, result)
        best = min(best, spent, key=lambda item: item[0])
    return best


def median_wall(call: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


# --- formats: parse throughput per format and engine -------------------------------------------------------


def _baseline(lines: list[str], name: str, context: Any) -> tuple[np.ndarray, np.ndarray, list[str | None]]:
    """evcli's own reading of the lines: ts (µs), level index, template (masked message)."""
    from evcli.backends.logformats import LineReader, format_named
    from evcli.backends.logrows import Epochs, mask, split_instance

    reader, to_epoch = LineReader(format_named(name), context), Epochs(context.tz)
    times, levels, templates = [], [], []
    for line in lines:
        parsed = reader.read(line).parsed
        own = parsed is not None and parsed.timestamp is not None
        times.append(round(to_epoch(parsed.timestamp) * 1e6) if own else eng.NO_TIME)
        levels.append(-1 if parsed is None or parsed.level is None else LEVELS.index(parsed.level))
        templates.append(None if parsed is None else mask(split_instance(parsed.fields, parsed.message)[1]))
    return np.array(times, np.int64), np.array(levels), templates


def _agreement(found: eng.Columns, expected: tuple[np.ndarray, np.ndarray, list[str | None]]) -> dict[str, float]:
    times, levels, templates = expected
    count = len(levels)
    codes, distinct = found.words["template"]
    shown = [distinct[code] if code >= 0 else None for code in codes[:count]]
    return {
        "ts": r4(float(np.mean(np.abs(found.ts[:count] - times) <= 1000))),
        "level": r4(float(np.mean(found.level[:count] == levels))),
        "template": r4(sum(a == b for a, b in zip(shown, templates, strict=True)) / max(1, count)),
    }


def _parse_file(engine: str, path: Path, shape: eng.Shape, clock: datetime, tz: tzinfo) -> eng.Columns:
    return eng.parse(engine, eng.open_source(path), (shape,), clock, tz)


def _format_row(name: str, count: int, runs: int, tmp: Path, engines: list[str]) -> dict[str, Any]:
    """One format's row: LineReader's lines per CPU second, then each engine's, with its agreement."""
    from evcli.backends.logformats import LineReader, ParseContext, format_named

    lines = [LINES[name](index) for index in range(count)]
    path = tmp / f"{name}.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    context = ParseContext(_at(count) + timedelta(hours=1), ZoneInfo("Europe/Berlin"))
    reader = LineReader(format_named(name), context)
    cpu, _, _ = cpu_best(lambda: [reader.read(line) for line in lines], 1)
    row: dict[str, Any] = {"baseline_line_reader": round(count / cpu)}
    expected = _baseline(lines[:AGREEMENT_LINES], name, context)
    for engine in engines:
        cpu, wall, found = cpu_best(
            partial(_parse_file, engine, path, eng.SHAPES[name], context.clock, context.tz), runs
        )
        row[engine] = {"lines_per_cpu_s": round(count / cpu), "wall_s": r4(wall), "agrees": _agreement(found, expected)}
    path.unlink()
    return row


def bench_formats(options: argparse.Namespace, tmp: Path, engines: list[str], results: dict[str, Any]) -> None:
    count, runs = options.format_lines, 1 if options.quick else 2
    table: dict[str, Any] = {}
    for name in LINES:
        row = table[name] = _format_row(name, count, runs, tmp, engines)
        speeds = ", ".join(f"{engine} {row[engine]['lines_per_cpu_s']:,}/s" for engine in engines)
        log(f"formats: {name}: baseline {row['baseline_line_reader']:,}/s, {speeds}")
    results["formats"] = {"lines": count, "lines_per_cpu_s": table}
    for engine in engines:
        slowest = min(row[engine]["lines_per_cpu_s"] for row in table.values())
        agree = min(min(row[engine]["agrees"].values()) for row in table.values())
        results[f"formats_{engine}"] = {
            "slowest_lines_per_cpu_s": slowest,
            "slowest_format": min(table, key=lambda name: table[name][engine]["lines_per_cpu_s"]),
            "least_agreement": agree,
            "target_min": TARGETS["lines_per_cpu_s"],
            "ok": slowest >= TARGETS["lines_per_cpu_s"],
        }


# --- matching: lines holding a keyword, per engine ---------------------------------------------------------


def _rows_of(source: eng.Source, offsets: Any) -> np.ndarray:
    return np.unique(np.searchsorted(source.starts, np.asarray(offsets, np.int64), "right") - 1)


def _scan_re(source: eng.Source, keyword: str) -> np.ndarray:
    pattern = re.compile(re.escape(keyword.encode()), re.IGNORECASE)
    return _rows_of(source, [match.start() for match in pattern.finditer(source.data)])


def _scan_re2(source: eng.Source, keyword: str) -> np.ndarray:
    import re2

    pattern = re2.compile(b"(?i)" + re.escape(keyword.encode()))
    return _rows_of(source, [match.start() for match in pattern.finditer(source.data)])


def _scan_hyperscan(source: eng.Source, keyword: str) -> np.ndarray:
    import hyperscan

    database = hyperscan.Database()
    database.compile(expressions=[re.escape(keyword.encode())], ids=[0], flags=[hyperscan.HS_FLAG_CASELESS])
    ends: list[int] = []
    database.scan(
        bytes(source.data), match_event_handler=lambda _id, _start, end, _flags, _context: ends.append(end - 1)
    )
    return _rows_of(source, ends)


def _scan_pyarrow(source: eng.Source, keyword: str) -> np.ndarray:
    import pyarrow.compute as pc

    return pc.indices_nonzero(pc.match_substring(source.arrow(), keyword, ignore_case=True)).to_numpy()


def _scan_polars(source: eng.Source, keyword: str) -> np.ndarray:
    import polars as pl

    found = pl.from_arrow(source.arrow()).str.contains("(?i)" + re.escape(keyword))  # type: ignore[union-attr]
    return found.arg_true().to_numpy()


def _scan_duckdb(source: eng.Source, keyword: str) -> np.ndarray:
    import duckdb
    import pyarrow as pa

    pattern = "%" + re.sub(r"[\\%_]", r"\\\g<0>", keyword) + "%"
    with duckdb.connect() as connection:
        connection.register("lines", pa.table({"line": source.arrow(), "row": np.arange(source.lines)}))
        found = connection.execute("SELECT row FROM lines WHERE line ILIKE ? ESCAPE '\\'", [pattern]).fetchnumpy()
    return np.sort(found["row"])


SCANNERS = {
    "numpy_re": _scan_re,
    "re2": _scan_re2,
    "hyperscan": _scan_hyperscan,
    "pyarrow": _scan_pyarrow,
    "polars": _scan_polars,
    "duckdb": _scan_duckdb,
}


def keyword_rows(engine: str, source: eng.Source, keyword: str, overlay: dict[int, str], span: slice) -> np.ndarray:
    """Lines in `span` whose masked text holds `keyword` (ASCII case folded): the raw lines scanned by the
    engine, then each line masking changed (`overlay`) judged on its masked text instead."""
    first, last = int(source.starts[span.start]), int(source.starts[span.stop])
    part = eng.Source(memoryview(source.data)[first:last], source.starts[span.start : span.stop + 1] - first)
    rows = SCANNERS[engine](part, keyword) + span.start
    if not overlay:
        return rows
    changed = np.array(sorted(overlay), np.int64)
    masked = [row for row in changed if span.start <= row < span.stop and keyword.lower() in overlay[row].lower()]
    return np.union1d(np.setdiff1d(rows, changed), np.array(masked, np.int64))


# --- masking: where it runs and what it costs ---------------------------------------------------------------


def _regions_and_bytes(source: eng.Source) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Lines any engine must flag (a non-ASCII byte or a backslash: folding may change them) and the key-block
    regions (from a BEGIN … PRIVATE KEY line, MAX_KEY_BLOCK_LINES + 1 lines on), merged."""
    view = np.frombuffer(source.data, np.uint8)
    flagged = np.zeros(source.lines, bool)
    flagged[_rows_of(source, np.flatnonzero((view >= 128) | (view == 92)))] = True
    regions: list[tuple[int, int]] = []
    found = source.data.find(b"PRIVATE KEY")
    while found != -1:
        row = int(np.searchsorted(source.starts, found, "right") - 1)
        if _KEY_BEGIN.search(source.text(row)):
            last = min(source.lines, row + MAX_KEY_BLOCK_LINES + 2)
            joins = regions and row <= regions[-1][1]
            regions = [*regions[:-1], (regions[-1][0], last)] if joins else [*regions, (row, last)]
        found = source.data.find(b"PRIVATE KEY", int(source.starts[row + 1]))
    return flagged, regions


_BASE64_AS_A = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", b"a" * 64)


def _line_hits(text: bytes, needle: bytes) -> list[int]:
    """The offset of the first `needle` in each line of `text` that holds one."""
    hits, found = [], text.find(needle)
    while found != -1:
        hits.append(found)
        end = text.find(b"\n", found)
        found = -1 if end == -1 else text.find(needle, end)
    return hits


def _screen_numpy(source: eng.Source) -> np.ndarray:
    """bytes.find over the lowered buffer per keyword; the base64 run as evcli.core.redaction._base64_runs
    finds it (base64 characters read as `a`)."""
    data = bytes(source.data)
    lowered = data.lower()
    offsets = [hit for keyword in SCREEN_KEYWORDS for hit in _line_hits(lowered, keyword.encode())]
    offsets += _line_hits(data.translate(_BASE64_AS_A), b"a" * 40)
    flagged = np.zeros(source.lines, bool)
    flagged[_rows_of(source, offsets)] = True
    return flagged


def _screen_pyarrow(source: eng.Source) -> np.ndarray:
    import pyarrow.compute as pc

    keywords = "|".join(re.escape(keyword) for keyword in SCREEN_KEYWORDS)
    either = pc.or_(
        pc.match_substring_regex(source.arrow(), keywords, ignore_case=True),
        pc.match_substring_regex(source.arrow(), BASE64_RUN),
    )
    return either.to_numpy(zero_copy_only=False)


def _screen_polars(source: eng.Source) -> np.ndarray:
    import polars as pl

    lines = pl.from_arrow(source.arrow())
    either = lines.str.contains_any(SCREEN_KEYWORDS, ascii_case_insensitive=True) | lines.str.contains(BASE64_RUN)  # type: ignore[union-attr]
    return either.to_numpy()


def _screen_duckdb(source: eng.Source) -> np.ndarray:
    import duckdb
    import pyarrow as pa

    keywords = "(?i)" + "|".join(re.escape(keyword) for keyword in SCREEN_KEYWORDS)
    with duckdb.connect() as connection:
        connection.register("lines", pa.table({"line": source.arrow()}))
        found = connection.execute(
            "SELECT regexp_matches(line, ?) OR regexp_matches(line, ?) AS hit FROM lines", [keywords, BASE64_RUN]
        ).fetchnumpy()
    return np.asarray(found["hit"], bool)


def _screen_re2(source: eng.Source) -> np.ndarray:
    import re2

    keywords = (
        b"(?i)" + b"|".join(re.escape(keyword.encode()) for keyword in SCREEN_KEYWORDS) + b"|" + BASE64_RUN.encode()
    )
    flagged = np.zeros(source.lines, bool)
    flagged[_rows_of(source, [match.start() for match in re2.compile(keywords).finditer(source.data)])] = True
    return flagged


SCREENS = {
    "numpy_re": _screen_numpy,
    "pyarrow": _screen_pyarrow,
    "polars": _screen_polars,
    "duckdb": _screen_duckdb,
    "re2": _screen_re2,
}


def masked_overlay(engine: str, source: eng.Source, redactor: Redactor) -> tuple[dict[int, str], int]:
    """(masked text of every line masking changes, lines flagged): the engine screens the whole buffer for a
    rule keyword or a base64 run, numpy adds non-ASCII and backslash lines; only the flagged lines go
    through Redactor.mask_line (key-block regions through mask_lines, as mask_stream reads them)."""
    flagged, regions = _regions_and_bytes(source)
    flagged |= SCREENS[engine](source)
    overlay: dict[int, str] = {}
    for first, last in regions:
        flagged[first:last] = False
        for row, text in enumerate(redactor.mask_lines([source.text(row) for row in range(first, last)]), first):
            if text != source.text(row):
                overlay[row] = text
    for row in np.flatnonzero(flagged).tolist():
        raw = source.text(row)
        masked = redactor.mask_line(raw)
        if masked != raw:
            overlay[row] = masked
    return overlay, int(flagged.sum())


# --- build, queries and masking on the mixed log ---------------------------------------------------------------


def build_store(engine: str, path: Path, directory: Path, redactor: Redactor, phases: dict[str, float]) -> int:
    """A log's index as the engine would build it on first use: every line parsed (columnar), the masking
    screen and overlay, the lines masking changed parsed again from their masked text (so no stored word
    or template comes from an unmasked line), the store written. Returns the lines the screen flagged."""
    shutil.rmtree(directory, ignore_errors=True)
    began = time.perf_counter()
    source = eng.open_source(path)
    found = eng.parse(engine, source, eng.MIXED_SHAPES, MIXED_CLOCK, MIXED_TZ)
    parsed = time.perf_counter()
    overlay, flagged = masked_overlay(engine, source, redactor)
    if overlay:
        rows = np.array(sorted(overlay), np.int64)
        texts = [overlay[int(row)].encode() + b"\n" for row in rows]
        starts = np.concatenate((np.zeros(1, np.int64), np.cumsum([len(text) for text in texts])))
        masked = eng.parse(engine, eng.Source(b"".join(texts), starts), eng.MIXED_SHAPES, MIXED_CLOCK, MIXED_TZ)
        masked.ts = np.where(masked.ts == eng.NO_TIME, found.ts[rows], masked.ts)
        eng.compact(eng.scatter(found, masked, rows))  # the raw lines' words and templates are dropped
    screened = time.perf_counter()
    STORES[engine](directory).write(found, source.starts, overlay)
    phases.update(parse_s=r4(parsed - began), mask_s=r4(screened - parsed), store_s=r4(time.perf_counter() - screened))
    return flagged


def bench_build(options: argparse.Namespace, tmp: Path, engines: list[str], results: dict[str, Any]) -> None:
    path = tmp / "mixed.log"
    log(f"build: writing {options.log_lines:,} mixed-format lines")
    write_mixed_log(path, options.log_lines)
    size = path.stat().st_size
    redactor = Redactor.from_env()
    target = TARGETS["first_use_s_per_million"] * options.log_lines / 1e6
    for engine in engines:
        directory = tmp / f"store-{engine}"
        phases: dict[str, float] = {}
        cpu, wall, flagged = cpu_best(partial(build_store, engine, path, directory, redactor, phases), 1)
        stored = sum(file.stat().st_size for file in directory.iterdir())
        results[f"build_{engine}"] = {
            "seconds": r4(wall),
            "cpu_seconds": r4(cpu),
            "lines_per_cpu_s": round(options.log_lines / cpu),
            "phases_wall": phases,
            "masking_flagged_lines": flagged,
            "store_bytes": stored,
            "store_ratio": r4(stored / size),
            "target_max_s": round(target, 2),
            "target_store_ratio": TARGETS["store_ratio"],
            "ok": wall <= target and stored / size <= TARGETS["store_ratio"],
        }
        log(f"build: {engine} {wall:.2f}s ({cpu:.2f}s CPU), store {stored / size:.3f} of the log")
    results["build_log"] = {"lines": options.log_lines, "bytes": size, **_text_zstd(path)}


def _text_zstd(path: Path) -> dict[str, Any]:
    """What keeping the (masked) text itself would add: the log zstd-compressed (level 3)."""
    try:
        import zstandard
    except ImportError:
        return {"text_zstd_ratio": None}
    data = path.read_bytes()
    packed = zstandard.ZstdCompressor(level=3).compress(data)
    began = time.perf_counter()
    zstandard.ZstdDecompressor().decompress(packed)
    return {"text_zstd_ratio": r4(len(packed) / len(data)), "text_unzstd_s": r4(time.perf_counter() - began)}


def _grep(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=False).stdout


def _range_expected(path: Path, rows: list[int], low: int, high: int) -> int:
    """How many of grep's lines `rows` lie in [low, high] (µs) as evcli's LineReader reads their time (every
    format tried; a line without a time of its own: the nearest line above with one)."""
    from evcli.backends.logformats import LineReader, ParseContext
    from evcli.backends.logrows import Epochs

    reader, to_epoch = LineReader(None, ParseContext(MIXED_CLOCK, MIXED_TZ)), Epochs(MIXED_TZ)
    with path.open(encoding="utf-8") as handle:
        lines = handle.read().split("\n")
    inside = 0
    for row in rows:
        stamp = None
        while row >= 0 and stamp is None:
            parsed = reader.read(lines[row]).parsed
            stamp = None if parsed is None or parsed.timestamp is None else round(to_epoch(parsed.timestamp) * 1e6)
            row -= 1
        inside += stamp is not None and low <= stamp <= high
    return inside


def bench_queries(options: argparse.Namespace, tmp: Path, engines: list[str], results: dict[str, Any]) -> None:
    path, runs = tmp / "mixed.log", 3 if options.quick else 5
    low = (MIXED_START + timedelta(hours=10) - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    high = low + 30 * 60 * 1_000_000
    grep_rows = [
        int(line.split(":", 1)[0]) - 1
        for line in _grep(["grep", "-n", "-i", "-F", KEYWORD, str(path)]).split("\n")
        if line
    ]
    address_pipe = ["bash", "-c", f"grep -oE '{ADDRESS_GREP}' '{path}' | sort | uniq -c"]
    grep = {
        "keyword": median_wall(lambda: int(_grep(["grep", "-c", "-i", "-F", KEYWORD, str(path)])), runs),
        "level": median_wall(lambda: int(_grep(["grep", "-c", "-E", LEVEL_GREP, str(path)])), runs),
        "by_address": median_wall(
            lambda: {w: int(n) for n, w in (row.split() for row in _grep(address_pipe).splitlines())}, runs
        ),
    }
    grep["keyword_range"] = (grep["keyword"][0], _range_expected(path, grep_rows, low, high))
    results["queries_grep"] = {
        "keyword_s": r4(grep["keyword"][0]),
        "level_s": r4(grep["level"][0]),
        "by_address_s": r4(grep["by_address"][0]),
        "counts": {"keyword": grep["keyword"][1], "keyword_range": grep["keyword_range"][1], "level": grep["level"][1]},
        "range": "2026-07-08 10:00:00 to 10:30:00 UTC, both ends included",
        "commands": {
            "keyword": f"grep -c -i -F {KEYWORD}",
            "level": f"grep -c -E '{LEVEL_GREP}'",
            "by_address": f"grep -oE '{ADDRESS_GREP}' | sort | uniq -c",
            "keyword_range": f"grep -n -i -F {KEYWORD}, kept when LineReader reads the line's time in the range",
        },
    }
    for engine in engines:
        home = engine if engine in STORES else next(name for name in STORES if (tmp / f"store-{name}").exists())
        store = STORES[home](tmp / f"store-{home}")  # re2, hyperscan: match only, over a parser's columns
        queries = _queries(engine, store, path, low, high)
        row: dict[str, Any] = {}
        for name, call in queries.items():
            seconds, found = median_wall(call, runs)
            grep_s, expected = grep[name]
            count = len(found) if isinstance(found, np.ndarray) else found
            ratio = seconds / grep_s
            row[name] = {
                "seconds": r4(seconds),
                "ratio_to_grep": round(ratio, 2),
                "counts_equal": count == expected,
                "target_ratio": QUERY_TARGETS[name],
                "ok": ratio <= QUERY_TARGETS[name] and count == expected,
            }
            if name == "keyword":
                row[name]["line_numbers_equal"] = [int(r) for r in found] == grep_rows
                row[name]["ok"] &= row[name]["line_numbers_equal"]
        results[f"queries_{engine}"] = {**row, "ok": all(value["ok"] for value in row.values())}
        log(
            f"queries: {engine}: "
            + ", ".join(f"{name} {value['seconds']:.3f}s ({value['ratio_to_grep']}x)" for name, value in row.items())
        )


def _queries(engine: str, store: NumpyStore, path: Path, low: int, high: int) -> dict[str, Callable[[], Any]]:
    """The warm queries of one engine, each opening its store as a fresh query would."""

    def keyword() -> np.ndarray:
        source = eng.open_source(path, np.asarray(store.column("starts")))
        return keyword_rows(engine, source, KEYWORD, store.overlay(), slice(0, source.lines))

    def keyword_range() -> np.ndarray:
        inside = np.asarray(store.column("ts"))
        inside = (inside >= low) & (inside <= high)
        rows = np.flatnonzero(inside)
        source = eng.open_source(path, np.asarray(store.column("starts")))
        found = keyword_rows(engine, source, KEYWORD, store.overlay(), slice(int(rows[0]), int(rows[-1]) + 1))
        return found[inside[found]]

    queries: dict[str, Callable[[], Any]] = {"keyword": keyword, "keyword_range": keyword_range}
    if engine in STORES:  # re2 and hyperscan match only: their columns are numpy_re's
        queries["level"] = lambda: store.level_count(LEVELS.index(LEVEL))
        queries["by_address"] = store.address_counts
    return queries


def _overlay_of_file(engine: str, path: Path, redactor: Redactor) -> tuple[dict[int, str], int]:
    return masked_overlay(engine, eng.open_source(path), redactor)


def bench_masking(options: argparse.Namespace, tmp: Path, engines: list[str], results: dict[str, Any]) -> None:
    path = tmp / "secrets.log"
    write_log(path, options.mask_lines, "bench", seed=21)
    source = eng.open_source(path)
    texts = [source.text(row) for row in range(source.lines)]
    redactor = Redactor.from_env()
    cpu, _, expected = cpu_best(lambda: list(redactor.mask_stream(texts)), 1)
    changed = sum(a != b for a, b in zip(texts, expected, strict=True))
    secret = re.search(r"Bearer ([0-9a-f]{24})", "\n".join(texts[:50_000]))
    token = secret.group(1) if secret else ""
    results["masking_current"] = {
        "us_per_line": round(cpu / source.lines * 1e6, 3),
        "lines": source.lines,
        "changed_lines": changed,
        "method": "Redactor.mask_stream over the decoded lines (CPU; decoding not counted)",
        "secret_grep_count": int(_grep(["grep", "-c", "-F", token, str(path)]) or 0),
    }
    mixed = tmp / "mixed.log"  # the build section's log: no secret, few lines a rule keyword flags
    if mixed.exists():
        plain = eng.open_source(mixed)
        lines = [plain.text(row) for row in range(plain.lines)]
        cpu, _, _ = cpu_best(lambda: list(redactor.mask_stream(lines)), 1)
        results["masking_current"]["mixed_log_us_per_line"] = round(cpu / plain.lines * 1e6, 3)
        del lines
    for engine in engines:
        cpu, wall, (overlay, flagged) = cpu_best(partial(_overlay_of_file, engine, path, redactor), 1)
        identical = sum(overlay.get(row, texts[row]) == expected[row] for row in range(source.lines))
        found = keyword_rows(engine, source, token, overlay, slice(0, source.lines)) if engine in SCANNERS else None
        results[f"masking_{engine}"] = {
            "us_per_line": round(cpu / source.lines * 1e6, 3),
            "wall_s": r4(wall),
            "flagged_lines": flagged,
            "overlay_lines": len(overlay),
            "identical_lines": identical,
            "secret_found_lines": None if found is None else len(found),
            "ok": identical == source.lines and (found is None or len(found) == 0),
        }
        log(
            f"masking: {engine}: {cpu / source.lines * 1e6:.2f} us/line, {flagged} flagged, identical {identical == source.lines}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small logs, fewer repetitions")
    parser.add_argument("--format-lines", type=int, help="lines per format (200,000; --quick 20,000)")
    parser.add_argument("--log-lines", type=int, help="lines of the mixed log (1,000,000; --quick 100,000)")
    parser.add_argument("--mask-lines", type=int, help="lines of the log with secrets (200,000; --quick 50,000)")
    parser.add_argument("--sections", default="formats,build,queries,masking", help="which sections (comma list)")
    parser.add_argument("--engines", default=",".join(eng.ENGINES), help="which engines (comma list)")
    options = parser.parse_args()
    options.format_lines = options.format_lines or (20_000 if options.quick else 200_000)
    options.log_lines = options.log_lines or (100_000 if options.quick else 1_000_000)
    options.mask_lines = options.mask_lines or (50_000 if options.quick else 200_000)
    wanted = set(options.engines.split(","))
    present = {name: ok and name in wanted for name, ok in eng.available().items()}
    parsers = [name for name in eng.PARSERS if present[name]]
    scanners = [name for name in eng.ENGINES if present[name]]
    results: dict[str, Any] = {
        "meta": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average_1m": round(os.getloadavg()[0], 2),
            "mode": "quick" if options.quick else "full",
            "engines": _versions(scanners),
            "not_importable": sorted(name for name, ok in eng.available().items() if not ok),
            "left_out": sorted(name for name in eng.ENGINES if name not in wanted),
        }
    }
    errors: dict[str, str] = {}
    tmp = Path(tempfile.mkdtemp(prefix="evcli-bench-engines-"))
    try:
        sections = (
            ("formats", lambda: bench_formats(options, tmp, parsers, results)),
            ("build", lambda: bench_build(options, tmp, parsers, results)),
            ("queries", lambda: bench_queries(options, tmp, scanners, results)),
            ("masking", lambda: bench_masking(options, tmp, [e for e in scanners if e in SCREENS], results)),
        )
        run_sections([(name, run) for name, run in sections if name in options.sections.split(",")], errors)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish(results, {}, errors, T0)
    return 0


def _versions(engines: list[str]) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for engine in engines:
        package = {"numpy_re": "numpy", "re2": "google-re2"}.get(engine, engine)
        try:
            found[engine] = version(package)
        except PackageNotFoundError:
            found[engine] = "?"
    return found


if __name__ == "__main__":
    sys.exit(main())
