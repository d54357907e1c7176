#!/usr/bin/env python
"""Finding sessions in a big store (issue 13), against its target.

    python bench/bench_sessions.py            # full run (about a minute on 2 cores)
    python bench/bench_sessions.py --quick    # fewer repetitions

Prints ONE JSON object to stdout; progress goes to stderr. On a store of 10,000 sessions (built by
bench_core.build_store: the broad-order-service sample cloned under new ids, one a minute), whose
questions are made distinct (`… #<n>`), it measures the whole-process wall time (median of
interleaved runs of `sys.executable -m evcli`) of:

* sessions_query_one: `evcli sessions -q "#4321"`: a question text matching one session (every
  question is read);
* sessions_query_many: `evcli sessions -q order-service`: a text every question contains (the
  newest 20 are shown);
* sessions_filtered: `evcli sessions --env demo --verdict PASS --since 30d` (no match: the clock of
  the clones is in July 2026; every row is read);
* trace_prefix: `evcli trace PREFIX --json` with a unique prefix of a session in the middle;
* trace_last: `evcli trace last --json`.

Target for each: median <= 0.3 s. `help_baseline` (`evcli --help`, no target) shows how much of
that is interpreter start and imports on this machine at this load. In-process times of `TraceStore.list_sessions` / `resolve` are
reported as the breakdown. The exit status is 0 whenever the measurements completed; read
`summary.all_ok`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import T0, as_installed, finish, log, r4, run_sections, timing
from bench_core import EVCLI, EVCLI_METHOD, build_store, interleaved

TARGET_S = 0.3
N_SESSIONS = 10_000


def _distinct_questions(db: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE diagnosis_run SET question = question || ' #' || rowid")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _in_process(db: Path, prefix: str) -> dict[str, float]:
    from evcli.store.db import TraceStore
    from evcli.store.query import SessionQuery

    def median(call) -> float:
        samples = []
        for _ in range(5):
            start = time.perf_counter()
            call()
            samples.append(time.perf_counter() - start)
        return r4(statistics.median(samples))

    with TraceStore(db, must_exist=True) as store:
        return {
            "list_sessions(query one)": median(lambda: store.list_sessions(20, SessionQuery(text="#4321"))),
            "list_sessions(query many)": median(lambda: store.list_sessions(20, SessionQuery(text="order-service"))),
            "resolve(prefix)": median(lambda: store.resolve(prefix)),
            "resolve(last)": median(lambda: store.resolve("last")),
        }


def bench(quick: bool, tmp: Path, results: dict[str, Any]) -> None:
    db = tmp / "sessions-10k.db"
    log(f"building a store of {N_SESSIONS} sessions")
    session_ids, info = build_store(db, N_SESSIONS)
    _distinct_questions(db)
    results["db"] = info
    middle = session_ids[len(session_ids) // 2]
    prefix = middle[:-2]
    env = {"PATH": "/usr/bin:/bin", "EVCLI_HOME": str(tmp / "home"), "COLUMNS": "120"}
    commands = {
        "sessions_query_one": [*EVCLI, "sessions", "-q", "#4321", "--db", str(db)],
        "sessions_query_many": [*EVCLI, "sessions", "-q", "order-service", "--db", str(db)],
        "sessions_filtered": [
            *EVCLI,
            "sessions",
            "--env",
            "demo",
            "--verdict",
            "PASS",
            "--since",
            "30d",
            "--db",
            str(db),
        ],
        "trace_prefix": [*EVCLI, "trace", prefix, "--json", "--db", str(db)],
        "trace_last": [*EVCLI, "trace", "last", "--json", "--db", str(db)],
    }
    _check(commands, env, middle, session_ids[-1])
    runs = 3 if quick else 7
    log(f"{runs} interleaved rounds of {len(commands)} commands")
    times = interleaved({**commands, "help_baseline": [*EVCLI, "--help"]}, env, runs)
    results["help_baseline"] = timing(
        times["help_baseline"],
        command=f"{EVCLI_METHOD} --help",
        note="no target: interpreter start and the CLI's imports, for reading the numbers above",
    )
    for name, argv in commands.items():
        median = statistics.median(times[name])
        shown = " ".join(argv[len(EVCLI) :]).replace(str(db), "DB")
        results[name] = timing(
            times[name], command=f"{EVCLI_METHOD} {shown}", target_max_s=TARGET_S, ok=median <= TARGET_S
        )
        log(f"{name} median {median:.3f}s")
    results["in_process_s"] = _in_process(db, prefix)


def _check(commands: dict[str, list[str]], env: dict[str, str], middle: str, newest: str) -> None:
    """Not timed: each command finds what it should."""
    import subprocess

    def run(argv: list[str]) -> str:
        return subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout

    one = json.loads(run([*commands["sessions_query_one"], "--json"]))
    many = json.loads(run([*commands["sessions_query_many"], "--json"]))
    if len(one) != 1 or not one[0]["question"].endswith("#4321") or len(many) != 20:
        raise RuntimeError(f"unexpected `sessions -q` results: {len(one)} / {len(many)}")
    if json.loads(run(commands["trace_prefix"]))["run"]["session_id"] != middle:
        raise RuntimeError("the prefix named another session")
    if json.loads(run(commands["trace_last"]))["run"]["session_id"] != newest:
        raise RuntimeError("`last` named another session")


def main() -> int:
    as_installed()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    results: dict[str, Any] = {"python": sys.version.split()[0]}
    errors: dict[str, str] = {}
    tmp = Path(tempfile.mkdtemp(prefix="evcli-bench-sessions-"))
    try:
        run_sections([("sessions", lambda: bench(args.quick, tmp, results))], errors)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish(results, {}, errors, T0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
