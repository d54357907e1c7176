"""Wall time of the shipped evaluation suites as whole processes (issue: full suite ≤ 30 s).

    python bench/bench_evals.py [--quick]

Prints one JSON object on stdout; progress on stderr. Each suite runs as a
fresh `python -m evcli eval ...` process with a fresh EVCLI_HOME, with the
offline engine, so the number is what a CI job pays.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from _common import as_installed

SUITES = {
    "eval_gatekeeper": ["eval", "gatekeeper", "--json"],
    "eval_cases": ["eval", "cases", "--json"],
    "eval_cases_jobs2": ["eval", "cases", "--json", "--jobs", "2"],
    "eval_retrieval": ["eval", "retrieval", "--json"],
}
TARGET_TOTAL_S = 30.0


def _run(args: list[str], home: str) -> tuple[float, dict]:
    env = dict(os.environ, EVCLI_HOME=home)
    started = time.perf_counter()
    completed = subprocess.run([sys.executable, "-m", "evcli", *args], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(args)} exited {completed.returncode}: {completed.stderr.strip()[:300]}")
    return seconds, json.loads(completed.stdout)


def _summary(name: str, report: dict) -> dict:
    if name == "eval_gatekeeper":
        return {"mutations": report["mutations"], "benign": report["benign"], "targets_met": report["targets_met"]}
    totals = report["totals"]
    keys = ("cases", "pass_rate", "mean_coverage", "precision", "overstatements", "model_calls", "recall_at_k", "mrr")
    return {key: totals[key] for key in keys if key in totals}


def main() -> int:
    as_installed()
    rounds = 1 if "--quick" in sys.argv else 3
    results: dict[str, dict] = {}
    root = tempfile.mkdtemp(prefix="evcli-bench-evals-")
    try:
        for name, args in SUITES.items():
            runs = []
            for attempt in range(rounds):
                home = os.path.join(root, f"{name}-{attempt}")
                seconds, report = _run(args, home)
                runs.append(round(seconds, 3))
                print(f"{name} run {attempt + 1}: {seconds:.2f}s", file=sys.stderr)
            results[name] = {
                "seconds": statistics.median(runs),
                "runs_s": runs,
                "statistic": f"median of {rounds}",
                "result": _summary(name, report),
            }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    total = sum(results[name]["seconds"] for name in ("eval_gatekeeper", "eval_cases", "eval_retrieval"))
    results["full_shipped_suite"] = {
        "seconds": round(total, 3),
        "definition": "eval gatekeeper + eval cases + eval retrieval, sequential processes",
        "target_max_s": TARGET_TOTAL_S,
        "ok": total <= TARGET_TOTAL_S,
    }
    results["summary"] = {
        "all_ok": total <= TARGET_TOTAL_S,
        "missed": [] if total <= TARGET_TOTAL_S else ["full_shipped_suite"],
    }
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
