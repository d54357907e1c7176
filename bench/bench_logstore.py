#!/usr/bin/env python
"""The columnar log store (evcli/backends/logstore.py, issue 27): its size and its warm queries against grep
on bench_tools.write_mixed_log's log, measured in the same run.

    python bench/bench_logstore.py                    # 5,000,000 lines (the issue's warm size)
    python bench/bench_logstore.py --lines 200000     # smaller
    python bench/bench_logstore.py --log /tmp/mixed.log --compression lz4

Prints ONE JSON object to stdout; progress goes to stderr; the temporary directory is removed (a --log given
is kept). The table is built with numpy from what write_mixed_log writes (`synthetic_table`: line spans,
level as the line writes it, an access log's 5xx as ERROR, template and instance per kind of line, records
joining stack frames), not with the per-line reader (minutes for 5M lines): the queries' cost depends on the
columns' shape, and their equality with the SQLite index is tests/backends/test_log_store.py's. Each query
opens the store as a tool call would (`open_store`, then the query); the median of --runs is compared with
grep's on the same file, wall time (the target) and CPU time (this process's threads against grep's and its
pipeline's: what a busy machine shares out):

* keyword: search("ord-12") vs `grep -c -i -F ord-12` (<= 2x), counts equal;
* keyword_range: the same within 30 minutes (<= 2x grep -c -i -F);
* level: search(level ERROR, strict) vs `grep -c -E` of the ERROR lines (<= 2x; frames count with their event);
* by_instance: instance_counts over the whole file vs `grep -oE <address> | sort | uniq -c` (<= 3x).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from _common import T0, finish, log, r4, run_sections
from bench_engines import ADDRESS_GREP, KEYWORD, LEVEL_GREP
from bench_tools import MIXED_START, write_mixed_log

from evcli.backends import logstore, logstore_write
from evcli.backends.logsearch import Filter
from evcli.backends.logtable import LogTable

TARGETS = {"keyword": 2.0, "keyword_range": 2.0, "level": 2.0, "by_instance": 3.0, "store_ratio": 0.6}
ERROR = 4
# what each kind of mixed-log line is, by its first bytes: (template, instance prefix, level source)
KINDS = ("app", "syslog", "access", "cache", "frame")


def synthetic_table(path: Path) -> LogTable:
    """The columns of write_mixed_log's file, read with numpy and polars (see the module docstring)."""
    import polars as pl

    data = np.fromfile(path, np.uint8)
    ends = np.flatnonzero(data == 10)
    starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.int64)
    lines = pl.Series(path.read_bytes().split(b"\n")[: len(starts)]).cast(pl.String)
    kind = np.select(
        [
            lines.str.contains(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.").to_numpy(),
            lines.str.contains(r"^[A-Z][a-z]{2} ").to_numpy(),
            lines.str.contains(r"^\d+\.\d+\.").to_numpy(),
            lines.str.starts_with("\t").to_numpy(),
        ],
        [0, 1, 2, 4],
        3,
    )
    written = lines.str.extract(r"^\S+ \S+ (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ").replace_strict(
        ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"], [0, 1, 2, 3, 4, 5], default=-1
    )
    status = lines.str.extract(r'" (\d)\d\d \d+$').cast(pl.Int8, strict=False).fill_null(0).to_numpy()
    level = np.where(kind == 2, np.select([status == 5, status == 4], [ERROR, 3], 2), written.to_numpy())
    rows = np.arange(len(starts))
    lineno = rows + 1
    timed = kind != 4
    last_timed = np.maximum.accumulate(np.where(timed, rows, 0))
    step = 86400 / len(starts)
    ts = MIXED_START.timestamp() + last_timed * step
    level = np.where(timed, level, level[last_timed]).astype(np.int8)
    instance = np.where(kind == 0, rows % 7, np.where(kind == 1, 7 + rows % 3, -1))
    return LogTable(
        lineno=lineno.astype(np.int64),
        start=starts,
        end=ends.astype(np.int64),
        ts=ts,
        level=level,
        derived=kind == 2,
        template=kind.astype(np.int32),
        instance=np.where(timed, instance, instance[last_timed]).astype(np.int32),
        record=lineno[last_timed].astype(np.int64),
        templates=[f"<{name} line template>" for name in KINDS],
        instances=[f"app-{n}" for n in range(7)] + [f"node-{n}" for n in range(3)],
        lines=len(starts),
        size=len(data),
    )


def timed(call: Any, runs: int) -> tuple[float, float, Any]:
    """(median wall seconds, median CPU seconds of this process's threads and its children, result)."""
    walls, cpus, result = [], [], None
    for _ in range(runs):
        began, cpu = time.perf_counter(), _cpu()
        result = call()
        walls.append(time.perf_counter() - began)
        cpus.append(_cpu() - cpu)
    return statistics.median(walls), statistics.median(cpus), result


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _grep(command: str) -> str:
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False).stdout


