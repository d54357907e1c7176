#!/usr/bin/env python
"""Benchmark of `evcli serve` (issues 14 and 27): POST /alerts latency with the queue busy, and offline
diagnoses per minute with one worker and with two, measured in the same run.

    python bench/bench_serve.py            # 3 rounds (~3 minutes on a quiet 2-core machine)
    python bench/bench_serve.py --quick    # 2 rounds of fewer alerts
    python bench/bench_serve.py --rounds 5

Prints ONE JSON object to stdout; progress goes to stderr; the temp dir is removed. Each round starts a real
`evcli serve --workers 1` and a real `evcli serve --workers 2` process, one after the other (which goes first
alternates from round to round, so load from other processes hits both alike), each with the host snapshot
environment, the offline model and a fresh store; EVCLI_HOME (the log index) is shared by every round. Each
server first diagnoses WARMUP_PER_WORKER alerts per worker, untimed (a worker's first diagnosis imports the
pipeline), then gets the same burst of alerts:

* diagnoses_per_minute_1, diagnoses_per_minute_2: the burst's alerts over the wall time from its first
  delivery to its last finished diagnosis (median of the rounds; each round's value and the median
  `duration_s` a worker recorded per diagnosis reported, with the server's cores, the web process's share
  of them, the workers' CPU time per diagnosis and the machine's idle cores meanwhile);
* workers_ratio: the median of each round's 2-worker / 1-worker ratio (target >= 1.8, on a quiet machine:
  `load_average_start` says how quiet it was);
* post_alerts_median: in the 2-worker rounds, the latency of the single-alert POST /alerts deliveries sent
  on one keep-alive connection after the workers started on the burst's first half (<= 20 ms; p90).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from _common import REPO, as_installed, finish, log, percentile, r2, r4

TARGET_MEDIAN_S = 0.020
TARGET_RATIO = 1.8
WARMUP_PER_WORKER = 2


@dataclass
class Burst:
    """One server's burst: its rate, the workers' recorded diagnosis times, and POST latencies."""

    per_minute: float
    wall_s: float
    diagnosis_s: float
    cores: float  # CPU seconds of the server's processes (web and workers) per wall second of the burst
    web_cores: float  # of which the web process's
    worker_cpu_s: float  # CPU seconds of the worker processes per diagnosis of the burst
    idle_cores: float  # the machine's idle CPU seconds (idle and iowait, every core) per wall second of the burst
    post_s: list[float] = field(default_factory=list)


def _delivery(n: int) -> bytes:
    alert = {
        "status": "firing",
        "labels": {"alertname": f"SSHBruteForce{n}", "service": "auth", "severity": "warning"},
        "annotations": {"summary": "Many failed SSH logins on web-01"},
        "startsAt": "2026-03-18T08:14:00Z",
        "fingerprint": f"bench-{n}",
    }
    return json.dumps({"version": "4", "groupKey": f"bench-{n}", "status": "firing", "alerts": [alert]}).encode()


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _post(conn: http.client.HTTPConnection, body: bytes) -> float:
    started = time.perf_counter()
    conn.request("POST", "/alerts", body, {"Content-Type": "application/json"})
    response = conn.getresponse()
    response.read()
    elapsed = time.perf_counter() - started
    if response.status != 202:
        raise RuntimeError(f"POST /alerts answered {response.status}")
    return elapsed


def _states(db: Path) -> dict[str, int]:
    with sqlite3.connect(db, timeout=30) as conn:
        return dict(conn.execute("SELECT state, count(*) FROM alert_queue GROUP BY state").fetchall())


def _durations(db: Path, first_id: int) -> list[float]:
    with sqlite3.connect(db, timeout=30) as conn:
        rows = conn.execute("SELECT duration_s FROM alert_queue WHERE id >= ? AND state = 'done'", [first_id])
        return [row[0] for row in rows]


def _cpu_s(group: int) -> tuple[float, float]:
    """CPU seconds (user + system, every thread) used so far by the live processes of process group `group`:
    (its leader, the web process; the others, the workers)."""
    ticks = [0, 0]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # the process ended meanwhile
            continue
        if int(fields[2]) == group:  # pgrp; utime and stime follow at 11 and 12
            ticks[stat.parent.name != str(group)] += int(fields[11]) + int(fields[12])
    web, workers = (count / os.sysconf("SC_CLK_TCK") for count in ticks)
    return web, workers


def _idle_s() -> float:
    """The machine's idle CPU seconds so far, every core (/proc/stat: idle and iowait): what no process used."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return (int(fields[4]) + int(fields[5])) / os.sysconf("SC_CLK_TCK")


def _wait_running(db: Path, workers: int, server: subprocess.Popen) -> None:
    """Until every worker is diagnosing an alert of the burst."""
    while _states(db).get("running", 0) < workers:
        if server.poll() is not None:
            raise RuntimeError(f"evcli serve exited with {server.returncode}")
        time.sleep(0.005)


def _wait_done(db: Path, total: int, server: subprocess.Popen) -> None:
    while (states := _states(db)).get("done", 0) + states.get("failed", 0) < total:
        if server.poll() is not None:
            raise RuntimeError(f"evcli serve exited with {server.returncode}")
        time.sleep(0.05)
    if states.get("failed"):
        raise RuntimeError(f"{states['failed']} diagnoses failed")


