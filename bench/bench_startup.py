#!/usr/bin/env python
"""Time to the first model request of `evcli ask` (issue 23 target: <= 3 s on a quiet machine).

    python bench/bench_startup.py                 # 9 runs (about a minute on 2 cores)
    python bench/bench_startup.py --quick         # 3 runs
    python bench/bench_startup.py --baseline-tree DIR   # also DIR's evcli, runs interleaved A B A B

Prints ONE JSON object to stdout; progress goes to stderr. Measures:

* time_to_first_request: a fresh `sys.executable -m evcli ask --model openai/scripted --api-base URL
  "<question>"` process per run, from just before it is started to the moment the scripted
  OpenAI-compatible server of tests/agents/scripted_server.py (on 127.0.0.1, threads of this process)
  has read the first request's body; the process is then ended (only that first request is timed).
  The runs share one EVCLI_HOME after a warm-up run there (not counted), so the store and the
  knowledge index exist as on a user's second ask; the child gets no LITELLM_LOCAL_MODEL_COST_MAP
  (evcli sets it itself) and no *_API_KEY. Target: median <= 3 s.
* first_run_fresh_home: the same in a new EVCLI_HOME (creates the store, builds kb.db), one run, no target.
* litellm_import: a plain `import litellm` in a fresh process, timed inside it (median), for the machine's
  speed.
* baseline (with --baseline-tree DIR): the same runs with PYTHONPATH=DIR, so DIR's `evcli` package is the
  one imported (e.g. `git archive HEAD | tar -x -C DIR` for the code before a change), each baseline run
  right after a run of this tree (its modules compiled to bytecode first, as this tree's are); the median of
  each and the ratio of the medians.

With --importtime, one more run of this tree under `python -X importtime` lists the slowest imports
before the first request (`hotspots`). The exit status is 0 whenever the measurements completed; read
`summary.all_ok`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import REPO, as_installed, finish, log, r4, run_sections, timing

TARGET_S = 3.0
QUESTION = "Why is payment-service slow?"
WAIT_S = 120.0  # a run whose first request does not come within this long is a failure


class FirstRequest:
    """A scripted-server script that notes when the first request arrives and answers each with an error (the
    process is ended after the first request anyway)."""

    def __init__(self, scripted: Any) -> None:
        self.scripted = scripted
        self.arrived = threading.Event()
        self.at = 0.0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if not self.arrived.is_set():
            self.at = time.perf_counter()
            self.arrived.set()
        return self.scripted.error(400, "bench: only the first request is timed")

    def reset(self) -> None:
        self.arrived.clear()


def child_env(home: str, tree: Path | None) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.endswith("_API_KEY") and key not in ("LITELLM_LOCAL_MODEL_COST_MAP", "PYTHONPATH")
    }
    env |= {"EVCLI_HOME": home, "COLUMNS": "200"}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def first_request_seconds(
    url: str, script: FirstRequest, home: str, tree: Path | None = None, *, importtime: bool = False
) -> tuple[float, str]:
    """Seconds from starting one `evcli ask` process to the server reading its first request, and what the
    process wrote on stderr (the -X importtime lines with `importtime`)."""
    command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "evcli", "ask"]
    command += ["--model", "openai/scripted", "--api-base", f"{url}/v1", QUESTION]
    script.reset()
    started = time.perf_counter()
    with tempfile.TemporaryFile() as stderr:
        # `-m` puts the working directory first on sys.path: the tree's own, so its evcli is the one imported
        process = subprocess.Popen(
            command, cwd=tree or REPO, env=child_env(home, tree), stdout=subprocess.DEVNULL, stderr=stderr
        )
        try:
            arrived = script.arrived.wait(WAIT_S)
        finally:
            process.terminate()  # only the first request is timed; this run's own child, by its handle
            process.wait(30)
        stderr.seek(0)
        written = stderr.read().decode(errors="replace")
    if not arrived:
        raise RuntimeError(f"no request within {WAIT_S:g}s; the process wrote: {written[-600:]}")
    return script.at - started, written


def litellm_import_seconds(runs: int) -> list[float]:
    """A plain `import litellm` in a fresh process, timed inside it (the interpreter's start and exit left out)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    code = "import time; started = time.perf_counter(); import litellm; print(time.perf_counter() - started)"
    return [
        float(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True).stdout)
        for _ in range(runs)
    ]


def slowest_imports(stderr: str, top: int = 12) -> list[dict[str, Any]]:
    """The `top` imports by cumulative time from `-X importtime` output, of the two outer levels (a top-level
    import and what it imports directly)."""
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        self_us, cumulative_us, name = line[len("import time:") :].split("|")
        if not cumulative_us.strip().isdigit() or (len(name) - len(name.lstrip())) > 3:
            continue  # the header, or an import deeper down (its parent's line holds its time)
        rows.append({"module": name.strip(), "cumulative_s": r4(int(cumulative_us) / 1e6)})
    return sorted(rows, key=lambda row: row["cumulative_s"], reverse=True)[:top]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 runs instead of 9")
    parser.add_argument("--runs", type=int, help="counted runs (default 9, 3 with --quick)")
    parser.add_argument("--baseline-tree", type=Path, help="another checkout's root to compare with")
    parser.add_argument("--importtime", action="store_true", help="add the slowest imports of one run")
    options = parser.parse_args()
    runs = options.runs or (3 if options.quick else 9)
    started = time.perf_counter()
    as_installed()
    if options.baseline_tree:
        as_installed(options.baseline_tree / "evcli")
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests.agents import scripted_server

    results: dict[str, Any] = {"load_average_1m": r4(os.getloadavg()[0]), "cpus": os.cpu_count()}
    hotspots: dict[str, Any] = {}
    errors: dict[str, str] = {}
    script = FirstRequest(scripted_server)
    with scripted_server.ScriptedServer(script) as server, tempfile.TemporaryDirectory() as scratch:

        def measure() -> None:
            home = tempfile.mkdtemp(dir=scratch)
            first, _ = first_request_seconds(server.url, script, home)  # warm-up: creates the store and kb.db
            results["first_run_fresh_home"] = {"seconds": r4(first), "ok": None}
            baseline_home = tempfile.mkdtemp(dir=scratch)
            if options.baseline_tree:
                first_request_seconds(server.url, script, baseline_home, options.baseline_tree)
            ours, theirs = [], []
            for run in range(runs):
                ours.append(first_request_seconds(server.url, script, home)[0])
                if options.baseline_tree:
                    theirs.append(first_request_seconds(server.url, script, baseline_home, options.baseline_tree)[0])
                log(f"run {run + 1}/{runs}: {ours[-1]:.2f}s" + (f" (baseline {theirs[-1]:.2f}s)" if theirs else ""))
            median = statistics.median(ours)
            results["time_to_first_request"] = timing(ours, target_s=TARGET_S, ok=median <= TARGET_S)
            if theirs:
                results["baseline"] = timing(theirs, tree=str(options.baseline_tree))
                results["ratio_to_baseline"] = r4(median / statistics.median(theirs))
            if options.importtime:
                _, written = first_request_seconds(server.url, script, home, importtime=True)
                hotspots["imports_before_first_request"] = slowest_imports(written)

        def litellm_import() -> None:
            results["litellm_import"] = timing(litellm_import_seconds(max(3, runs // 3)))

        run_sections([("time_to_first_request", measure), ("litellm_import", litellm_import)], errors)
    finish(results, hotspots, errors, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
