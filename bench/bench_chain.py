#!/usr/bin/env python
"""Benchmarks of the whole diagnosis chain (`evcli ask`), each against its target.

    python bench/bench_chain.py            # full run (about a minute on 2 cores)
    python bench/bench_chain.py --quick    # fewer repetitions, for smoke tests

Prints ONE JSON object to stdout; progress goes to stderr. Measures:

* ask_offline_process: whole-process wall time of `sys.executable -m evcli ask
  "<question>"` with the offline engines and the packaged demo environment, for
  six demo questions (narrow and broad, English and Chinese). Each question
  gets its own fresh EVCLI_HOME: its first run there (`first_run`, which also
  builds the knowledge index kb.db) is reported apart from the median of the
  runs that follow (interleaved across questions). Target: the per-question
  median <= 1.5 s; the value reported is the max over questions.
* orchestration_overhead_per_stage: in process, `Pipeline.ask()` with every
  role played by litellm models (`Models(default="openai/scripted")`) against
  the scripted OpenAI-compatible server of tests/agents/scripted_server.py on
  127.0.0.1, which plays all four roles honestly (planner plan; executor one
  tool call, then a valid executor_evidence_v2 document citing the invocation
  id, raw path and ref text it was sent; verifier PASS; composer answer with
  [1]). Per ask: overhead = wall - server handling time (request received to
  response written, measured in the server) - tool execution time (sum of
  tool_invocation.duration_ms), divided by the number of model calls
  (agent_step rows). The first ask (litellm's one-time import) is reported
  apart; the median over the next asks must be <= 50 ms, p90 is reported too.

When a target is missed, an `-X importtime` breakdown and/or a cProfile of that
path is added under "hotspots". The exit status is 0 whenever the measurements
completed; read `summary.all_ok` (or `summary.missed`) for the verdict.
"""

from __future__ import annotations

import os

# Before anything can import litellm: use the packaged price map, never fetch it.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import argparse  # noqa: E402
import cProfile  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import pstats  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from _common import T0, as_installed, finish, import_times, log, percentile, profile_top, r2, r4, run_cmd, run_sections  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

EVCLI = [sys.executable, "-m", "evcli"]
EVCLI_METHOD = "sys.executable -m evcli"
BASELINE_CODE = "import typer, rich, pydantic, sqlite_utils"

TARGETS = {
    "ask_offline_process_s": 1.5,
    "overhead_per_stage_ms": 50.0,
}

# (question, scope, language): the demo questions timed as whole processes.
ASK_QUESTIONS = [
    ("Only confirm whether payment-service has a HighCPUUsage alert firing", "narrow", "en"),
    ("只确认 inventory-service 是否存在 HikariCP 连接池耗尽日志。", "narrow", "zh"),
    ("Why is order-service failing? It keeps restarting and checkout requests time out.", "broad", "en"),
    ("Why is user-service slow?", "broad", "en"),
    ("为什么 order-service 一直重启？", "broad", "zh"),
    ("What is wrong with node-worker-01 disk?", "broad", "en"),
]

# question -> the one tool call the scripted Executor makes for it (all find evidence in the demo env).
LLM_QUESTIONS = {
    "Why is payment-service CPU usage high?": (
        "query_metrics",
        {"service": "payment-service", "alertname": "HighCPUUsage"},
    ),
    "Why is user-service slow?": ("query_metrics", {"service": "user-service", "alertname": "SlowResponse"}),
    "Why does order-service keep restarting?": (
        "query_logs",
        {"service": "order-service", "level": "ERROR", "limit": 5},
    ),
}
DUMMY_KEY = "sk-bench-chain-dummy-0000"
ARGV_SHOWN = 4  # error messages of run_cmd quote only "python -m evcli ask", not the long question
PROFILE = {"top": 10, "evcli_only_cumtime": True, "libraries": True}  # profile_top options of this bench


# =============================================================================
# 1. `evcli ask` as a whole fresh process
# =============================================================================

_VERDICT = re.compile(r"^verdict (PASS|LOW_CONFID|REJECT) · gate (\S+)", re.MULTILINE)


def _verdict(proc: subprocess.CompletedProcess) -> str:
    found = _VERDICT.search(proc.stdout.decode(errors="replace"))
    if not found:
        raise RuntimeError(f"`evcli ask` printed no verdict line: {proc.stdout.decode(errors='replace')[-300:]}")
    return f"{found.group(1)} (gate {found.group(2)})"