def _connect(port: int) -> http.client.HTTPConnection:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    deadline = time.monotonic() + 60
    while True:
        try:
            conn.request("GET", "/healthz")
            conn.getresponse().read()
            return conn
        except OSError:
            if time.monotonic() > deadline:
                raise
            conn.close()
            time.sleep(0.2)


def _serve(tmp: Path, name: str, workers: int, burst: int) -> Burst:
    """Start `evcli serve --workers N`, warm it up, time one burst, stop it."""
    db, port = tmp / f"{name}.db", _port()
    argv = [sys.executable, "-m", "evcli", "serve", "--listen", f"127.0.0.1:{port}", "--workers", str(workers)]
    argv += ["--env", str(REPO / "evcli" / "envs" / "host"), "--db", str(db)]
    env = os.environ | {"EVCLI_HOME": str(tmp / "home")}
    server = subprocess.Popen(argv, env=env, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        conn = _connect(port)
        warmup = WARMUP_PER_WORKER * workers
        for n in range(warmup):
            _post(conn, _delivery(n))
        _wait_done(db, warmup, server)
        conn.close()  # the server drops a connection idle for 5 s; the next request opens a new one
        cpu, idle, first = _cpu_s(server.pid), _idle_s(), time.perf_counter()
        half = burst // 2
        for n in range(warmup, warmup + half):
            _post(conn, _delivery(n))
        _wait_running(db, workers, server)  # not a fixed pause: two workers could empty the queue meanwhile
        post_s = [_post(conn, _delivery(n)) for n in range(warmup + half, warmup + burst)]
        _wait_done(db, warmup + burst, server)
        wall = time.perf_counter() - first
        web, workers = (after - before for after, before in zip(_cpu_s(server.pid), cpu, strict=True))
        idle = _idle_s() - idle
        conn.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    diagnosis_s = statistics.median(_durations(db, warmup + 1))
    cores = (web + workers) / wall
    return Burst(burst / wall * 60, wall, diagnosis_s, cores, web / wall, workers / burst, idle / wall, post_s)


def _rate(runs: list[Burst], workers: int, burst: int) -> dict:
    return {
        "value": r2(statistics.median(run.per_minute for run in runs)),
        "statistic": f"median of {len(runs)} rounds",
        "rounds": [r2(run.per_minute) for run in runs],
        "wall_s": [r2(run.wall_s) for run in runs],
        "diagnosis_s_median": [r4(run.diagnosis_s) for run in runs],
        "server_cores": [r2(run.cores) for run in runs],
        "web_cores": [r2(run.web_cores) for run in runs],
        "worker_cpu_ms_per_diagnosis": [round(run.worker_cpu_s * 1000) for run in runs],
        "machine_idle_cores": [r2(run.idle_cores) for run in runs],
        "alerts": burst,
        "workers": workers,
        "ok": None,
    }


def main() -> None:
    as_installed()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    burst, rounds = (24, 2) if args.quick else (60, 3)
    rounds = args.rounds or rounds
    started = time.perf_counter()
    load_start = os.getloadavg()
    results: dict = {"load_average_start": [round(x, 2) for x in load_start]}
    errors: dict[str, str] = {}
    runs: dict[int, list[Burst]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory(prefix="evcli-bench-serve-") as tmp:
        try:
            for number in range(rounds):
                order = (1, 2) if number % 2 == 0 else (2, 1)
                for workers in order:
                    run = _serve(Path(tmp), f"r{number}-w{workers}", workers, burst)
                    runs[workers].append(run)
                    log(
                        f"round {number + 1}/{rounds}, --workers {workers}: {run.per_minute:.1f} diagnoses per "
                        f"minute ({burst} in {run.wall_s:.1f} s; {run.diagnosis_s * 1000:.0f} ms per diagnosis; "
                        f"{run.cores:.2f} cores, web {run.web_cores:.2f}; "
                        f"workers' CPU {run.worker_cpu_s * 1000:.0f} ms per diagnosis; "
                        f"machine idle {run.idle_cores:.2f} cores; "
                        f"load {os.getloadavg()[0]:.2f})"
                    )
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
            errors["serve"] = f"{type(exc).__name__}: {exc}"
    if runs[1] and runs[2]:
        results |= _report(runs, burst)
    results["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    finish(results, {}, errors, started)


def _report(runs: dict[int, list[Burst]], burst: int) -> dict:
    ratios = [two.per_minute / one.per_minute for one, two in zip(runs[1], runs[2], strict=False)]
    ratio = statistics.median(ratios)
    samples = [sample for run in runs[2] for sample in run.post_s]
    median = statistics.median(samples)
    log(
        f"workers_ratio {ratio:.2f} (rounds {', '.join(f'{r:.2f}' for r in ratios)}); POST median {median * 1000:.1f} ms"
    )
    return {
        "diagnoses_per_minute_1": _rate(runs[1], 1, burst),
        "diagnoses_per_minute_2": _rate(runs[2], 2, burst),
        "workers_ratio": {
            "value": r2(ratio),
            "statistic": f"median of {len(ratios)} rounds' 2-worker / 1-worker ratios",
            "rounds": [r2(r) for r in ratios],
            "target": TARGET_RATIO,
            "ok": ratio >= TARGET_RATIO,
        },
        "post_alerts_median": {
            "seconds": r4(median),
            "p90_s": r4(percentile(samples, 0.9)),
            "statistic": f"median of {len(samples)} (2-worker rounds, queue busy)",
            "target_s": TARGET_MEDIAN_S,
            "ok": median <= TARGET_MEDIAN_S,
        },
    }


if __name__ == "__main__":
    main()
