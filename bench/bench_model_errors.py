#!/usr/bin/env python
"""Time to the model configuration errors of `evcli ask` (issue 12 target: <= 1 s; 10.7 s before).

    python bench/bench_model_errors.py [runs]

Runs the installed CLI as a user would (`python -m evcli ask … --model M`, a fresh process each
time, its own EVCLI_HOME) for: a missing provider key (OPENAI_API_KEY unset), a local
OpenAI-compatible server nobody answers at (`--api-base` on a closed port) and an `ollama/…`
model with OLLAMA_API_BASE on a closed port. Prints one JSON object: per case the median wall
time of the runs, the exit code and the one-line message; and whether litellm was imported on
the way (one more run under `python -X importtime`, not timed; it must not be: the check comes first).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from _common import as_installed

TARGET_S = 1.0
QUESTION = "Why is payment-service slow?"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def cases() -> dict[str, tuple[list[str], dict[str, str]]]:
    port = closed_port()
    return {
        "missing_key": (["--model", "openai/gpt-4o-mini"], {}),
        "api_base_unreachable": (["--model", "openai/local", "--api-base", f"http://127.0.0.1:{port}/v1"], {}),
        "ollama_unreachable": (["--model", "ollama/qwen2.5"], {"OLLAMA_API_BASE": f"http://127.0.0.1:{port}"}),
    }


def run_case(arguments: list[str], extra_env: dict[str, str], home: str, *, imports: bool = False) -> dict[str, object]:
    """One run; with `imports`, under `-X importtime` (slower: not timed) to see whether litellm was imported."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "OLLAMA_API_BASE"}
    env |= {"EVCLI_HOME": home, "COLUMNS": "200", **extra_env}
    command = [sys.executable, *(["-X", "importtime"] if imports else []), "-m", "evcli", "ask", QUESTION, *arguments]
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    seconds = time.perf_counter() - started
    lines = [line for line in completed.stderr.splitlines() if not line.startswith("import time:")]
    imported = {line.rsplit("|", 1)[-1].strip() for line in completed.stderr.splitlines() if "import time:" in line}
    return {
        "seconds": seconds,
        "exit_code": completed.returncode,
        "message": lines[0] if lines else "",
        "litellm_imported": "litellm" in imported,
    }


def main() -> None:
    as_installed()
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    report: dict[str, object] = {"target_s": TARGET_S, "runs": runs, "cases": {}}
    with tempfile.TemporaryDirectory() as home:
        for name, (arguments, extra_env) in cases().items():
            results = [run_case(arguments, extra_env, home) for _ in range(runs)]
            traced = run_case(arguments, extra_env, home, imports=True)
            seconds = [float(result["seconds"]) for result in results]  # type: ignore[arg-type]
            report["cases"][name] = {  # type: ignore[index]
                "median_s": round(statistics.median(seconds), 3),
                "runs_s": [round(s, 3) for s in seconds],
                "exit_code": results[-1]["exit_code"],
                "message": results[-1]["message"],
                "litellm_imported": traced["litellm_imported"],
                "within_target": statistics.median(seconds) <= TARGET_S,
            }
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
