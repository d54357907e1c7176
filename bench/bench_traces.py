#!/usr/bin/env python
"""Benchmark of the persistent trace index (issue 25's speed targets) on generated span files.

    python bench/bench_traces.py                  # 1,000,000 spans (OTLP JSON lines and a CSV span table)
    python bench/bench_traces.py --spans 300000   # fewer (smoke)
    python bench/bench_traces.py --quick          # fewer repetitions

A seeded generator writes traces of 13 services, each a call tree from `gateway` down (about 10 spans a trace,
1% of calls failing, 5% of payment's), spread over one hour: as OTLP JSON lines (one Collector file-exporter
document a trace, a resource per service) and as a CSV span table. Prints ONE JSON object to stdout; progress
on stderr. Every measurement runs `SnapshotBackend(DIR).traces.query(...)` in a fresh process:

* first_use_otlp / first_use_csv: index build + first query (edge stats of a 5-minute range) on a fresh
  EVCLI_HOME (<= 10 s); CPU seconds of the process and its worker processes beside the wall time. No
  terminal here, so no progress bar (it shows on stderr only when that is a terminal).
* memory: peak RSS of that first-use process at the full size against the same at --small spans (flat:
  <= 1.5 x); the worker processes' peak RSS is reported beside it.
* edges_warm: the same range's edge stats in a fresh process with the index reused: the query itself
  (<= 0.5 s, median) and the whole process (reported).
* whole_warm: queries over the whole snapshot (no range: every span), reported without a target.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import T0, as_installed, finish, log, r4, run_sections

CALLS = {  # caller → the services it may call
    "gateway": ("frontend", "checkout", "search"),
    "frontend": ("catalog", "users", "recommend", "cart"),
    "checkout": ("payment", "inventory", "cart", "shipping"),
    "search": ("catalog",),
    "shipping": ("email",),
    "payment": ("fraud",),
    "recommend": ("catalog",),
    **{service: () for service in ("catalog", "users", "cart", "inventory", "email", "fraud")},
}
START_NS = 1_777_912_800 * 10**9  # 2026-05-04T16:40:00Z
HOUR_NS = 3_600 * 10**9
RANGE = (START_NS + 300 * 10**9, START_NS + 600 * 10**9)  # 5 minutes every size written covers
TARGETS = {"first_use_s": 10.0, "edges_warm_s": 0.5, "memory_growth": 1.5}


def _trace(rng: random.Random, index: int, traces: int, budget: int) -> list[tuple[Any, ...]]:
    """(service, span id, parent id, operation, start, duration, error) of one call tree, at most `budget` spans."""
    spans: list[tuple[Any, ...]] = []

    def call(service: str, parent: str, start: int, depth: int) -> None:
        span_id = f"{rng.getrandbits(64):016x}"
        failed = rng.random() < (0.05 if service == "payment" else 0.01)
        operation = rng.choice((f"GET /{service}", f"POST /{service}/v1", f"{service}.internal"))
        spans.append((service, span_id, parent, operation, start, int(rng.lognormvariate(16, 1)), failed))
        for callee in CALLS[service]:
            if len(spans) < budget and depth < 4 and rng.random() < 0.8:
                call(callee, span_id, start + rng.randrange(1_000, 10**6), depth + 1)

    call("gateway", "", START_NS + index * HOUR_NS // traces + rng.randrange(10**6), 0)
    return spans


def _otlp_line(trace: str, spans: list[tuple[Any, ...]]) -> str:
    by_service: dict[str, list[str]] = {}
    for service, span_id, parent, operation, start, duration, failed in spans:
        by_service.setdefault(service, []).append(
            f'{{"traceId":"{trace}","spanId":"{span_id}","parentSpanId":"{parent}","name":"{operation}","kind":2,'
            f'"startTimeUnixNano":"{start}","endTimeUnixNano":"{start + duration}","status":{{"code":{2 if failed else 1}}}}}'
        )
    resources = [
        f'{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"{service}"}}}}]}},'
        f'"scopeSpans":[{{"scope":{{"name":"bench"}},"spans":[{",".join(items)}]}}]}}'
        for service, items in by_service.items()
    ]
    return '{"resourceSpans":[' + ",".join(resources) + "]}\n"


def write_spans(path: Path, spans: int, form: str, seed: int = 7) -> int:
    """Write about `spans` spans (10 a trace) as OTLP JSON lines or a CSV table; the number written."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    traces, written, index = max(1, spans // 10), 0, 0
    with path.open("w") as handle:
        if form == "csv":
            handle.write("trace_id,span_id,parent_id,service,operation,start_us,duration_us,status\n")
        while written < spans:
            trace, tree = f"{rng.getrandbits(128):032x}", _trace(rng, index, traces, min(12, spans - written))
            written, index = written + len(tree), index + 1
            if form == "otlp":
                handle.write(_otlp_line(trace, tree))
                continue
            for service, span_id, parent, operation, start, duration, failed in tree:
                status = "ERROR" if failed else "OK"
                handle.write(
                    f"{trace},{span_id},{parent},{service},{operation},{start // 1000},{duration // 1000},{status}\n"
                )
    return written


_QUERY = """
import json, resource, sys, time
started = time.perf_counter()
from pathlib import Path
from evcli.backends.snapshot import SnapshotBackend
from evcli.backends.trace_graph import TraceQuery
backend = SnapshotBackend(Path(sys.argv[1]))
asked = json.loads(sys.argv[2])
queried = time.perf_counter()
found = backend.traces.query(TraceQuery(**asked)).answer
done = time.perf_counter()
own, workers = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({
    "seconds": done - started, "query_s": done - queried, "rss": own.ru_maxrss * 1024,
    "workers_rss": workers.ru_maxrss * 1024,
    "cpu_s": own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime,
    "total": found.total, "edges": found.edges,
    "indexed": sum(file.found.read for file in backend.traces.files if file.found),
}))
"""


