"""Helpers shared by the benchmark scripts in bench/ (bench_core.py, bench_tools.py, bench_chain.py).

The scripts are run as `python bench/bench_X.py`, so Python puts bench/ first on
sys.path and they import this module as `_common` (bench/ is not a package).
It imports only the standard library: importing it loads nothing of evcli and
nothing that could import litellm.
"""

from __future__ import annotations

import gc
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

# Start of the run: the clock of `log` and, passed to `finish`, of summary.total_s.
T0 = time.perf_counter()


def as_installed(package: Path = REPO / "evcli") -> None:
    """Compile evcli's modules to bytecode first, as `pip install` does, so start-up is measured as
    users get it. Run from a source tree under PYTHONDONTWRITEBYTECODE (CI, this machine) every
    process would otherwise compile each module it imports from source, every time: `evcli trace`
    measured 0.47 s instead of 0.34 s that way. compileall runs in a child process and skips
    modules whose bytecode is current. `package`: another checkout's evcli, to compare with."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(package)],
        env={key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"},
        check=True,
    )


def log(message: str) -> None:
    print(f"[bench {time.perf_counter() - T0:6.1f}s] {message}", file=sys.stderr, flush=True)


def r4(x: float) -> float:
    return round(x, 4)


def r2(x: float) -> float:
    return round(x, 2)


def percentile(samples: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, int(round(fraction * len(ordered) + 0.5)) - 1))]


def timing(samples: list[float], **extra: Any) -> dict[str, Any]:
    return {
        "seconds": r4(statistics.median(samples)),
        "statistic": f"median of {len(samples)}",
        "runs_s": [r4(t) for t in samples],
        **extra,
    }


def profile_top(
    profiler_or_stats, top: int = 8, evcli_only_cumtime: bool = False, libraries: bool = False
) -> dict[str, list[dict[str, Any]]]:
    """The `top` functions of a cProfile.Profile or pstats.Stats, by own time and by cumulative time.

    by_tottime: all functions. Cumulative time: with evcli_only_cumtime, only evcli's own code
    (key "by_cumtime_evcli_code"); otherwise everything but frozen bootstrap modules and builtins.exec
    (key "by_cumtime"). With libraries, also "by_cumtime_libraries": code outside evcli/, bench/ and
    tests/, leaving out the bootstrap, builtins.exec and the threading / socketserver machinery.
    """
    stats = profiler_or_stats if isinstance(profiler_or_stats, pstats.Stats) else pstats.Stats(profiler_or_stats)
    rows = []
    for (filename, line, func), (_, ncalls, tottime, cumtime, _) in stats.stats.items():
        short = filename
        for marker in ("/site-packages/", "/lib/python3"):
            if marker in filename:
                short = filename.split(marker, 1)[1]
                break
        if str(REPO) in filename:
            short = os.path.relpath(filename, REPO)
        rows.append(
            {
                "function": f"{short}:{line}({func})",
                "ncalls": ncalls,
                "tottime_s": r4(tottime),
                "cumtime_s": r4(cumtime),
            }
        )
    by_tot = sorted(rows, key=lambda r: r["tottime_s"], reverse=True)[:top]
    keep = (
        (lambda r: r["function"].startswith("evcli/"))
        if evcli_only_cumtime
        else (lambda r: "<frozen" not in r["function"] and "builtins.exec" not in r["function"])
    )
    by_cum = sorted(filter(keep, rows), key=lambda r: r["cumtime_s"], reverse=True)[:top]
    found = {"by_tottime": by_tot, ("by_cumtime_evcli_code" if evcli_only_cumtime else "by_cumtime"): by_cum}
    if libraries:
        found["by_cumtime_libraries"] = sorted(
            (
                r
                for r in rows
                if not r["function"].startswith(("evcli/", "bench/", "tests/"))
                and "<frozen" not in r["function"]
                and "{built-in method builtins.exec}" not in r["function"]
                and "threading.py" not in r["function"]
                and "socketserver.py" not in r["function"]
            ),
            key=lambda r: r["cumtime_s"],
            reverse=True,
        )[:top]
    return found


def run_cmd(
    argv: list[str], env: dict[str, str], expect: tuple[int, ...] = (0,), argv_shown: int | None = None
) -> tuple[float, subprocess.CompletedProcess]:
    """(wall seconds, completed process) of `argv` run from the repository root; raises on an unexpected exit.

    argv_shown: quote only the first that many arguments (then "...") in the error message.
    """
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, timeout=120)
    elapsed = time.perf_counter() - start
    if proc.returncode not in expect:
        shown = " ".join(argv) if argv_shown is None else " ".join(argv[:argv_shown]) + " ..."
        raise RuntimeError(f"{shown} exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-600:]}")
    return elapsed, proc


def import_times(
    argv_tail: list[str], env: dict[str, str], argv_shown: int | None = None
) -> dict[str, tuple[int, int, int]]:
    """module -> (self us, cumulative us, nesting depth) from `python -X importtime`."""
    _, proc = run_cmd([sys.executable, "-X", "importtime", *argv_tail], env, argv_shown=argv_shown)
    found = {}
    for line in proc.stderr.decode(errors="replace").splitlines():
        if line.startswith("import time:") and "|" in line:
            parts = line[len("import time:") :].split("|")
            name = parts[2].rstrip()
            try:
                found[name.strip()] = (int(parts[0]), int(parts[1]), (len(name) - len(name.lstrip()) - 1) // 2)
            except ValueError:
                continue  # the header line
    return found


def to_json(value: Any, indent: int = 0) -> str:
    """Indented JSON whose innermost objects and lists stay on one line each."""
    if (
        isinstance(value, (dict, list))
        and value
        and any(isinstance(v, (dict, list)) for v in (value.values() if isinstance(value, dict) else value))
    ):
        pad, inner = " " * indent, " " * (indent + 2)
        if isinstance(value, dict):
            items = [f"{inner}{json.dumps(k)}: {to_json(v, indent + 2)}" for k, v in value.items()]
            return "{\n" + ",\n".join(items) + f"\n{pad}}}"
        return "[\n" + ",\n".join(f"{inner}{to_json(v, indent + 2)}" for v in value) + f"\n{pad}]"
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def run_sections(sections, errors: dict[str, str]) -> None:
    """Run each (name, callable); a failing section is reported in `errors` and the others still run."""
    for name, section in sections:
        try:
            section()
        except Exception as exc:  # one broken path must not hide the others
            log(f"{name}: FAILED: {type(exc).__name__}: {exc}")
            errors[name] = f"{type(exc).__name__}: {exc}"
        gc.collect()


def finish(results: dict[str, Any], hotspots: dict[str, Any], errors: dict[str, str], started: float) -> None:
    """Add the verdict (`summary`) and any `hotspots` to `results`, log it, print `results` as ONE JSON object.

    A measurement counts when it is a dict whose "ok" is not None; `started` is the
    perf_counter() value that summary.total_s is measured from.
    """
    measured = {k: v for k, v in results.items() if isinstance(v, dict) and "ok" in v and v["ok"] is not None}
    missed = [k for k, v in measured.items() if not v["ok"]]
    results["summary"] = {
        "all_ok": not missed and not errors,
        "missed": missed,
        "errors": errors,
        "total_s": round(time.perf_counter() - started, 1),
    }
    if hotspots:
        results["hotspots"] = hotspots
    log(f"done in {results['summary']['total_s']}s; missed: {missed or 'none'}")
    print(to_json(results))
