#!/usr/bin/env python
"""Benchmarks of evcli's core paths, each against its target.

    python bench/bench_core.py            # full run (about a minute on 2 cores)
    python bench/bench_core.py --quick    # fewer repetitions, for smoke tests

Prints ONE JSON object to stdout; progress goes to stderr. Measures:

* gate_10k / gate_20k / linearity: in-process wall time of
  `evcli.gatekeeper.engine.gate()` on synthetic sessions (best of N runs, the
  `normalize` cache cleared before each run, as in a fresh CLI process).
* gate_10k_real: the same on 10,000 bindings of the offline chain's real
  sessions on every packaged environment (typed-fact rules running on each),
  with the time the run takes without the two fact rules.
* baseline_imports / help / gate_file (+ ratios): cold start of fresh
  processes, all run as `sys.executable ...` (evcli as `sys.executable -m
  evcli`), interleaved so machine noise hits every command alike.
* litellm_imported: whether `--help` and `gate FILE` load (or even try to
  import) litellm, probed from inside the process at exit.
* sessions_limit_20 / trace_one: whole-process wall time of `evcli sessions`
  and `evcli trace` against a store holding 10,000 sessions.

When a target is missed, a profile of that path is added under "hotspots".
The exit status is 0 whenever the measurements completed; read
`summary.all_ok` (or `summary.missed`) for the verdict.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import platform
import pstats
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import T0, as_installed, finish, import_times, log, profile_top, r4, run_cmd, run_sections, timing

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_sessions"
GATE_SAMPLE = SAMPLES / "narrow-payment-highcpu.json"
DB_BASE_SAMPLE = SAMPLES / "broad-order-service.json"

EVCLI = [sys.executable, "-m", "evcli"]
EVCLI_METHOD = "sys.executable -m evcli"
BASELINE_CODE = "import typer, rich, pydantic, sqlite_utils"
BASELINE = [sys.executable, "-c", BASELINE_CODE]

TARGETS = {
    "gate_10k_s": 1.0,
    "linearity": 2.2,
    "cold_start_ratio": 1.5,
    "db_command_s": 0.3,
}


# =============================================================================
# 1. gate() on a synthetic session
# =============================================================================

SERVICES = [
    "order-service",
    "payment-service",
    "inventory-service",
    "checkout-gateway",
    "user-service",
    "shipping-service",
    "pricing-service",
    "notification-service",
]
NEGATIONS = frozenset("not no never none nothing nobody neither nor without cannot unable".split())
_STRIP = ".,;:()[]{}\"'"


_TRAILING_WORD = re.compile(r"([A-Za-z']+)[_-]*$")


def _is_negation(word: str) -> bool:
    word = word.strip(_STRIP).lower()
    return word in NEGATIONS or word.endswith("n't")


def _negates_next(previous: str) -> bool:
    """Whether the word before a span ends in a negation ("message=no" does)."""
    found = _TRAILING_WORD.search(previous)
    return bool(found) and _is_negation(found.group(1))


def _pod(rng: random.Random, service: str) -> str:
    alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
    return f"{service}-{rng.randrange(16**8):08x}-{''.join(rng.choice(alnum) for _ in range(5))}"


def _stamp(rng: random.Random) -> datetime:
    return datetime(2026, 7, 8, 20, 0, 0) + timedelta(seconds=rng.randrange(4 * 3600))


def _log_text(rng: random.Random, service: str) -> str:
    ts = _stamp(rng).strftime("%Y-%m-%d %H:%M:%S")
    pod = _pod(rng, service)
    other = rng.choice([s for s in SERVICES if s != service])
    kind = rng.randrange(6)
    if kind == 0:
        total = rng.choice([20, 30, 50, 100])
        return (
            f"{ts} ERROR {pod} HikariPool-1 - Connection is not available, request timed out after "
            f"{rng.choice([5000, 10000, 30000])}ms (total={total}, active={total}, idle=0, waiting={rng.randrange(1, 80)})"
        )
    if kind == 1:
        limit = rng.choice([2, 4, 8])
        used = round(limit * rng.uniform(0.9, 0.99), 1)
        return (
            f"{ts} WARN {pod} [GC] Full GC (Allocation Failure) {used}GB->{round(used - 0.1, 1)}GB({limit}.0GB), "
            f"{rng.uniform(0.5, 4):.2f}s, heap after collection still above {rng.randrange(85, 99)}% of max"
        )
    if kind == 2:
        return (
            f"{ts} ERROR {pod} Container {service} was OOMKilled (exit code 137), restarting "
            f"(restart_count={rng.randrange(1, 12)}, memory_limit={rng.choice([1, 2, 4])}Gi)"
        )
    if kind == 3:
        return (
            f"{ts} ERROR {pod} o.a.k.c.c.internals.ConsumerCoordinator - Offset commit failed on partition "
            f"orders-{rng.randrange(24)} at offset {rng.randrange(10**6, 10**8)}: The request timed out."
        )
    if kind == 4:
        return (
            f"{ts} WARN {pod} http-nio-8080-exec-{rng.randrange(1, 200)} - Upstream call to {other} failed with "
            f"HTTP 503 after {rng.randrange(100, 9000)}ms (attempt {rng.randrange(1, 4)}/3, circuit=half_open)"
        )
    return (
        f"{ts} ERROR {pod} SQLTransientConnectionException: {service}-db-primary:3306 - Lock wait timeout "
        f"exceeded; try restarting transaction (waited {rng.randrange(5, 60)}s, txn_id={rng.randrange(10**9)})"
    )


_ALERTS = [
    ("HighCPUUsage", "CPU usage of {s} above {t}% for {d} minutes"),
    ("HighMemoryUsage", "JVM heap of {s} above {t}%"),
    ("HighErrorRate", "5xx ratio of {s} above {t}%"),
    ("HighLatencyP99", "p99 latency of {s} above target"),
    ("DiskPressure", "disk usage of {s} above {t}%"),
]


def _alert_text(rng: random.Random, service: str) -> str:
    name, summary = rng.choice(_ALERTS)
    threshold = rng.choice([70, 80, 85, 90])
    duration = rng.randrange(5, 60)
    active = _stamp(rng).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (
        f"{name}, service={service}, instance={_pod(rng, service)}, severity={rng.choice(['warning', 'critical'])}, "
        f"state=firing, current={rng.randrange(threshold + 1, 100)}%, threshold={threshold}%, duration={duration}m, "
        f"active_at={active}, summary={summary.format(s=service, t=threshold, d=duration)}"
    )


_RUNBOOKS = [
    (
        "high-memory",
        "Immediate steps",
        "If a JVM service shows repeated Full GC with the heap near its limit, capture a heap "
        "dump with jmap before restarting the pod, then compare the dominator tree with the last healthy dump.",
    ),
    (
        "mysql-connection-pool",
        "Diagnosis",
        "When HikariCP reports total={n} and active={n} with requests waiting, check for "
        "long transactions first; raise maximumPoolSize only after slow queries are ruled out.",
    ),
    (
        "kafka-consumer-lag",
        "Mitigation",
        "If consumer lag on a partition grows past {n} messages, scale the consumer group "
        "to at most one instance per partition and check for rebalances in the last {m} minutes.",
    ),
    (
        "upstream-503",
        "Triage",
        "A burst of HTTP 503 from an upstream usually means its pods are not ready; check readiness "
        "probes and the last deployment before retrying, and keep retries at {m} or fewer.",
    ),
    (
        "disk-pressure",
        "Immediate steps",
        "Free space by rotating logs older than {m} days; do not delete data volumes. If usage "
        "stays above {n}% after rotation, expand the volume during the next change window.",
    ),
]


def _knowledge_text(rng: random.Random, service: str) -> str:
    topic, section, body = rng.choice(_RUNBOOKS)
    body = body.format(n=rng.choice([20, 50, 85, 90, 1000, 5000]), m=rng.randrange(2, 30))
    return f"runbooks/{topic}.md \u203a {section} (rev {rng.randrange(1, 40)}, {service}): {body}"


def _no_evidence_text(rng: random.Random, tool: str, service: str) -> str:
    keyword = rng.choice(["deadlock", "HikariCP", "OOMKilled", "connection reset", "TLS handshake", "503"])
    message = rng.choice(
        [
            "no matching log lines",
            "no matching log lines",
            "no series matched",
            "\u672a\u627e\u5230\u5339\u914d\u7684\u65e5\u5fd7",
        ]
    )
    return (
        f"{tool} returned no evidence; evidence_status=no_evidence; query={service} {keyword}; "
        f"topic=application-logs; window={rng.randrange(1, 24)}h; total=0; message={message}"
    )


def _pick_span(
    rng: random.Random, words: list[str], lo: int, hi: int, min_chars: int, max_chars: int, need_digit: bool = False
) -> tuple[int, int, str] | None:
    """A run of whole words words[a:b] (lo <= a < b <= hi) not preceded by a negation."""
    for _ in range(200):
        if hi <= lo:
            return None
        a = rng.randrange(lo, hi)
        if a > 0 and _negates_next(words[a - 1]):
            continue
        want = rng.randint(min_chars, max_chars)
        b, length = a + 1, len(words[a])
        while b < hi and length < want:
            length += 1 + len(words[b])
            b += 1
        if length < min_chars:
            continue
        span = " ".join(words[a:b])
        if need_digit and not any(c.isdigit() for c in span):
            continue
        return a, b, span
    return None


def _excerpt(rng: random.Random, text: str) -> tuple[str, str, str]:
    """(variant, excerpt, expected match kind) for one ref text."""
    words = text.split(" ")
    roll = rng.random()
    if roll < 0.02:  # near-miss: one digit changed -> slow path, must be rejected
        picked = _pick_span(rng, words, 0, len(words), 40, 120, need_digit=True)
        if picked:
            span = picked[2]
            positions = [i for i, c in enumerate(span) if c.isdigit()]
            i = rng.choice(positions)
            new_digit = str((int(span[i]) + rng.randint(1, 9)) % 10)
            return "number_changed", span[:i] + new_digit + span[i + 1 :], "none"
    elif roll < 0.03:  # typo in an ordinary word -> token search, rejected (a changed word)
        picked = _pick_span(rng, words, 0, len(words), 70, 140)
        if picked:
            a, b, _ = picked
            plain = [j for j in range(a, b) if words[j].isalpha() and words[j].islower() and len(words[j]) >= 6]
            if plain:
                chosen = list(words[a:b])
                j = rng.choice(plain) - a
                k = rng.randrange(1, len(chosen[j]) - 1)
                chosen[j] = chosen[j][:k] + chosen[j][k + 1 :]
                return "typo", " ".join(chosen), "none"  # a changed word is never a near match
    elif roll < 0.08:  # two parts joined by "..."
        first = _pick_span(rng, words, 0, max(1, len(words) // 2), 20, 60)
        if first:
            a, b, span1 = first
            second = _pick_span(rng, words, b + 1, len(words), 15, 60)
            if second:
                return "ellipsis", f"{span1} ... {second[2]}", "exact"
    elif roll < 0.18:  # whitespace / case edits only
        picked = _pick_span(rng, words, 0, len(words), 40, 140)
        if picked:
            out = []
            for word in picked[2].split(" "):
                r = rng.random()
                out.append(
                    word.upper() if r < 0.2 else word.lower() if r < 0.35 else word.capitalize() if r < 0.45 else word
                )
            glue = [rng.choice(["  ", " \n", "\t", "   "]) if rng.random() < 0.25 else " " for _ in out]
            edited = "".join(w + g for w, g in zip(out, glue, strict=True)).rstrip()
            if edited == picked[2]:
                edited = "  " + edited.upper()
            return "whitespace_case", edited, "exact"
    picked = _pick_span(rng, words, 0, len(words), 30, 160)
    return ("exact", picked[2] if picked else text, "exact")


def build_session(n_invocations: int, bindings_per_invocation: int = 5, seed: int = 7):
    """(executor_output dict, invocations, expected kinds, variant counts)."""
    from evcli.contracts import ToolInvocation

    rng = random.Random(seed)
    invocations: list[ToolInvocation] = []
    claims: list[dict[str, Any]] = []
    expected: list[str] = []
    variants: dict[str, int] = {}

    def binding(tool: str, invocation_id: int, raw_path: str, text: str) -> dict[str, Any]:
        variant, excerpt, kind = _excerpt(rng, text)
        variants[variant] = variants.get(variant, 0) + 1
        expected.append(kind)
        return {
            "source_type": "tool_trace",
            "source_id": "",
            "tool_name": tool,
            "source_invocation_id": invocation_id,
            "raw_path": raw_path,
            "evidence_excerpt": excerpt,
        }

    for invocation_id in range(1, n_invocations + 1):
        service = rng.choice(SERVICES)
        roll = rng.random()
        kind = (
            "query_logs"
            if roll < 0.40
            else "query_metrics"
            if roll < 0.65
            else "lookup_knowledge"
            if roll < 0.85
            else "no_evidence"
        )
        if kind == "no_evidence":
            tool = rng.choice(["query_logs", "query_metrics"])
            text = _no_evidence_text(rng, tool, service)
            refs = [{"raw_path": "$.no_evidence", "text": text}]
            output = {
                "logs" if tool == "query_logs" else "alerts": [],
                "total": 0,
                "truncated": False,
                "message": "no matches",
            }
            status = "no_evidence"
            for k in range(bindings_per_invocation):
                claims.append(
                    {
                        "claim_id": f"claim-{invocation_id}-{k}",
                        "claim_type": "negative_observation",
                        "claim_text": f"This query found no matching evidence for {service}.",
                        "evidence_bindings": [binding(tool, invocation_id, "$.no_evidence", text)],
                    }
                )
        else:
            tool = kind
            array, make, count = {
                "query_logs": ("logs", _log_text, rng.randrange(bindings_per_invocation, 13)),
                "query_metrics": ("alerts", _alert_text, rng.randrange(bindings_per_invocation, 9)),
                "lookup_knowledge": ("evidence_blocks", _knowledge_text, bindings_per_invocation),
            }[tool]
            texts = [make(rng, service) for _ in range(count)]
            refs = [{"raw_path": f"$.{array}[{i}]", "text": t} for i, t in enumerate(texts)]
            output = {array: [{"text": t} for t in texts], "total": count, "truncated": False}
            status = "supported"
            chosen = sorted(rng.sample(range(count), bindings_per_invocation))
            claim_type = "runbook_reference" if tool == "lookup_knowledge" else rng.choice(["observation", "symptom"])
            split = rng.randrange(1, bindings_per_invocation) if bindings_per_invocation > 1 else 1
            for part, indices in enumerate((chosen[:split], chosen[split:])):
                if indices:
                    claims.append(
                        {
                            "claim_id": f"claim-{invocation_id}-{part}",
                            "claim_type": claim_type,
                            "claim_text": f"{service} shows the symptoms quoted from this invocation.",
                            "evidence_bindings": [
                                binding(tool, invocation_id, refs[i]["raw_path"], texts[i]) for i in indices
                            ],
                        }
                    )
        invocations.append(
            ToolInvocation.model_validate(
                {
                    "invocation_id": invocation_id,
                    "round": 1,
                    "tool_name": tool,
                    "input_params": {"service": service, "window": "1h", "limit": 50},
                    "output": output,
                    "output_preview": json.dumps(output)[:200],
                    "retrieval_details": {
                        "evidence_status": status,
                        "evidence_refs": refs,
                        "service": service,
                        "keywords": [],
                        "window": "1h",
                        "limit": 50,
                        "truncated": False,
                    },
                    "duration_ms": float(rng.randrange(5, 400)),
                    "success": True,
                    "created_at": "2026-07-08T23:05:10.000000Z",
                }
            )
        )

    executor_output = {
        "answer_version": "executor_evidence_v2",
        "claims": claims,
        "hypotheses": [],
        "recommended_actions": [],
        "missing_info": [],
    }
    return executor_output, invocations, expected, variants


def _clear_caches() -> None:
    from evcli.gatekeeper import excerpt

    clear = getattr(excerpt.normalize, "cache_clear", None)
    if clear:
        clear()


def time_gate_once(executor_output, invocations, rules, *, collect: bool = True):
    """One timed gate() call with a cold normalize cache, as in a fresh CLI process."""
    from evcli.gatekeeper.engine import gate

    _clear_caches()
    gc.collect()
    if not collect:
        gc.disable()
    try:
        start = time.perf_counter()
        result = gate(executor_output, invocations, rules)
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    return elapsed, result


def outcome_summary(result, expected: list[str]) -> dict[str, Any]:
    matches: dict[str, int] = {}
    unexpected = 0
    for checked, kind in zip(result.checked_bindings, expected, strict=True):
        matches[checked.match] = matches.get(checked.match, 0) + 1
        ok = checked.status == "pass" if kind != "none" else checked.status == "fail"
        unexpected += (checked.match != kind) or not ok
    return {
        "bindings_checked": len(result.checked_bindings),
        "match_kinds": matches,
        "passed": sum(b.status == "pass" for b in result.checked_bindings),
        "unexpected_outcomes": unexpected,
        "gate_severity": result.severity,
        "outcome_note": "unexpected = gate outcome differs from the generator's intent (exact/near pass, "
        "number-changed fail); not part of the target",
    }


GATE_SIZES = {"gate_10k": 2000, "gate_20k": 4000}  # invocations; 5 bindings each


def bench_gate(quick: bool, results: dict[str, Any], hotspots: dict[str, Any]) -> None:
    """Rounds alternate 10k / 20k so load from other processes hits both alike.

    Each round builds its session afresh and drops it afterwards: only one
    session is alive while gate() runs, as in a CLI process (a second live
    session would inflate the cost of every full garbage collection).
    """
    from evcli.gatekeeper.engine import gate
    from evcli.gatekeeper.rules import load_rules

    rules = load_rules()
    repeats = 1 if quick else 3
    times: dict[str, list[float]] = {key: [] for key in GATE_SIZES}
    for round_index in range(repeats):
        for key, n_inv in GATE_SIZES.items():
            executor_output, invocations, expected, variants = build_session(n_inv)
            elapsed, result = time_gate_once(executor_output, invocations, rules)
            times[key].append(elapsed)
            log(f"{key}: round {round_index + 1}/{repeats}: {elapsed:.3f}s ({len(expected)} bindings)")
            if round_index == 0:
                target = TARGETS["gate_10k_s"] * (1 if key == "gate_10k" else TARGETS["linearity"])
                results[key] = {
                    "bindings": len(expected),
                    "invocations": n_inv,
                    "excerpt_variants": variants,
                    **outcome_summary(result, expected),
                    "target_max_s": target,
                }
                if key == "gate_20k":
                    results[key]["target_note"] = "implied: gate_10k target x linearity target"
            del executor_output, invocations, expected, result
            gc.collect()
    for key in GATE_SIZES:
        best = min(times[key])
        results[key].update(
            {
                "seconds": r4(best),
                "statistic": f"best of {repeats}",
                "runs_s": [r4(t) for t in times[key]],
                "ok": best <= results[key]["target_max_s"],
            }
        )
    linearity = results["gate_20k"]["seconds"] / results["gate_10k"]["seconds"]
    results["linearity"] = {
        "value": round(linearity, 3),
        "definition": "gate_20k / gate_10k (best runs)",
        "target_max": TARGETS["linearity"],
        "ok": linearity <= TARGETS["linearity"],
    }

    missed = [key for key in GATE_SIZES if not results[key]["ok"]]
    if not results["linearity"]["ok"]:
        missed = sorted(set(missed) | {"gate_20k"})
        log("linearity: target missed, timing both sizes with the garbage collector off")
        without_gc = {}
        for key, n_inv in GATE_SIZES.items():
            session = build_session(n_inv)
            without_gc[key] = r4(
                min(time_gate_once(session[0], session[1], rules, collect=False)[0] for _ in range(1 if quick else 2))
            )
            del session
            gc.collect()
        hotspots["linearity"] = {
            "gc_disabled_s": without_gc,
            "linearity_gc_disabled": round(without_gc["gate_20k"] / without_gc["gate_10k"], 3),
            "note": "diagnostic only: if the ratio is near 2 with gc off, the excess is the cyclic "
            "garbage collector (full collections scan every live object, so their cost grows with n)",
        }
    for key in missed:
        log(f"{key}: target missed, profiling one run")
        executor_output, invocations, _, _ = build_session(GATE_SIZES[key])
        _clear_caches()
        profiler = cProfile.Profile()
        profiler.enable()
        gate(executor_output, invocations, rules)
        profiler.disable()
        hotspots[key] = profile_top(profiler)
        del executor_output, invocations
        gc.collect()


REAL_BINDINGS = 10_000


def build_real_session(target: int = REAL_BINDINGS):
    """(executor_output, invocations, bindings): the offline chain's real sessions on the packaged
    environments' questions (the gatekeeper eval's bases, both halves) stitched into one session of at
    least `target` bindings, invocation ids renumbered. Items, claims and refs are as the tools and the
    offline Executor write them, so the typed-fact rules run on every binding (the synthetic session
    above cites `{"text": ...}` items its refs cannot be re-derived from, and stops before them). The
    sessions repeat to reach `target`; each copy's invocations are distinct objects, so nothing read
    for one copy is reused for another."""
    from evcli.evals.mutations.envbases import env_bases
    from evcli.evals.stitched import stitched_session

    return stitched_session([*env_bases("tune"), *env_bases("holdout")], target)


def bench_gate_real(quick: bool, results: dict[str, Any], hotspots: dict[str, Any]) -> None:
    """gate() on 10,000 bindings of real sessions (see build_real_session), best of N, with the
    time the two typed-fact rules take (the same run with them switched off)."""
    import dataclasses

    from evcli import native
    from evcli.gatekeeper.engine import gate
    from evcli.gatekeeper.rules import load_rules

    rules = load_rules()
    without_facts = load_rules()
    for rule_id in ("claim.facts_match", "claim.facts_in_excerpts"):
        without_facts.rules[rule_id] = dataclasses.replace(without_facts.rules[rule_id], enabled=False)
    output, invocations, bindings = build_real_session()
    repeats = 1 if quick else 3
    times, base = [], []
    for round_index in range(repeats):
        elapsed, result = time_gate_once(output, invocations, rules)
        times.append(elapsed)
        base.append(time_gate_once(output, invocations, without_facts)[0])
        log(f"gate_10k_real: round {round_index + 1}/{repeats}: {elapsed:.3f}s ({bindings} bindings)")
    best = min(times)
    results["gate_10k_real"] = {
        "compiled": native.active(),  # the Gatekeeper's modules as mypyc compiled them (evcli/native.py)
        "bindings": bindings,
        "claims": len(output["claims"]),
        "invocations": len(invocations),
        "passed": sum(b.status == "pass" for b in result.checked_bindings),
        "facts_matched": sum(len(b.facts) for b in result.checked_bindings),
        "seconds": r4(best),
        "without_fact_rules_s": r4(min(base)),
        "statistic": f"best of {repeats}",
        "runs_s": [r4(t) for t in times],
        "target_max_s": TARGETS["gate_10k_s"],
        "ok": best <= TARGETS["gate_10k_s"],
    }
    if best > TARGETS["gate_10k_s"]:
        log("gate_10k_real: target missed, profiling one run")
        _clear_caches()
        profiler = cProfile.Profile()
        profiler.enable()
        gate(output, invocations, rules)
        profiler.disable()
        hotspots["gate_10k_real"] = profile_top(profiler)


def bench_gate_long_excerpts(results: dict[str, Any]) -> None:
    """gate() on one claim whose excerpts and refs are 100,000 characters each (target <= 1 s):
    one verbatim, one with a word changed (rejected), one with soft punctuation dropped (near)."""
    from evcli.contracts import ToolInvocation
    from evcli.gatekeeper.rules import load_rules
    from evcli.tools.refs import positive_refs

    size = 100_000
    message = " ".join(f"order-service worker{n % 977} took {n % 13}ms," for n in range(size // 20))[:size]
    logs = [{"timestamp": "2026-07-08T23:05:28Z", "service": "order-service", "level": "ERROR", "message": message}] * 3
    text = positive_refs("query_logs", {"logs": logs})[0].text
    refs = [ref.model_dump() for ref in positive_refs("query_logs", {"logs": logs})]
    variants = {
        "$.logs[0]": text,
        "$.logs[1]": text.replace("worker5 ", "worken5 ", 1),
        "$.logs[2]": text.replace(",", ""),
    }
    invocation = ToolInvocation.model_validate(
        {
            "invocation_id": 1,
            "round": 1,
            "tool_name": "query_logs",
            "input_params": {"service": "order-service"},
            "output": {"logs": logs, "total": 3, "truncated": False},
            "output_preview": "",
            "retrieval_details": {
                "evidence_status": "supported",
                "evidence_refs": refs,
                "service": "order-service",
                "keywords": [],
                "window": "1h",
                "limit": 50,
                "truncated": False,
            },
            "duration_ms": 1.0,
            "success": True,
            "created_at": "2026-07-08T23:05:10.000000Z",
        }
    )
    claims = [
        {
            "claim_id": f"claim-{i}",
            "claim_type": "observation",
            "claim_text": "order-service took 5ms.",
            "evidence_bindings": [
                {
                    "source_type": "tool_trace",
                    "source_id": "",
                    "tool_name": "query_logs",
                    "source_invocation_id": 1,
                    "raw_path": path,
                    "evidence_excerpt": excerpt,
                }
            ],
        }
        for i, (path, excerpt) in enumerate(variants.items())
    ]
    output = {
        "answer_version": "executor_evidence_v2",
        "claims": claims,
        "hypotheses": [],
        "recommended_actions": [],
        "missing_info": [],
    }
    rules = load_rules()
    samples, result = [], None
    for _ in range(3):
        elapsed, result = time_gate_once(output, [invocation], rules)
        samples.append(elapsed)
    best = min(samples)
    log(f"gate_100k_excerpts: {best:.3f}s")
    results["gate_100k_excerpts"] = {
        "seconds": r4(best),
        "statistic": "best of 3",
        "runs_s": [r4(t) for t in samples],
        "excerpt_chars": size,
        "match_kinds": [b.match for b in result.checked_bindings],
        "statuses": [b.status for b in result.checked_bindings],
        "target_max_s": 1.0,
        "ok": best <= 1.0,
    }


# =============================================================================
# 2./3. cold start and litellm
# =============================================================================


def interleaved(commands: dict[str, list[str]], env: dict[str, str], runs: int) -> dict[str, list[float]]:
    for argv in commands.values():  # warm-up: bytecode caches and page cache, not counted
        run_cmd(argv, env)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(run_cmd(argv, env)[0])
    return times


_PROBE = r"""
import atexit, json, runpy, sys

