#!/usr/bin/env python
"""Benchmark of the change finder (find_changes) and a why-question on a big snapshot, against the targets
of the diagnosis issue.

    python bench/bench_changes.py                 # 60 services x 30 series x 1,440 points + 1M log lines
    python bench/bench_changes.py --quick         # 20 services, 200k log lines (smoke)
    python bench/bench_changes.py --memory        # the change finder's log counts on 1M and 5M log lines
    python bench/bench_changes.py --memory --lines 200000,1000000

Prints ONE JSON object to stdout; progress on stderr. Measures whole processes (`sys.executable -m evcli`):

* changes_first_use: `evcli tool find_changes --env DIR --json` on a fresh EVCLI_HOME (log indexes built).
* changes_warm: the same again, best and median of 3 (<= 2 s).
* ask_warm: `evcli ask "What is the root cause?" --env DIR --json`, best and median of 3 (<= 3 s).
* root_cause_found: whether the injected service is the first suspect (a check, not a timing).
* memory: peak RSS of the warm find_changes at half the services and at all of them (flat: ratio <= 1.5).

With --memory, only the change finder's log counts on one big log (bench_tools.write_mixed_log's), its index
built first in another process: per size, a fresh process opens the snapshot and runs what find_changes
reads from logs (snapshot_changes.log_edges, level_series over the whole log, log_counts with the last hour
as the window and the rest as the baseline, 60 s buckets), median of 3 processes:

* counts_<N>: seconds of those calls, peak RSS of the process (ru_maxrss) and its RSS after the imports, and
  a digest of the results (equal digests: equal counts, before and after a change).
* memory_growth: peak RSS at the biggest size against the smallest's (flat: <= 1.2).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
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

from _common import as_installed, log, r4

START = datetime(2026, 11, 3, 0, 0, tzinfo=UTC)
STEP = 60
POINTS = 1440
SERIES = 30
ONSET = POINTS - 30  # the fault: the last 30 minutes


def write_snapshot(directory: Path, services: int, log_lines: int, seed: int = 5) -> str:
    rng = random.Random(seed)
    (directory / "metrics").mkdir(parents=True)
    (directory / "logs").mkdir()
    names = [f"svc-{index:02d}" for index in range(services)]
    culprit = names[rng.randrange(1, services)]
    topology = ["[topology]"] + [
        f'"{names[i]}" = ["{names[2 * i + 1]}", "{names[2 * i + 2]}"]' for i in range(services) if 2 * i + 2 < services
    ]
    (directory / "env.toml").write_text('name = "bench"\ntimezone = "UTC"\n' + "\n".join(topology) + "\n")
    columns = ["cpu_usage[%]", "memory_used[MiB]", "latency_p50[ms]", "latency_p99[ms]", "requests[req/s]"]
    columns += [f"extra_metric_{index}" for index in range(SERIES - len(columns))]
    per_file = log_lines // services
    for name in names:
        levels = [rng.uniform(5, 40)] + [rng.uniform(5, 500) for _ in columns[1:]]  # CPU in %
        rows = ["timestamp," + ",".join(columns)]
        for index in range(POINTS):
            daily = 1 + 0.2 * math.sin(2 * math.pi * index / POINTS)
            cells = [level * daily * (1 + rng.gauss(0, 0.03)) for level in levels]
            if name == culprit and index >= ONSET:
                cells[0] = 90 + rng.gauss(0, 2)
            rows.append(f"{int(START.timestamp()) + index * STEP}," + ",".join(f"{cell:.3f}" for cell in cells))
        (directory / "metrics" / f"{name}.csv").write_text("\n".join(rows) + "\n")
        lines = []
        for number in range(per_file):
            moment = START + timedelta(seconds=number * POINTS * STEP / per_file)
            level = "WARN" if number % 97 == 0 else "INFO"
            lines.append(
                f"{moment:%Y-%m-%d %H:%M:%S},{number % 1000:03d} {level} [worker] handled request {number} in 12ms"
            )
        (directory / "logs" / f"{name}.log").write_text("\n".join(lines) + "\n")
    return culprit


def run(args: list[str], home: Path) -> tuple[float, int, str]:
    """Seconds, peak RSS of the child (KiB) and stdout of one evcli process."""
    env = dict(os.environ, EVCLI_HOME=str(home), NO_COLOR="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "evcli", *args], capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 3):
        raise SystemExit(f"evcli {' '.join(args)} failed: {done.stderr[-2000:]}")
    return seconds, max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before), done.stdout


def rss_of(args: list[str], home: Path) -> int:
    """Peak RSS (KiB) of one process, measured by a fresh Python parent so earlier children do not count."""
    code = (
        "import resource, subprocess, sys, os;"
        f"subprocess.run([sys.executable, '-m', 'evcli', *{args!r}], capture_output=True,"
        f" env=dict(os.environ, EVCLI_HOME={str(home)!r}));"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


MEMORY_GROWTH = 1.2
_BUILD_INDEX = """
import sys
from pathlib import Path
from evcli.backends.snapshot import SnapshotBackend
from evcli.backends.snapshot_changes import log_edges
log_edges(SnapshotBackend(Path(sys.argv[1])))
"""
_LOG_COUNTS = """
import dataclasses, json, resource, sys, time
from datetime import UTC, datetime
from pathlib import Path
import numpy, polars, pyarrow.parquet
from evcli.backends import logstore
from evcli.backends.snapshot import SnapshotBackend
from evcli.backends.snapshot_changes import level_series, log_counts, log_edges
from evcli.core.time import TimeRange
imported = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
backend = SnapshotBackend(Path(sys.argv[1]))
edges = log_edges(backend)
first, last = min(edges), max(edges)
series = level_series(backend, first, last, 60.0)
moment = lambda seconds: datetime.fromtimestamp(seconds, UTC)
window, baseline = TimeRange(moment(last - 3600), moment(last)), TimeRange(moment(first), moment(last - 3600))
templates, levels, problems = log_counts(backend, baseline, window, 60.0)
seconds = time.perf_counter() - started
plain = lambda value: value.tolist() if hasattr(value, "tolist") else value
found = [[{k: plain(v) for k, v in dataclasses.asdict(item).items()} for item in kind] for kind in (series, templates, levels)]
print(json.dumps({
    "seconds": seconds,
    "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    "imported_rss_bytes": imported * 1024,
    "results": json.dumps(found + [problems], sort_keys=True),
    "templates": len(templates),
}))
"""


def log_counts_run(env: Path, home: Path) -> dict[str, Any]:
    """One fresh process's change-finder log counts on `env` (its index in `home` already built)."""
    done = subprocess.run(
        [sys.executable, "-c", _LOG_COUNTS, str(env)],
        env=dict(os.environ, EVCLI_HOME=str(home)),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_memory(sizes: list[int], scratch: Path) -> dict[str, Any]:
    from bench_tools import mixed_snapshot

    report: dict[str, Any] = {"meta": {"sizes": sizes, "python": sys.version.split()[0], "cores": os.cpu_count()}}
    peaks = {}
    for lines in sizes:
        log(f"memory: writing {lines:,} mixed lines")
        env, home = mixed_snapshot(scratch / f"mixed-{lines}", lines), scratch / f"home-{lines}"
        subprocess.run(
            [sys.executable, "-c", _BUILD_INDEX, str(env)], env=dict(os.environ, EVCLI_HOME=str(home)), check=True
        )
        runs = [log_counts_run(env, home) for _ in range(3)]
        digests = {hashlib.sha256(run["results"].encode()).hexdigest()[:16] for run in runs}
        peaks[lines] = statistics.median(run["peak_rss_bytes"] for run in runs)
        seconds = statistics.median(run["seconds"] for run in runs)
        report[f"counts_{lines}"] = {
            "seconds": r4(seconds),
            "runs_s": [r4(run["seconds"]) for run in runs],
            "peak_rss_bytes": int(peaks[lines]),
            "imported_rss_bytes": int(statistics.median(run["imported_rss_bytes"] for run in runs)),
            "templates": runs[0]["templates"],
            "results_digest": digests.pop() if len(digests) == 1 else sorted(digests),
            "load_average_1m": round(os.getloadavg()[0], 2),
        }
        log(f"memory {lines:,}: {seconds:.2f}s, peak RSS {peaks[lines] / 2**20:.0f} MiB")
    if len(peaks) > 1:
        growth = peaks[max(peaks)] / peaks[min(peaks)]
        report["memory_growth"] = {
            "value": round(growth, 3),
            "target": f"peak RSS of {max(peaks):,} lines <= {MEMORY_GROWTH} x {min(peaks):,} lines",
            "ok": growth <= MEMORY_GROWTH,
        }
    report["summary"] = {"missed": [key for key, value in report.items() if value.get("ok") is False]}
    return report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--memory", action="store_true", help="only the change finder's log counts' memory and time")
    parser.add_argument("--lines", default="1000000,5000000", help="--memory's log sizes, comma-separated")
    options = parser.parse_args()
    if options.memory:
        as_installed()
        scratch = Path(tempfile.mkdtemp(prefix="evcli-bench-changes-"))
        try:
            print(json.dumps(bench_memory([int(n) for n in options.lines.split(",") if n], scratch), indent=2))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return
    services, lines = (20, 200_000) if options.quick else (60, 1_000_000)
    as_installed()
    scratch = Path(tempfile.mkdtemp(prefix="evcli-bench-changes-"))
    try:
        home = scratch / "home"
        log(f"writing {services} services x {SERIES} series x {POINTS} points, {lines} log lines")
        culprit = write_snapshot(scratch / "env", services, lines)
        half = scratch / "half"
        write_snapshot(half, services // 2, lines // 2)
        tool = ["tool", "find_changes", "--env", str(scratch / "env"), "--json"]
        first, _, _ = run(tool, home)
        log(f"first use {first:.2f}s")
        warm = [run(tool, home) for _ in range(3)]
        found = json.loads(warm[-1][2])["output"]["suspects"]
        ask = ["ask", "What is the root cause?", "--env", str(scratch / "env"), "--json"]
        run(ask, home)
        asked = [run(ask, home)[0] for _ in range(3)]
        run(["tool", "find_changes", "--env", str(half), "--json"], home)
        small = rss_of(["tool", "find_changes", "--env", str(half), "--json"], home)
        big = rss_of(tool, home)
        seconds = sorted(sample[0] for sample in warm)
        report = {
            "snapshot": {"services": services, "series": services * SERIES, "points": POINTS, "log_lines": lines},
            "changes_first_use": {"seconds": round(first, 3)},
            "changes_warm": {
                "best": round(seconds[0], 3),
                "median": round(seconds[1], 3),
                "target": 2.0,
                "ok": seconds[1] <= 2.0,
            },
            "ask_warm": {
                "best": round(min(asked), 3),
                "median": round(sorted(asked)[1], 3),
                "target": 3.0,
                "ok": sorted(asked)[1] <= 3.0,
            },
            "root_cause_found": {
                "culprit": culprit,
                "first_suspect": found[0]["service"] if found else None,
                "ok": bool(found) and found[0]["service"] == culprit,
            },
            "memory": {
                "half_kib": small,
                "all_kib": big,
                "ratio": round(big / small, 2),
                "target": 1.5,
                "ok": big / small <= 1.5,
            },
        }
        report["summary"] = {
            "missed": [key for key, value in report.items() if isinstance(value, dict) and value.get("ok") is False]
        }
        print(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
