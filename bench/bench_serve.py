#!/usr/bin/env python
"""Benchmark of `evcli serve` (issue 14): POST /alerts latency with the queue busy, offline diagnoses per minute.

    python bench/bench_serve.py            # full run (~1 minute on a 2-core machine)
    python bench/bench_serve.py --quick    # fewer alerts

Prints ONE JSON object to stdout; progress goes to stderr. A real `evcli serve --workers 2` process
(host snapshot environment, offline model, a fresh store in a temp dir) first gets a burst of alerts so
both workers are busy, then:

* post_alerts_median: the median latency of single-alert POST /alerts deliveries on one keep-alive
  connection while the workers diagnose (<= 20 ms; p90 reported);
* diagnoses_per_minute: every queued alert diagnosed, counted over the wall time from the first
  delivery to the last finished diagnosis (reported, no target).
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
from pathlib import Path

from _common import REPO, as_installed, finish, log, percentile, r2, r4

TARGET_MEDIAN_S = 0.020


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


def main() -> None:
    as_installed()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    burst, timed = (20, 30) if args.quick else (60, 60)
    started = time.perf_counter()
    results: dict = {}
    errors: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="evcli-bench-serve-") as tmp:
        db, port = Path(tmp) / "serve.db", _port()
        argv = [sys.executable, "-m", "evcli", "serve", "--listen", f"127.0.0.1:{port}", "--workers", "2"]
        argv += ["--env", str(REPO / "evcli" / "envs" / "host"), "--db", str(db)]
        env = os.environ | {"EVCLI_HOME": tmp}
        server = subprocess.Popen(argv, env=env, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            deadline = time.monotonic() + 30
            while True:
                try:
                    conn.request("GET", "/healthz")
                    conn.getresponse().read()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    conn.close()
                    time.sleep(0.2)
            log(f"server up; a burst of {burst} alerts, then {timed} timed deliveries")
            first = time.perf_counter()
            for n in range(burst):
                _post(conn, _delivery(n))
            time.sleep(1.0)  # both workers have started diagnosing
            samples = [_post(conn, _delivery(burst + n)) for n in range(timed)]
            busy = _states(db)
            median = statistics.median(samples)
            results["post_alerts_median"] = {
                "seconds": r4(median),
                "p90_s": r4(percentile(samples, 0.9)),
                "statistic": f"median of {timed}",
                "queue_while_timed": busy,
                "target_s": TARGET_MEDIAN_S,
                "ok": median <= TARGET_MEDIAN_S,
            }
            total = burst + timed
            while _states(db).get("done", 0) + _states(db).get("failed", 0) < total:
                if server.poll() is not None:
                    raise RuntimeError(f"evcli serve exited with {server.returncode}")
                time.sleep(0.2)
            elapsed = time.perf_counter() - first
            results["diagnoses_per_minute"] = {
                "value": r2(total / elapsed * 60),
                "alerts": total,
                "wall_s": r2(elapsed),
                "workers": 2,
                "states": _states(db),
                "ok": None,
            }
            log(
                f"POST /alerts median {median * 1000:.1f} ms (p90 {percentile(samples, 0.9) * 1000:.1f} ms); "
                f"{results['diagnoses_per_minute']['value']} diagnoses per minute with --workers 2"
            )
        except (OSError, RuntimeError) as exc:
            errors["serve"] = str(exc)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
    finish(results, {}, errors, started)


if __name__ == "__main__":
    main()