def ask_hotspots(question: str, env: dict[str, str], tmp: Path) -> dict[str, Any]:
    """-X importtime and cProfile of one warm (not first) `evcli ask` process."""
    argv = ["-m", "evcli", "ask", question]
    base = import_times(["-c", BASELINE_CODE], env, argv_shown=ARGV_SHOWN)
    found = import_times(argv, env, argv_shown=ARGV_SHOWN)
    extra = {name: t for name, t in found.items() if name not in base}
    top_self = sorted(extra.items(), key=lambda item: item[1][0], reverse=True)[:10]
    biggest = sorted(found.items(), key=lambda item: item[1][1], reverse=True)[:12]
    profile_path = tmp / "ask-profile.prof"
    run_cmd([sys.executable, "-m", "cProfile", "-o", str(profile_path), *argv], env, argv_shown=ARGV_SHOWN)
    return {
        "question": question,
        "importtime": {
            "modules_imported": len(found),
            "total_top_level_cumulative_s": r4(sum(c for (_, c, d) in found.values() if d == 0) / 1e6),
            "extra_vs_baseline": {
                "baseline": BASELINE_CODE,
                "count": len(extra),
                "self_time_total_s": r4(sum(t[0] for t in extra.values()) / 1e6),
            },
            "top_by_self_time_not_in_baseline": [
                {"module": n, "self_s": r4(s / 1e6), "cumulative_s": r4(c / 1e6)} for n, (s, c, _) in top_self
            ],
            "largest_import_trees": [
                {"module": n, "depth": d, "cumulative_s": r4(c / 1e6), "in_baseline": n in base}
                for n, (_, c, d) in biggest
            ],
        },
        "cprofile": profile_top(pstats.Stats(str(profile_path)), **PROFILE),
    }


def bench_ask_process(
    quick: bool, env: dict[str, str], tmp: Path, results: dict[str, Any], hotspots: dict[str, Any]
) -> None:
    runs = 3 if quick else 5
    target = TARGETS["ask_offline_process_s"]
    homes = [tmp / f"ask-home-{i}" for i in range(len(ASK_QUESTIONS))]
    env_for = [{**env, "EVCLI_HOME": str(home)} for home in homes]

    # Warm-up, not counted: bytecode and page caches (its own home, so every question's first run stays first).
    run_cmd(
        [*EVCLI, "ask", ASK_QUESTIONS[0][0]], {**env, "EVCLI_HOME": str(tmp / "ask-home-warmup")}, argv_shown=ARGV_SHOWN
    )

    first: list[float] = []
    verdicts: list[str] = []
    for (question, _, _), qenv, home in zip(ASK_QUESTIONS, env_for, homes, strict=True):
        elapsed, proc = run_cmd([*EVCLI, "ask", question], qenv, argv_shown=ARGV_SHOWN)
        if not (home / "kb.db").exists():
            raise RuntimeError(f"first run in a fresh EVCLI_HOME built no kb.db for {question!r}")
        first.append(elapsed)
        verdicts.append(_verdict(proc))
        log(f"ask: first run (fresh EVCLI_HOME, builds kb.db) {elapsed:.3f}s · {verdicts[-1]} · {question}")

    log(f"ask: {runs} interleaved rounds over {len(ASK_QUESTIONS)} questions (+ baseline imports)")
    times: list[list[float]] = [[] for _ in ASK_QUESTIONS]
    baseline: list[float] = []
    for round_index in range(runs):
        baseline.append(run_cmd([sys.executable, "-c", BASELINE_CODE], env, argv_shown=ARGV_SHOWN)[0])
        for i, ((question, _, _), qenv) in enumerate(zip(ASK_QUESTIONS, env_for, strict=True)):
            elapsed, proc = run_cmd([*EVCLI, "ask", question], qenv, argv_shown=ARGV_SHOWN)
            times[i].append(elapsed)
            if _verdict(proc) != verdicts[i]:
                raise RuntimeError(f"{question!r}: verdict changed from {verdicts[i]} to {_verdict(proc)}")
        log(f"ask: round {round_index + 1}/{runs}: " + ", ".join(f"{t[-1]:.2f}" for t in times))

    per_question = []
    for (question, scope, language), samples, first_s, verdict in zip(
        ASK_QUESTIONS, times, first, verdicts, strict=True
    ):
        median = statistics.median(samples)
        per_question.append(
            {
                "question": question,
                "scope": scope,
                "language": language,
                "verdict": verdict,
                "first_run_s": r4(first_s),
                "median_s": r4(median),
                "statistic": f"median of {len(samples)} subsequent runs",
                "runs_s": [r4(t) for t in samples],
                "ok": median <= target,
            }
        )
    worst = max(per_question, key=lambda q: q["median_s"])
    slowest_first = max(per_question, key=lambda q: q["first_run_s"])
    results["ask_offline_process"] = {
        "seconds": worst["median_s"],
        "statistic": "max over questions of the per-question median of the subsequent runs",
        "slowest_question": worst["question"],
        "command": f'{EVCLI_METHOD} ask "<question>" (offline engines, packaged demo env, EVCLI_HOME = fresh temp dir per question)',
        "target_max_s": target,
        "ok": all(q["ok"] for q in per_question),
        "first_run": {
            "max_s": slowest_first["first_run_s"],
            "question": slowest_first["question"],
            "median_s": r4(statistics.median(first)),
            "note": "first process in a fresh EVCLI_HOME: also creates evcli.db and builds the knowledge index kb.db; "
            "reported, not held to the target",
        },
        "baseline_imports_s": {
            "seconds": r4(statistics.median(baseline)),
            "statistic": f"median of {len(baseline)}",
            "command": f"{sys.executable} -c {BASELINE_CODE!r}",
            "note": "reference only",
        },
        "per_question": per_question,
    }
    log(
        f"ask: max per-question median {worst['median_s']:.3f}s ({worst['question']}); "
        f"first runs up to {slowest_first['first_run_s']:.3f}s"
    )
    if not results["ask_offline_process"]["ok"]:
        log("ask: target missed, collecting -X importtime and a cProfile of the slowest question")
        hotspots["ask_offline_process"] = ask_hotspots(worst["question"], env_for[per_question.index(worst)], tmp)


