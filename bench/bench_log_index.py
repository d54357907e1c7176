"""The persistent log index on a 1,000,000-line mixed-format log (issue 9 speed targets).

python bench/bench_log_index.py [--lines N]

One JSON object on stdout, progress on stderr. Measures, in process, with a fresh EVCLI_HOME:
  - `index_first_use_s`: the first query (which builds the index), target ≤ 15 s;
  - `query_since_until_s`: median of 5 queries with since/until + stats + patterns after that, ≤ 0.3 s;
  - `query_whole_s`: median of 5 keyword-less, level=ERROR queries over the whole snapshot (reported);
  - `build_peak_bytes_200k` / `_1m`: tracemalloc peak of building the index of 200k and of N lines
    (memory must not grow with the file: ratio ≤ 1.5);
  - `grep_c_s` and the ratios of the timed query to `grep -c` on the same file.
The file mixes an ISO app log with levels, syslog lines, access-log lines, lines without a level
and Java stack traces, in time order.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

START = datetime(2026, 7, 8, 0, 0, tzinfo=UTC)
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def write_mixed_log(path: Path, lines: int, seed: int = 9) -> None:
    """`lines` lines over one day: 55% ISO app log with levels, 15% syslog, 15% access log,
    10% ISO lines without a level, 5% stack-trace continuation lines."""
    rng = random.Random(seed)
    step = 86400 / lines
    with path.open("w") as handle:
        for index in range(lines):
            moment = START + timedelta(seconds=index * step)
            kind = rng.random()
            if kind < 0.55:
                level = rng.choice(("INFO", "INFO", "INFO", "WARN", "ERROR", "DEBUG"))
                handle.write(
                    f"{moment:%Y-%m-%d %H:%M:%S}.{moment.microsecond // 1000:03d} {level} [app-{index % 7}] "
                    f"c.e.Service - order ORD-{rng.randrange(10**6)} took {rng.randrange(900)}ms\n"
                )
            elif kind < 0.70:
                handle.write(
                    f"{MONTHS[moment.month - 1]} {moment.day:2d} {moment:%H:%M:%S} node-{index % 3} "
                    f"kernel[{rng.randrange(9999)}]: eth0 link check ok\n"
                )
            elif kind < 0.85:
                status = rng.choice((200, 200, 200, 401, 404, 500))
                handle.write(
                    f"10.20.{index % 250}.{rng.randrange(250)} - - [{moment:%d/%b/%Y:%H:%M:%S} +0000] "
                    f'"GET /api/v1/items/{rng.randrange(9999)} HTTP/1.1" {status} {rng.randrange(5000)}\n'
                )
            elif kind < 0.95:
                handle.write(f"{moment:%Y-%m-%d %H:%M:%S} cache refresh done in {rng.randrange(90)}ms\n")
            else:
                handle.write(f"\tat com.example.Pool.get(Pool.java:{rng.randrange(400)})\n")


def snapshot(root: Path, lines: int) -> Path:
    (root / "logs").mkdir(parents=True)
    (root / "env.toml").write_text('now = "2026-07-09T00:00:00Z"\n')
    write_mixed_log(root / "logs" / "mixed.log", lines)
    return root


def run_query(env: Path, keywords: tuple[str, ...] = (), level: str | None = None, **kwargs):
    from evcli.backends.base import LogQuery
    from evcli.backends.snapshot import SnapshotBackend

    return SnapshotBackend(env).query_logs(LogQuery("mixed", keywords, level, None, 50, **kwargs))


def median_time(call, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def build_peak(env: Path) -> tuple[int, float]:
    tracemalloc.start()
    started = time.perf_counter()
    try:
        run_query(env)
        return tracemalloc.get_traced_memory()[1], time.perf_counter() - started
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["EVCLI_HOME"] = str(Path(tmp) / "home")
        from evcli.timerange import TimeRange

        log(f"writing {args.lines:,} + 200,000 lines")
        big = snapshot(Path(tmp) / "big", args.lines)
        small = snapshot(Path(tmp) / "small", 200_000)
        started = time.perf_counter()
        first = run_query(big)
        first_use = time.perf_counter() - started
        log(f"first use {first_use:.1f}s ({first.total:,} lines)")
        named = TimeRange(START + timedelta(hours=10), START + timedelta(hours=10, minutes=30))
        ranged = median_time(lambda: run_query(big, range=named, level="ERROR"))
        keyword = median_time(lambda: run_query(big, range=named))
        whole = median_time(lambda: run_query(big, level="ERROR"))
        whole_keyword = median_time(lambda: run_query(big, keywords=("ord-12",)))
        grep = median_time(
            lambda: subprocess.run(["grep", "-c", "ERROR", str(big / "logs" / "mixed.log")], capture_output=True)
        )
        peak_small, _ = build_peak(small)
        os.environ["EVCLI_HOME"] = str(Path(tmp) / "home2")
        peak_big, _ = build_peak(big)
        result = {
            "lines": args.lines,
            "file_bytes": (big / "logs" / "mixed.log").stat().st_size,
            "index_first_use_s": round(first_use, 2),
            "index_first_use_ok": first_use <= 15,
            "query_since_until_level_s": round(ranged, 3),
            "query_since_until_s": round(keyword, 3),
            "query_since_until_ok": max(ranged, keyword) <= 0.3,
            "query_whole_level_error_s": round(whole, 3),
            "query_whole_keyword_s": round(whole_keyword, 3),
            "grep_c_s": round(grep, 3),
            "ratio_since_until_to_grep": round(ranged / grep, 2),
            "ratio_whole_keyword_to_grep": round(whole_keyword / grep, 2),
            "build_peak_bytes_200k": peak_small,
            "build_peak_bytes_big": peak_big,
            "memory_ratio": round(peak_big / peak_small, 2),
            "memory_ok": peak_big <= 1.5 * peak_small,
        }
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