def _run(env: Path, home: Path, **query: Any) -> dict[str, Any]:
    """One fresh process querying `env` with EVCLI_HOME `home` (building its index when there is none)."""
    done = subprocess.run(
        [sys.executable, "-c", _QUERY, str(env), json.dumps(query)],
        env={**os.environ, "EVCLI_HOME": str(home)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def _ranged() -> dict[str, int]:
    return {"start_ns": RANGE[0], "end_ns": RANGE[1]}


def bench_first_use(options, tmp: Path, results: dict[str, Any]) -> None:
    for form in ("otlp", "csv"):
        env = tmp / f"{form}-big"
        written = write_spans(env / "traces" / f"spans.{'jsonl' if form == 'otlp' else 'csv'}", options.spans, form)
        log(f"{form}: {written:,} spans written ({_size(env):,} bytes); building")
        first = _run(env, tmp / f"home-{form}", **_ranged())
        log(f"{form}: first use {first['seconds']:.2f}s ({first['cpu_s']:.1f}s CPU), {len(first['edges'])} edges")
        results[f"first_use_{form}"] = {
            "seconds": r4(first["seconds"]),
            "cpu_seconds": r4(first["cpu_s"]),
            "load_average_1m": round(os.getloadavg()[0], 2),
            "spans": written,
            "indexed_spans": first["indexed"],
            "file_bytes": _size(env),
            "edges_in_range": len(first["edges"]),
            "call": "fresh process: SnapshotBackend(DIR).traces.query(5-minute range): index build + edge stats",
            "target_max_s": TARGETS["first_use_s"],
            "ok": first["seconds"] <= TARGETS["first_use_s"] and first["indexed"] == written,
        }
        results.setdefault("_first", {})[form] = first


def bench_memory(options, tmp: Path, results: dict[str, Any]) -> None:
    env = tmp / "otlp-small"
    write_spans(env / "traces" / "spans.jsonl", options.small, "otlp")
    small = _run(env, tmp / "home-small", **_ranged())
    big = results["_first"]["otlp"]
    growth = big["rss"] / small["rss"]
    log(
        f"memory: peak RSS {small['rss'] >> 20} MiB at {options.small:,} spans, {big['rss'] >> 20} MiB at {options.spans:,}"
    )
    results["memory"] = {
        "value": r4(growth),
        "peak_rss_small_bytes": small["rss"],
        "peak_rss_big_bytes": big["rss"],
        "worker_peak_rss_small_bytes": small["workers_rss"],
        "worker_peak_rss_big_bytes": big["workers_rss"],
        "small_spans": options.small,
        "method": "ru_maxrss of the fresh first-use process (interpreter included); its worker processes apart",
        "target": f"peak RSS {options.spans:,} spans <= {TARGETS['memory_growth']} x {options.small:,} spans",
        "ok": growth <= TARGETS["memory_growth"],
    }


def bench_warm(options, tmp: Path, results: dict[str, Any]) -> None:
    env, home, runs = tmp / "otlp-big", tmp / "home-otlp", 3 if options.quick else 5
    ranged = [_run(env, home, **_ranged()) for _ in range(runs)]
    assert all(run["edges"] == results["_first"]["otlp"]["edges"] for run in ranged), "a warm answer differs"
    query_s = [run["query_s"] for run in ranged]
    results["edges_warm"] = {
        "seconds": r4(statistics.median(query_s)),
        "statistic": f"median of {runs}",
        "runs_s": [r4(seconds) for seconds in query_s],
        "process_s": r4(statistics.median(run["seconds"] for run in ranged)),
        "spans_in_range": ranged[0]["total"],
        "edges": ranged[0]["edges"][:3],
        "call": "fresh process, index reused: edge stats (calls, errors, exact p50/p90/p99) of a 5-minute range",
        "target_max_s": TARGETS["edges_warm_s"],
        "ok": statistics.median(query_s) <= TARGETS["edges_warm_s"],
    }
    log(f"warm: range edges {statistics.median(query_s):.3f}s")
    whole = {name: _run(env, home, **query)["query_s"] for name, query in _WHOLE.items()}
    results["whole_warm"] = {
        **{f"{name}_s": r4(seconds) for name, seconds in whole.items()},
        "call": "fresh process, index reused: queries with no range (every span of the snapshot)",
        "target": None,
        "ok": None,
    }


_WHOLE = {
    "every_span": {},
    "one_service": {"service": "payment"},
    "count_by_service": {"count_by": "service"},
    "operation": {"operation": "fraud.int"},
}


def _size(env: Path) -> int:
    return sum(path.stat().st_size for path in (env / "traces").iterdir())


def main() -> int:
    as_installed()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=1_000_000, help="spans of the big snapshots")
    parser.add_argument("--small", type=int, default=200_000, help="spans of the snapshot memory is compared with")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    options = parser.parse_args()
    results: dict[str, Any] = {
        "meta": {"python": sys.version.split()[0], "cpus": os.cpu_count(), "spans": options.spans}
    }
    errors: dict[str, str] = {}
    tmp = Path(tempfile.mkdtemp(prefix="evcli-bench-traces-"))
    try:
        run_sections(
            (
                ("first_use", lambda: bench_first_use(options, tmp, results)),
                ("memory", lambda: bench_memory(options, tmp, results)),
                ("warm", lambda: bench_warm(options, tmp, results)),
            ),
            errors,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results.pop("_first", None)
    finish(results, {}, errors, T0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