# =============================================================================
# 2. orchestration overhead per model call, litellm against a scripted server
# =============================================================================

_BLOCK = re.compile(r'<evidence invocation="(\d+)" tool="([a-z_]+)" status="([a-z_]+)">\n(.*?)\n</evidence>', re.DOTALL)


class HonestModel:
    """Plays Planner, Executor, Verifier and Composer the way a well-behaved model would."""

    def __init__(self, scripted) -> None:
        self.s = scripted  # the tests.agents.scripted_server module

    @staticmethod
    def payload(body: dict[str, Any]) -> dict[str, Any]:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return json.loads(user.split("\n", 1)[1])

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        role = self.s.role_of(body)
        return getattr(self, role)(body)

    def planner(self, body):
        question = self.payload(body)["question"]
        name, arguments = LLM_QUESTIONS[question]
        return self.s.answer(
            {
                "selected_skill": None,
                "selection_reason": "scripted plan for the benchmark",
                "plan": [f"{name} {json.dumps(arguments)}"],
                "reasoning": "confirm with recorded evidence first",
            }
        )

    def executor(self, body):
        if not self.s.tool_messages(body) and body.get("tools"):
            question = self.payload(body)["question"]
            return self.s.calls(LLM_QUESTIONS[question])
        blocks = []
        for content in self.s.tool_messages(body):
            for invocation_id, tool, status, text in _BLOCK.findall(content):
                refs = [line.split(": ", 1) for line in text.splitlines() if line.startswith("$.") and ": " in line]
                blocks.append((int(invocation_id), tool, status, refs))
        invocation_id, tool, status, refs = next(b for b in blocks if b[2] == "supported" and b[3])
        raw_path, text = refs[0]
        claim = {
            "claim_id": "claim-1",
            "claim_type": "observation",
            "claim_text": f"Recorded: {text}",
            "support_level": "direct",
            "evidence_bindings": [
                {
                    "source_type": "tool_trace",
                    "source_id": "",
                    "tool_name": tool,
                    "source_invocation_id": invocation_id,
                    "raw_path": raw_path,
                    "evidence_excerpt": text,
                }
            ],
        }
        return self.s.answer(
            {
                "answer_version": "executor_evidence_v2",
                "claims": [claim],
                "hypotheses": [],
                "recommended_actions": [],
                "missing_info": [],
            }
        )

    def verifier(self, body):
        claims = self.payload(body)["verified_claims"]
        checks = [
            {
                "claim_id": c["claim_id"],
                "verification": "direct_support",
                "is_critical": True,
                "note": "stated by the excerpt",
            }
            for c in claims
        ]
        return self.s.answer(
            {
                "verdict": "PASS" if claims else "LOW_CONFID",
                "groundedness_score": 1.0 if claims else 0.0,
                "critical_fact_count": len(claims),
                "claim_checks": checks,
                "facts_checked": [c["claim_text"] for c in claims],
                "rationale": "every critical claim is stated by its evidence" if claims else "no verified claims",
            }
        )

    def composer(self, body):
        payload = self.payload(body)
        lines = [f"{c['claim_text']} [{c['citation']}]" for c in payload["allowed_claims"]]
        text = " ".join(lines) or "The evidence is incomplete; no finding was verified."
        return self.s.answer(
            {"answer_summary": lines[0] if lines else text, "recommended_actions": [], "user_facing_answer": text}
        )


