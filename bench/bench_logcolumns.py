#!/usr/bin/env python
"""The vectorised log reader (evcli.backends.logcolumns.read_table) against the per-line reference
(evcli.backends.logtable.reference_table), issue 27.

    python bench/bench_logcolumns.py                 # 200k lines per format, a 1M-line mixed log
    python bench/bench_logcolumns.py --quick         # 20k / 100k lines
    python bench/bench_logcolumns.py --only json logfmt --runs 3   # those formats, best of 3 runs
    python bench/bench_logcolumns.py --unicode --only iso8601        # also with non-ASCII messages

Prints ONE JSON object to stdout; progress goes to stderr; the temporary directory is removed.
* formats: per format of bench_logformats.LINES, lines per CPU second of read_table (target >= 300k)
  and of reference_table, and whether the two tables' rows are equal;
* unicode (with --unicode): the same per format, 7 lines in 10 writing a word of their message in
  Chinese, Japanese, Korean, Cyrillic, Greek or accented Latin (UNICODE_WORDS), and its speed as a share
  of the ASCII file's (`of_ascii`; target >= 0.5);
* mixed / secrets: wall and CPU seconds of both on bench_tools.write_mixed_log's log (target <= 3 s for
  1M lines, masking screen included) and write_log's secret-bearing log, rows checked equal.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import bench_logformats
import bench_tools
from _common import log, r2, to_json

from evcli.backends.logcolumns import read_table
from evcli.backends.logformats import ParseContext
from evcli.backends.logtable import LogTable, reference_table

# per format, the word of its bench line's message written in another script in the --unicode files
UNICODE_WORDS = {
    "iso8601": "served",
    "python": "query",
    "java": "placed",
    "openstack": "ok",
    "rfc3164": "publickey",
    "rfc5424": "message",
    "apache_error": "Invalid",
    "nginx_error": "upstream",
    "access_log": "curl",
    "glog": "sync",
    "logfmt": "query",
    "json": "query",
    "container_json": "Db",
    "postgres": "duration",
    "cri": "request",
    "epoch": "tick",
    "hdfs": "terminating",
    "spark": "locally",
    "logcat": "printFreezingDisplayLogs",
    "healthapp": "onStandStepChanged",
    "cfdr": "corrected",
    "hpc": "Change",
    "windows_cbs": "initialized",
    "proxifier": "sent",
}
WORDS_ABROAD = (
    "请求已处理",
    "リクエスト完了",
    "요청 완료",
    "запрос обработан",
    "αίτημα εξυπηρετήθηκε",
    "requête traitée",
)


def unicode_line(name: str, index: int) -> str:
    """The bench line of format `name`, 7 in 10 with a word of its message in another script."""
    line = bench_logformats.LINES[name](index)
    if index % 10 >= 7:
        return line
    return line.replace(UNICODE_WORDS[name], WORDS_ABROAD[index % len(WORDS_ABROAD)], 1)


def timed(read: Any, path: Path, context: ParseContext) -> tuple[LogTable, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    table = read(path, path.parent, context)
    return table, time.perf_counter() - wall, time.process_time() - cpu


def compared(path: Path, context: ParseContext, lines: int, runs: int = 1) -> dict[str, Any]:
    found, wall, cpu = min((timed(read_table, path, context) for _ in range(runs)), key=lambda run: run[2])
    expected, reference_wall, reference_cpu = timed(reference_table, path, context)
    return {
        "lines": lines,
        "format": found.format,
        "wall_s": r2(wall),
        "cpu_s": r2(cpu),
        "lines_per_cpu_s": int(lines / cpu),
        "reference_wall_s": r2(reference_wall),
        "reference_lines_per_cpu_s": int(lines / reference_cpu),
        "equal": found.rows() == expected.rows() and found.text == expected.text,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="*", help="these formats only (no mixed and secrets logs)")
    parser.add_argument("--runs", type=int, default=1, help="read_table runs per file, the best CPU time kept")
    parser.add_argument("--unicode", action="store_true", help="each format with non-ASCII messages too")
    arguments = parser.parse_args()
    quick = arguments.quick
    per_format, mixed = (20_000, 100_000) if quick else (200_000, 1_000_000)
    directory = Path(tempfile.mkdtemp(prefix="bench-logcolumns-"))
    results: dict[str, Any] = {"formats": {}}
    try:
        for name, make in bench_logformats.LINES.items():
            if arguments.only and name not in arguments.only:
                continue
            log(f"format {name}")
            path = directory / f"{name}.log"
            path.write_text("".join(make(index) + "\n" for index in range(per_format)))
            context = ParseContext(bench_logformats._at(per_format) + timedelta(hours=1), ZoneInfo("Europe/Berlin"))
            results["formats"][name] = compared(path, context, per_format, arguments.runs)
            if arguments.unicode:
                log(f"format {name}, non-ASCII messages")
                path.write_text("".join(unicode_line(name, index) + "\n" for index in range(per_format)))
                found = compared(path, context, per_format, arguments.runs)
                found["of_ascii"] = r2(found["lines_per_cpu_s"] / results["formats"][name]["lines_per_cpu_s"])
                results.setdefault("unicode", {})[name] = found
        if arguments.only:
            print(to_json(results, indent=1))
            return
        context = ParseContext(datetime(2026, 7, 9, tzinfo=UTC), ZoneInfo("Europe/Berlin"))
        log("mixed")
        bench_tools.write_mixed_log(directory / "mixed.log", mixed)
        results["mixed"] = compared(directory / "mixed.log", context, mixed)
        log("secrets")
        bench_tools.write_log(directory / "secrets.log", mixed, "checkout", 21)
        results["secrets"] = compared(directory / "secrets.log", context, mixed)
    finally:
        shutil.rmtree(directory)
    print(to_json(results, indent=1))


if __name__ == "__main__":
    main()
