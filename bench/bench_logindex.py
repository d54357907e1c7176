#!/usr/bin/env python
"""The log index's targets of issue 27, measured through evcli's own query path against grep on the same files.

    python bench/bench_logindex.py                  # 1M and 5M lines: first use, index size, warm queries, ask
    python bench/bench_logindex.py --quick          # 200k and 1M lines, fewer repetitions
    python bench/bench_logindex.py --lines 1000000  # one size (warm queries and ask on it)

Prints ONE JSON object to stdout; progress goes to stderr; the temporary directory is removed. The logs are
bench_tools.write_mixed_log's (an app log with levels, RFC 3164 syslog, an access log, timed lines without a
level, stack-trace lines; one day in time order). Sections:

* first_use_<N>: the first `run_tool("query_logs", ...)` on a fresh snapshot of N lines in a fresh process,
  at the default tool timeout (the call builds the index): wall and CPU seconds (the process and its
  children), peak RSS, whether the call succeeded; targets 1M <= 3 s, 5M <= 15 s, every call succeeds. The
  index files' size against the log's (<= 0.6). `memory_growth`: peak RSS of the biggest build against the
  smallest's (reported against 1.5x: flat memory would be 1x).
* warm_<N> (the biggest N): `SnapshotBackend.query_logs` with the index built, median of runs: keyword, keyword
  + a 30-minute range, level ERROR (strict; its records: a stack trace's lines are of its ERROR line's record,
  grep counts the ERROR line), count by address, against `grep -c -i -F`, the same grep with the
  lines' times read as evcli reads them, `grep -c -E` of the lines at ERROR, and `grep -oE IPv4 | sort | uniq -c`
  (targets 2x, 2x, 2x, 3x the grep time); every count checked equal to grep's.
* ask_<N>: `evcli ask` as a whole process on the snapshot with the index built, median (<= 1.5 s; exit 0 or 3).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from _common import T0, finish, log, r4, run_sections
from bench_engines import ADDRESS_GREP, KEYWORD, LEVEL_GREP, QUERY_TARGETS, _grep, _range_expected, median_wall
from bench_tools import ASK_QUESTION, MIXED_START, mixed_snapshot

TARGETS = {"first_use_s_per_million": 3.0, "index_ratio": 0.6, "memory_growth": 1.5, "ask_s": 1.5}
_FIRST_USE = """
import json, resource, sys, time
from pathlib import Path
started = time.perf_counter()
from evcli.tools import runner
from evcli.tools.context import build_environment
invocation = runner.run_tool("query_logs", {"service": "mixed", "limit": 50}, build_environment(Path(sys.argv[1])))
seconds = time.perf_counter() - started
own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({
    "seconds": seconds,
    "cpu_seconds": own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime,
    "peak_rss_bytes": max(own.ru_maxrss, children.ru_maxrss) * 1024,
    "success": invocation.success,
    "total": invocation.output.get("total") if invocation.success else None,
    "error": invocation.error_message,
}))
"""


def first_use(env: Path, home: Path) -> dict[str, Any]:
    """The first query of `env` in a fresh process whose EVCLI_HOME is `home` (empty: the index is built)."""
    import json

    clean = {key: value for key, value in os.environ.items() if key != "EVCLI_TOOL_TIMEOUT_S"}
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_USE, str(env)],
        env={**clean, "EVCLI_HOME": str(home)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def index_bytes(home: Path) -> int:
    return sum(path.stat().st_size for path in (home / "logindex").rglob("*") if path.is_file())


def bench_first_use(sizes: list[int], tmp: Path, results: dict[str, Any]) -> None:
    rss = {}
    for lines in sizes:
        log(f"first use: writing {lines:,} lines")
        env = mixed_snapshot(tmp / f"mixed-{lines}", lines)
        log_bytes = (env / "logs" / "mixed.log").stat().st_size
        home = tmp / f"home-{lines}"
        found = first_use(env, home)
        target = TARGETS["first_use_s_per_million"] * lines / 1_000_000 if lines >= 1_000_000 else None
        ratio = index_bytes(home) / log_bytes
        results[f"first_use_{lines}"] = {
            **{key: r4(value) if isinstance(value, float) else value for key, value in found.items()},
            "log_bytes": log_bytes,
            "index_ratio": r4(ratio),
            "load_average_1m": round(os.getloadavg()[0], 2),
            "target_max_s": target,
            "target_index_ratio": TARGETS["index_ratio"],
            "ok": found["success"]
            and (target is None or found["seconds"] <= target)
            and ratio <= TARGETS["index_ratio"],
        }
        rss[lines] = found["peak_rss_bytes"]
        log(f"first use {lines:,}: {found['seconds']:.2f}s ({found['cpu_seconds']:.2f}s CPU), index {ratio:.2f}x")
    if len(rss) > 1:
        growth = rss[max(rss)] / rss[min(rss)]
        results["memory_growth"] = {
            "value": r4(growth),
            "peak_rss_bytes": {str(lines): value for lines, value in rss.items()},
            "target": f"peak RSS of {max(rss):,} lines <= {TARGETS['memory_growth']} x {min(rss):,} lines",
            "ok": growth <= TARGETS["memory_growth"],
        }


def bench_warm(lines: int, tmp: Path, runs: int, results: dict[str, Any]) -> None:
    from evcli.backends.base import LogQuery
    from evcli.backends.snapshot import SnapshotBackend
    from evcli.core.time import TimeRange

    env = tmp / f"mixed-{lines}"
    path = env / "logs" / "mixed.log"
    os.environ["EVCLI_HOME"] = str(tmp / f"home-{lines}")  # the index first_use built
    backend = SnapshotBackend(env)
    start = MIXED_START + timedelta(hours=10)
    named = TimeRange(start, start + timedelta(minutes=30))

    def query(keywords: tuple[str, ...] = (), level: str | None = None, **extra: Any) -> Any:
        return backend.query_logs(LogQuery("mixed", keywords, level, None, 50, **extra))

    query()  # warm: the index is opened once before timing
    grep_rows = [
        int(line.split(":", 1)[0]) - 1
        for line in _grep(["grep", "-n", "-i", "-F", KEYWORD, str(path)]).split("\n")
        if line
    ]
    low = int(start.timestamp() * 1e6)
    pipe = ["bash", "-c", f"grep -oE '{ADDRESS_GREP}' '{path}' | sort | uniq -c"]
    grep = {
        "keyword": median_wall(lambda: int(_grep(["grep", "-c", "-i", "-F", KEYWORD, str(path)])), runs),
        "level": median_wall(lambda: int(_grep(["grep", "-c", "-E", LEVEL_GREP, str(path)])), runs),
        "by_address": median_wall(
            lambda: {w: int(n) for n, w in (row.split() for row in _grep(pipe).splitlines())}, runs
        ),
    }
    grep["keyword_range"] = (grep["keyword"][0], _range_expected(path, grep_rows, low, low + 30 * 60 * 1_000_000))
    ours = {
        "keyword": median_wall(lambda: query((KEYWORD,)).total, runs),
        "keyword_range": median_wall(lambda: query((KEYWORD,), range=named).total, runs),
        "level": median_wall(lambda: query(level="ERROR", level_strict=True).stats["records"], runs),
        "by_address": median_wall(lambda: query(count_by="address").stats["by_address"], runs),
    }
    row: dict[str, Any] = {}
    for name, (seconds, found) in ours.items():
        grep_s, expected = grep[name]
        equal = _same_counts(found, expected)
        row[name] = {
            "seconds": r4(seconds),
            "grep_s": r4(grep_s),
            "ratio_to_grep": round(seconds / grep_s, 2),
            "counts_equal": equal,
            **({} if isinstance(found, dict) else {"count": found, "grep_count": expected}),
            "target_ratio": QUERY_TARGETS[name],
            "ok": seconds / grep_s <= QUERY_TARGETS[name] and equal,
        }
        log(f"warm {lines:,} {name}: {seconds:.3f}s vs grep {grep_s:.3f}s, counts equal: {equal}")
    results[f"warm_{lines}"] = {**row, "ok": all(value["ok"] for value in row.values())}


def _same_counts(found: Any, expected: Any) -> bool:
    """Counts equal; a count by address: evcli's top addresses (top_counts) with grep's counts for them."""
    if isinstance(expected, dict):
        return bool(found) and all(expected.get(address) == count for address, count in found.items())
    return found == expected


def bench_ask(lines: int, tmp: Path, runs: int, results: dict[str, Any]) -> None:
    env = tmp / f"mixed-{lines}"
    argv = [sys.executable, "-m", "evcli", "ask", ASK_QUESTION, "--env", str(env), "--db", str(tmp / "ask.db")]
    exits: list[int] = []

    def ask() -> None:
        exits.append(subprocess.run(argv, capture_output=True, env=os.environ.copy()).returncode)

    ask()  # the first ask may build what the index does not hold (the trace and metric caches)
    seconds, _ = median_wall(ask, runs)
    results[f"ask_{lines}"] = {
        "seconds": r4(seconds),
        "exit_codes": exits,
        "call": f'evcli ask "{ASK_QUESTION}" --env DIR (whole process, offline engines, index built)',
        "target_max_s": TARGETS["ask_s"],
        "ok": seconds <= TARGETS["ask_s"] and all(code in (0, 3) for code in exits),
    }
    log(f"ask {lines:,}: {seconds:.2f}s, exits {exits}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200k and 1M lines, fewer repetitions")
    parser.add_argument("--lines", default="", help="comma-separated sizes (default 1000000,5000000)")
    options = parser.parse_args()
    sizes = [int(n) for n in options.lines.split(",") if n] or (
        [200_000, 1_000_000] if options.quick else [1_000_000, 5_000_000]
    )
    runs = 3 if options.quick else 5
    results: dict[str, Any] = {"meta": {"sizes": sizes, "python": sys.version.split()[0], "cores": os.cpu_count()}}
    errors: dict[str, str] = {}
    tmp = Path(tempfile.mkdtemp(prefix="bench-logindex-"))
    try:
        run_sections(
            [
                ("first_use", lambda: bench_first_use(sizes, tmp, results)),
                ("warm", lambda: bench_warm(max(sizes), tmp, runs, results)),
                ("ask", lambda: bench_ask(1_000_000 if 1_000_000 in sizes else max(sizes), tmp, runs, results)),
            ],
            errors,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish(results, {}, errors, T0)
    return 0 if results["summary"]["all_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