def _one_ask(server, store, models, rules, question: str) -> dict[str, Any]:
    from evcli.pipeline import Pipeline

    first_request = len(server.requests)
    started = time.perf_counter()
    # A fresh Pipeline per ask, as each `evcli ask` process builds one (tools, engines, environment overview).
    pipeline = Pipeline(store=store, rules=rules, models=models, env_spec={})
    result = pipeline.ask(question)
    wall = time.perf_counter() - started
    deadline = time.perf_counter() + 2.0  # the server thread records its time just after the client has its reply
    while len(server.handling_seconds) < len(server.requests) and time.perf_counter() < deadline:
        time.sleep(0.001)
    handling = server.handling_seconds[first_request:]
    document = store.load(result.session_id)
    steps, invocations = document.steps, document.invocations
    tool_s = sum(i.duration_ms for i in invocations) / 1000
    if result.verdict != "PASS" or result.fallback is not None or len(result.claims) != 1:
        raise RuntimeError(
            f"the honest scripted run did not pass: verdict {result.verdict}, fallback "
            f"{result.fallback}, gate {result.gate}"
        )
    if "[1]" not in result.answer.user_facing_answer or len(invocations) != 1:
        raise RuntimeError(f"unexpected answer or invocations: {result.answer}, {len(invocations)} invocations")
    if len(steps) != len(handling):
        raise RuntimeError(f"{len(steps)} agent_step rows but {len(handling)} requests reached the server")
    server_s = sum(handling)
    per_call = (wall - server_s - tool_s) / len(steps)
    engine_minus_server = [s.duration_ms / 1000 - h for s, h in zip(steps, handling, strict=True)]
    return {
        "question": question,
        "wall_s": wall,
        "server_s": server_s,
        "tool_s": tool_s,
        "model_calls": len(steps),
        "roles": [s.agent for s in steps],
        "per_call_s": per_call,
        # where the overhead sits: inside the engine call (litellm + adapter) or around it (pipeline, store, gate ...)
        "engine_minus_server_s": sum(engine_minus_server),
        "outside_engine_s": wall - sum(s.duration_ms for s in steps) / 1000 - tool_s,
    }