class _Watch:
    attempted = set()
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "litellm":
            self.attempted.add(name)
        return None

sys.meta_path.insert(0, _Watch())

def _report():
    heavy = ("litellm", "openai", "httpx", "anthropic", "tiktoken", "jsonpath_ng", "sqlite_utils", "difflib")
    sys.stderr.write("\n@@BENCH_PROBE@@" + json.dumps({
        "litellm_in_sys_modules": "litellm" in sys.modules,
        "litellm_import_attempted": bool(_Watch.attempted),
        "modules_loaded": len(sys.modules),
        "notable_modules_loaded": sorted(m for m in heavy if m in sys.modules),
    }) + "\n")

atexit.register(_report)
sys.argv = ["evcli"] + sys.argv[1:]
runpy.run_module("evcli", run_name="__main__", alter_sys=True)
"""


def probe_modules(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    _, proc = run_cmd([sys.executable, "-c", _PROBE, *args], env)
    marker = "@@BENCH_PROBE@@"
    text = proc.stderr.decode(errors="replace")
    if marker not in text:
        raise RuntimeError(f"probe printed no report for {args}: {text[-400:]}")
    return json.loads(text.split(marker, 1)[1].splitlines()[0])


def cold_start_hotspots(args: list[str], env: dict[str, str], tmp: Path) -> dict[str, Any]:
    base = import_times(["-c", BASELINE_CODE], env)
    command = import_times(["-m", "evcli", *args], env)
    extra = {name: t for name, t in command.items() if name not in base}
    top = sorted(extra.items(), key=lambda item: item[1][0], reverse=True)[:8]
    biggest = sorted(command.items(), key=lambda item: item[1][1], reverse=True)[:10]
    return {
        "extra_imports_vs_baseline": {
            "count": len(extra),
            "self_time_total_s": r4(sum(t[0] for t in extra.values()) / 1e6),
            "top_by_self_time": [
                {"module": n, "self_s": r4(s / 1e6), "cumulative_s": r4(c / 1e6)} for n, (s, c, _) in top
            ],
        },
        "largest_import_trees": [
            {"module": n, "depth": d, "cumulative_s": r4(c / 1e6), "in_baseline": n in base} for n, (_, c, d) in biggest
        ],
        "cprofile": profile_subprocess(args, env, tmp),
    }


def profile_subprocess(args: list[str], env: dict[str, str], tmp: Path) -> dict[str, Any]:
    out = tmp / f"profile-{len(list(tmp.glob('profile-*')))}.prof"
    run_cmd([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "evcli", *args], env)
    return profile_top(pstats.Stats(str(out)), evcli_only_cumtime=True)


def bench_cold_start(
    quick: bool, env: dict[str, str], tmp: Path, results: dict[str, Any], hotspots: dict[str, Any]
) -> None:
    runs = 3 if quick else 9
    commands = {
        "baseline_imports": BASELINE,
        "help": [*EVCLI, "--help"],
        "gate_file": [*EVCLI, "gate", str(GATE_SAMPLE)],
    }
    log(f"cold start: {runs} interleaved rounds of baseline / --help / gate FILE")
    times = interleaved(commands, env, runs)
    base = statistics.median(times["baseline_imports"])
    results["baseline_imports"] = timing(
        times["baseline_imports"],
        command=f"{sys.executable} -c {BASELINE_CODE!r}",
        target=None,
        ok=None,
        note="reference for the ratios; no target of its own",
    )
    ratio_target = TARGETS["cold_start_ratio"]
    for name, argv in (("help", ["--help"]), ("gate_file", ["gate", os.path.relpath(GATE_SAMPLE, REPO)])):
        median = statistics.median(times[name])
        ratio = median / base
        results[name] = timing(
            times[name],
            command=f"{EVCLI_METHOD} {' '.join(argv)}",
            target_max_s=r4(base * ratio_target),
            target_note="ratio target x baseline median",
            ok=ratio <= ratio_target,
        )
        results[f"{name}_ratio"] = {
            "value": round(ratio, 3),
            "definition": f"{name} / baseline_imports (medians)",
            "target_max": ratio_target,
            "ok": ratio <= ratio_target,
        }
        log(f"cold start: {name} median {median:.3f}s vs baseline {base:.3f}s = x{ratio:.2f}")
        if ratio > ratio_target:
            log(f"cold start: {name} missed its target, collecting import times and a profile")
            args = ["--help"] if name == "help" else ["gate", str(GATE_SAMPLE)]
            hotspots[name] = cold_start_hotspots(args, env, tmp)

    log("litellm probe: --help and gate FILE")
    probes = {"help": probe_modules(["--help"], env), "gate_file": probe_modules(["gate", str(GATE_SAMPLE)], env)}
    try:
        import importlib.util

        installed = importlib.util.find_spec("litellm") is not None
    except (ImportError, ValueError):
        installed = False
    imported = any(p["litellm_in_sys_modules"] or p["litellm_import_attempted"] for p in probes.values())
    results["litellm_imported"] = {
        "help": probes["help"]["litellm_in_sys_modules"],
        "gate_file": probes["gate_file"]["litellm_in_sys_modules"],
        "import_attempted": {k: p["litellm_import_attempted"] for k, p in probes.items()},
        "modules_loaded": {k: p["modules_loaded"] for k, p in probes.items()},
        "notable_modules_loaded": {k: p["notable_modules_loaded"] for k, p in probes.items()},
        "litellm_installed": installed,
        "method": "wrapper runs evcli via runpy and reports 'litellm' in sys.modules at exit; a sys.meta_path "
        "finder also records any attempt to import litellm (so the check means something even when "
        "litellm is not installed)",
        "target": False,
        "ok": not imported,
    }


# =============================================================================
# 4. a store holding 10,000 sessions
# =============================================================================

_CLONED_TABLES = ("agent_step", "tool_invocation", "stage_output", "gate_result")


def build_store(path: Path, n_sessions: int) -> tuple[list[str], dict[str, Any]]:
    """Import the base sample once with TraceStore, then clone its rows in one transaction."""
    from evcli.store.db import TraceStore
    from evcli.store.documents import read_document

    start = datetime(2026, 7, 1, tzinfo=UTC)

    def ids(i: int) -> tuple[str, str]:
        moment = start + timedelta(minutes=i)
        return moment.strftime("%Y%m%dT%H%M%S") + f"-{i:06x}", moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    t0 = time.perf_counter()
    document = read_document(DB_BASE_SAMPLE)
    session_ids = [ids(i)[0] for i in range(n_sessions)]
    store = TraceStore(path)
    base_id = session_ids[0]
    store.import_document(document, new_id=base_id)  # the product's own write path, once
    conn = store.db.conn
    store.db.execute(
        "UPDATE diagnosis_run SET created_at = ?, updated_at = ? WHERE session_id = ?", [ids(0)[1], ids(0)[1], base_id]
    )

    def template(table: str) -> tuple[list[str], list[tuple]]:
        cursor = conn.execute(f"SELECT * FROM {table} WHERE session_id = ?", [base_id])
        columns = [c[0] for c in cursor.description]
        keep = [c for c in columns if c != "id"]  # autoincrement keys are re-assigned
        rows = [tuple(row[columns.index(c)] for c in keep) for row in (tuple(r) for r in cursor.fetchall())]
        return keep, rows

    run_columns, (run_row,) = template("diagnosis_run")
    children = {table: template(table) for table in _CLONED_TABLES}
    sid_run = run_columns.index("session_id")
    created = run_columns.index("created_at")
    updated = run_columns.index("updated_at")

    conn.execute("BEGIN IMMEDIATE")
    try:
        run_rows = []
        for i in range(1, n_sessions):
            sid, stamp = ids(i)
            row = list(run_row)
            row[sid_run], row[created], row[updated] = sid, stamp, stamp
            run_rows.append(row)
        conn.executemany(
            f"INSERT INTO diagnosis_run ({', '.join(run_columns)}) VALUES ({', '.join('?' * len(run_columns))})",
            run_rows,
        )
        for table, (columns, rows) in children.items():
            position = columns.index("session_id")
            sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
            conn.executemany(
                sql, (row[:position] + (sid,) + row[position + 1 :] for sid in session_ids[1:] for row in rows)
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("diagnosis_run", *_CLONED_TABLES)}
    store.close()
    info = {
        "sessions": counts["diagnosis_run"],
        "rows": counts,
        "base_document": DB_BASE_SAMPLE.name,
        "method": "TraceStore.import_document once, then its rows cloned under new ids/timestamps with "
        "executemany in one transaction, WAL checkpointed",
        "build_s": round(time.perf_counter() - t0, 2),
        "size_mb": round(path.stat().st_size / 2**20, 1),
    }
    return session_ids, info


def _median_call(call, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _list(db: Path) -> None:
    from evcli.store.db import TraceStore

    with TraceStore(db, must_exist=True) as store:
        store.list_sessions(20)


def _load(db: Path, session_id: str) -> None:
    from evcli.store.db import TraceStore

    with TraceStore(db, must_exist=True) as store:
        store.load(session_id)


def bench_store(quick: bool, env: dict[str, str], tmp: Path, results: dict[str, Any], hotspots: dict[str, Any]) -> None:
    n_sessions = 10_000
    db = tmp / "sessions-10k.db"
    log(f"store: building a database of {n_sessions} sessions")
    session_ids, info = build_store(db, n_sessions)
    log(f"store: built in {info['build_s']}s, {info['size_mb']} MB")
    middle = session_ids[len(session_ids) // 2]

    # Sanity (not timed): the commands see what was written.
    _, proc = run_cmd([*EVCLI, "sessions", "--limit", "20", "--db", str(db), "--json"], env)
    listed = json.loads(proc.stdout)
    if (
        len(listed) != 20
        or listed[0]["session_id"] != session_ids[-1]
        or listed[0]["invocations"] != len(json.loads(DB_BASE_SAMPLE.read_text())["invocations"])
    ):
        raise RuntimeError(f"unexpected `evcli sessions` output: {listed[:1]}")
    _, proc = run_cmd([*EVCLI, "trace", middle, "--db", str(db), "--json"], env)
    if json.loads(proc.stdout)["run"]["session_id"] != middle:
        raise RuntimeError("`evcli trace` returned another session")

    in_process = {
        "sessions_limit_20": r4(_median_call(lambda: _list(db), 5)),
        "trace_one": r4(_median_call(lambda: _load(db, middle), 5)),
    }

    runs = 3 if quick else 7
    commands = {
        "sessions_limit_20": [*EVCLI, "sessions", "--limit", "20", "--db", str(db)],
        "trace_one": [*EVCLI, "trace", middle, "--db", str(db)],
    }
    log(f"store: {runs} interleaved rounds of `sessions --limit 20` / `trace ID`")
    times = interleaved(commands, env, runs)
    results["db"] = info
    target = TARGETS["db_command_s"]
    for name, argv in commands.items():
        median = statistics.median(times[name])
        shown = " ".join(["evcli", *argv[len(EVCLI) :]]).replace(str(db), "DB")
        results[name] = timing(
            times[name], command=f"{EVCLI_METHOD}{shown[len('evcli') :]}", target_max_s=target, ok=median <= target
        )
        if name == "trace_one":
            results[name]["session_id"] = middle
        log(f"store: {name} median {median:.3f}s")
        results[name]["breakdown"] = {
            "store_call_in_process_s": in_process[name],
            "store_call": {
                "sessions_limit_20": "TraceStore(db).list_sessions(20)",
                "trace_one": "TraceStore(db).load(id)",
            }[name],
            "baseline_imports_s": results.get("baseline_imports", {}).get("seconds"),
            "note": "median in this (warm) process; the rest of the wall time is interpreter start, "
            "imports and rendering",
        }
        if median > target:
            log(f"store: {name} missed its target, collecting import times and a profile")
            hotspots[name] = cold_start_hotspots(argv[len(EVCLI) :], env, tmp)


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
            "baseline_invocation": f"sys.executable -c {BASELINE_CODE!r}",
            "started_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
    }
    hotspots: dict[str, Any] = {}
    errors: dict[str, str] = {}
    tmp = Path(tempfile.mkdtemp(prefix="evcli-bench-"))
    env = {**os.environ, "EVCLI_HOME": str(tmp / "home"), "PYTHONUNBUFFERED": "1"}
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    # The warm-up runs write evcli's bytecode caches, as an installed package has them; with
    # PYTHONDONTWRITEBYTECODE inherited every timed process would compile evcli from source
    # (~0.2 s for the ~45 modules of `gate`), which no user's `evcli` does.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        run_sections(
            (
                ("gate", lambda: bench_gate(options.quick, results, hotspots)),
                ("gate_real", lambda: bench_gate_real(options.quick, results, hotspots)),
                ("gate_long_excerpts", lambda: bench_gate_long_excerpts(results)),
                ("cold_start", lambda: bench_cold_start(options.quick, env, tmp, results, hotspots)),
                ("store", lambda: bench_store(options.quick, env, tmp, results, hotspots)),
            ),
            errors,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    finish(results, hotspots, errors, T0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