def bench_store(options: argparse.Namespace, tmp: Path, results: dict[str, Any]) -> None:
    log(f"table: reading {options.log} with numpy")
    began = time.perf_counter()
    table = synthetic_table(options.log)
    log(f"table: {len(table.lineno):,} rows in {time.perf_counter() - began:.1f}s")
    for compression in ("zstd", "lz4"):
        logstore_write._COMPRESSION = compression
        target = tmp / f"{compression}.parquet"
        seconds, _, _ = timed(lambda target=target: logstore_write.write_store([table], target, lambda *_: {}), 1)
        size = target.stat().st_size
        ratio = size / table.size
        results[f"store_{compression}"] = {
            "write_s": r4(seconds),
            "bytes": size,
            "ratio": r4(ratio),
            "target_ratio": TARGETS["store_ratio"],
            "ok": ratio <= TARGETS["store_ratio"],
        }
        log(f"store: {compression} {size / 1e6:.1f} MB ({ratio:.3f} of the log), written in {seconds:.2f}s")
    logstore_write._COMPRESSION = options.compression


def bench_queries(options: argparse.Namespace, tmp: Path, results: dict[str, Any]) -> None:
    path, store, runs = options.log, tmp / f"{options.compression}.parquet", options.runs
    low = (MIXED_START + timedelta(hours=10)).timestamp()
    wanted = {
        "keyword": Filter(None, None, (KEYWORD,), None, whole=True),
        "keyword_range": Filter(low, low + 1800, (KEYWORD,), None),
        "level": Filter(None, None, (), ERROR, level_strict=True, whole=True),
    }
    grep = {
        "keyword": timed(lambda: int(_grep(f"grep -c -i -F {KEYWORD} '{path}'")), runs),
        "level": timed(lambda: int(_grep(f"grep -c -E '{LEVEL_GREP}' '{path}'")), runs),
        "by_instance": timed(lambda: _grep(f"grep -oE '{ADDRESS_GREP}' '{path}' | sort | uniq -c"), runs),
    }
    grep["keyword_range"] = grep["keyword"]
    results["grep"] = {name: {"seconds": r4(wall), "cpu_s": r4(cpu)} for name, (wall, cpu, _) in grep.items()}

    def query(name: str) -> Any:
        with logstore.open_store(store, path, path.parent) as stored:
            if name == "by_instance":
                return logstore.instance_counts(stored, Filter(None, None, (), None, whole=True))
            return logstore.search(stored, wanted[name], 50).total

    for name in ("keyword", "keyword_range", "level", "by_instance"):
        seconds, cpu, found = timed(lambda name=name: query(name), runs)
        grep_s, grep_cpu, expected = grep[name]
        ratio = seconds / grep_s
        row: dict[str, Any] = {"seconds": r4(seconds), "grep_s": r4(grep_s), "ratio": round(ratio, 2)}
        row |= {"cpu_s": r4(cpu), "grep_cpu_s": r4(grep_cpu), "cpu_ratio": round(cpu / grep_cpu, 2)}
        row["target"] = TARGETS[name]
        if name == "keyword":
            row["counts_equal"] = found == expected
        elif name == "level":  # evcli gives a stack frame its event's level; grep counts the event's line only
            row["counts"] = {"store": found, "grep": expected}
        row["ok"] = ratio <= TARGETS[name] and row.get("counts_equal", True)
        results[f"query_{name}"] = row
        log(f"query: {name} {seconds:.3f}s vs grep {grep_s:.3f}s ({ratio:.2f}x; CPU {cpu / grep_cpu:.2f}x)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=5_000_000, help="lines of the mixed log written")
    parser.add_argument("--log", type=Path, help="an existing write_mixed_log file (kept)")
    parser.add_argument("--runs", type=int, default=5, help="runs per query (median)")
    parser.add_argument("--compression", default="zstd", choices=("zstd", "lz4"), help="the store queried")
    options = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="evcli-bench-logstore-"))
    results: dict[str, Any] = {
        "meta": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average_1m": round(os.getloadavg()[0], 2),
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    }
    errors: dict[str, str] = {}
    try:
        if options.log is None:
            options.log = tmp / "mixed.log"
            log(f"writing {options.lines:,} mixed-format lines")
            write_mixed_log(options.log, options.lines)
        results["meta"] |= {"log_bytes": options.log.stat().st_size, "compression": options.compression}
        sections = (
            ("store", lambda: bench_store(options, tmp, results)),
            ("queries", lambda: bench_queries(options, tmp, results)),
        )
        run_sections(list(sections), errors)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish(results, {}, errors, T0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