def bench_orchestration(quick: bool, tmp: Path, results: dict[str, Any], hotspots: dict[str, Any]) -> None:
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from evcli.agents.roles import Models
    from evcli.gatekeeper.rules import load_rules
    from evcli.store.db import TraceStore
    from tests.agents import scripted_server

    n_asks = 5 if quick else 12
    target_ms = TARGETS["overhead_per_stage_ms"]
    saved = {k: os.environ.get(k) for k in ("OPENAI_API_KEY", "EVCLI_HOME")}
    os.environ["OPENAI_API_KEY"] = DUMMY_KEY
    os.environ["EVCLI_HOME"] = str(tmp / "llm-home")  # kb.db goes next to the store, never into the user's dir
    litellm_before = "litellm" in sys.modules
    questions = list(LLM_QUESTIONS)
    try:
        with (
            scripted_server.ScriptedServer(HonestModel(scripted_server)) as server,
            TraceStore(tmp / "llm-home" / "evcli.db") as store,
        ):
            models = Models(default="openai/scripted", api_base=server.url + "/v1")
            rules = load_rules()
            log("orchestration: first (cold) ask, including litellm's one-time import")
            cold = _one_ask(server, store, models, rules, questions[0])
            log(f"orchestration: cold ask {cold['wall_s']:.3f}s wall, {cold['per_call_s'] * 1000:.1f} ms/call")
            asks = []
            for i in range(n_asks):
                asks.append(_one_ask(server, store, models, rules, questions[i % len(questions)]))
                a = asks[-1]
                log(
                    f"orchestration: ask {i + 1}/{n_asks}: wall {a['wall_s'] * 1000:.0f} ms, server "
                    f"{a['server_s'] * 1000:.1f} ms, tools {a['tool_s'] * 1000:.1f} ms, {a['model_calls']} calls "
                    f"-> {a['per_call_s'] * 1000:.1f} ms/call"
                )
            per_call_ms = [a["per_call_s"] * 1000 for a in asks]
            median = statistics.median(per_call_ms)
            results["orchestration_overhead_per_stage"] = {
                "ms_per_call": r2(median),
                "statistic": f"median of {n_asks} asks after one cold warm-up ask",
                "p90_ms": r2(percentile(per_call_ms, 0.9)),
                "min_ms": r2(min(per_call_ms)),
                "max_ms": r2(max(per_call_ms)),
                "target_max_ms": target_ms,
                "ok": median <= target_ms,
                "definition": "(ask wall - server handling (request received to response written, summed) - "
                "sum(tool_invocation.duration_ms)) / agent_step rows",
                "runs_ms_per_call": [r2(x) for x in per_call_ms],
                "model_calls_per_ask": sorted({a["model_calls"] for a in asks}),
                "roles": asks[0]["roles"],
                "medians_per_ask_ms": {
                    "wall": r2(statistics.median(a["wall_s"] for a in asks) * 1000),
                    "server_handling": r2(statistics.median(a["server_s"] for a in asks) * 1000),
                    "tools": r2(statistics.median(a["tool_s"] for a in asks) * 1000),
                    "engine_call_minus_server": r2(statistics.median(a["engine_minus_server_s"] for a in asks) * 1000),
                    "outside_engine_calls": r2(statistics.median(a["outside_engine_s"] for a in asks) * 1000),
                },
                "breakdown_note": "engine_call_minus_server = sum(agent_step.duration_ms) - server time (litellm + "
                "adapter + HTTP client); outside_engine_calls = wall - sum(agent_step.duration_ms) - "
                "tools (session setup, environment overview, store reads/writes, gate, prompts)",
                "cold_first_ask": {
                    "ms_per_call": r2(cold["per_call_s"] * 1000),
                    "wall_ms": r2(cold["wall_s"] * 1000),
                    "server_handling_ms": r2(cold["server_s"] * 1000),
                    "tools_ms": r2(cold["tool_s"] * 1000),
                    "model_calls": cold["model_calls"],
                    "litellm_imported_before": litellm_before,
                    "note": "includes litellm's one-time import; not held to the target",
                },
                "setup": {
                    "models": "Models(default='openai/scripted', api_base=<scripted server>/v1)",
                    "server": "tests.agents.scripted_server.ScriptedServer on 127.0.0.1 (threads in this process)",
                    "questions": questions,
                    "pipeline": "a fresh Pipeline per ask, one shared TraceStore",
                    "env": "packaged demo environment",
                },
            }
            log(f"orchestration: median {median:.1f} ms/call, p90 {percentile(per_call_ms, 0.9):.1f} ms/call")
            if median > target_ms:
                log("orchestration: target missed, profiling one ask")
                profiler = cProfile.Profile()
                profiler.enable()
                try:
                    _one_ask(server, store, models, rules, questions[0])
                finally:
                    profiler.disable()
                hotspots["orchestration_overhead_per_stage"] = {
                    "cprofile_one_warm_ask": profile_top(profiler, **PROFILE),
                    "note": "the scripted server runs in this process's threads: its handling shows up too",
                }
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# =============================================================================


def main() -> int:
    as_installed()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, for smoke tests")
    options = parser.parse_args()

    results: dict[str, Any] = {
        "meta": {
            "python": platform.python_version(),
            "executable": sys.executable,
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "mode": "quick" if options.quick else "full",
            "evcli_invocation": EVCLI_METHOD,
            "litellm_local_model_cost_map": os.environ["LITELLM_LOCAL_MODEL_COST_MAP"],
            "started_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
    }
    hotspots: dict[str, Any] = {}
    errors: dict[str, str] = {}
    tmp = Path(tempfile.mkdtemp(prefix="evcli-bench-chain-"))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    env.pop("OPENAI_API_KEY", None)  # the offline asks need no key
    try:
        run_sections(
            (
                ("ask_process", lambda: bench_ask_process(options.quick, env, tmp, results, hotspots)),
                ("orchestration", lambda: bench_orchestration(options.quick, tmp, results, hotspots)),
            ),
            errors,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    finish(results, hotspots, errors, T0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
