"""Build sample_sessions/: three valid sessions and one per gatekeeper failure class.

The valid sessions are written out here as the recorded sessions of a small
incident (payment-service CPU, order-service memory and connection pool,
inventory-service quiet). Each failure session is its base session with one
mutation from `evcli.evals.mutations` applied to the executor output, so the
files and the fault-injection suite can never drift apart.

    python scripts/build_sample_sessions.py           # (re)write the files
    python scripts/build_sample_sessions.py --check   # exit 1 if a file is stale
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from evcli.contracts import (
    ROLES,
    AgentStep,
    EnvironmentOverview,
    RetrievalDetails,
    RunRecord,
    SessionConfig,
    SessionDocument,
    StageOutput,
    StoredGateResult,
    ToolInvocation,
)
from evcli.evals.mutations import MUTATIONS
from evcli.gatekeeper.engine import gate
from evcli.gatekeeper.rules import load_rules
from evcli.gatekeeper.service import session_services
from evcli.tools.refs import evidence

OUT_DIR = Path(__file__).resolve().parent.parent / "sample_sessions"
RULES = load_rules()


def _invocation(invocation_id, tool, params, output, *, at, duration, **scope):
    """A recorded call whose evidence is rendered from its output exactly as the runner renders it."""
    status, refs = evidence(tool, output, scope, dedup_reason=None)
    return ToolInvocation(
        invocation_id=invocation_id,
        tool_name=tool,
        input_params=params,
        output=output,
        output_preview=json.dumps(output, ensure_ascii=False)[:240],
        retrieval_details=RetrievalDetails(evidence_status=status, evidence_refs=refs, **scope),
        duration_ms=duration,
        created_at=at,
    )


def _binding(tool, invocation_id, raw_path, excerpt):
    return {
        "source_type": "tool_trace",
        "source_id": "",
        "tool_name": tool,
        "source_invocation_id": invocation_id,
        "raw_path": raw_path,
        "evidence_excerpt": excerpt,
    }


def _claim(claim_id, claim_type, text, *bindings, support="direct"):
    return {
        "claim_id": claim_id,
        "claim_type": claim_type,
        "claim_text": text,
        "support_level": support,
        "evidence_bindings": list(bindings),
    }


def _executor_output(claims, hypotheses=(), actions=(), missing=()):
    return {
        "answer_version": "executor_evidence_v2",
        "claims": claims,
        "hypotheses": list(hypotheses),
        "recommended_actions": list(actions),
        "missing_info": list(missing),
    }


# The packaged demo environment's services (evcli/demo/logs, metrics), as the pipeline's overview lists them
DEMO_SERVICES = ["inventory-service", "node-worker-01", "order-service", "payment-service", "user-service"]


def _config(task_scope, language, services, alertnames=(), terms=()):
    """The config the pipeline writes, for a session run offline on the packaged demo environment."""
    return SessionConfig.model_validate(
        {
            "models": {role: "offline" for role in ROLES},
            "env": {},
            "environment": EnvironmentOverview(services=DEMO_SERVICES),
            "task_scope": task_scope,
            "language": language,
            # a session stored before question scopes: what was read is its `intent`
            "intent": {
                "services": list(services),
                "alertnames": list(alertnames),
                "terms": list(terms),
                "window": None,
            },
            "max_steps": 8,
        }
    )


def _steps(at, *agents):
    return [
        AgentStep(
            agent=agent,
            round=1,
            step_index=index,
            model="offline",
            has_tool_call=tool_call,
            model_input_summary=summary_in,
            model_output_summary=summary_out,
            duration_ms=duration,
            created_at=at,
        )
        for index, (agent, tool_call, summary_in, summary_out, duration) in enumerate(agents, start=1)
    ]


PROMPT_AUDIT = {
    "version": "prompts-v1",
    "prompts": [{"name": "executor", "version": "executor-v1", "resource": "prompts/executor.md"}],
}


def _completed_run(session_id, question, config, *, at, updated_at):
    """The run record of a base session: completed and verified PASS."""
    return RunRecord(
        session_id=session_id,
        question=question,
        status="completed",
        verdict="PASS",
        config=config,
        prompt_audit=PROMPT_AUDIT,
        created_at=at,
        updated_at=updated_at,
    )


def _log_query(invocation_id, service, query, logs, message, *, at, duration):
    """A query_logs call over the last hour; its keywords are the words of the query."""
    return _invocation(
        invocation_id,
        "query_logs",
        {"service": service, "query": query, "window": "1h", "limit": 50},
        {"logs": logs, "total": len(logs), "truncated": False, "message": message},
        at=at,
        duration=duration,
        service=service,
        keywords=query.split(" "),
        window="1h",
        limit=50,
    )


def _stage_outputs(at, plan, executor_output, verify, compose):
    """The plan, execute, verify and compose outputs of a base session, all valid and written at `at`."""
    return [
        StageOutput(stage="plan", output=plan, created_at=at),
        StageOutput(stage="execute", output=executor_output, parse_status={"status": "valid"}, created_at=at),
        StageOutput(stage="verify", output=verify, created_at=at),
        StageOutput(stage="compose", output=compose, created_at=at),
    ]


def _passed_verification(critical_fact_count, claim_count, facts_checked, rationale):
    """A PASS verdict where every claim has direct support and the first `critical_fact_count` are critical."""
    return {
        "verdict": "PASS",
        "groundedness_score": 1.0,
        "critical_fact_count": critical_fact_count,
        "claim_checks": [
            {"claim_id": f"claim-{i}", "verification": "direct_support", "is_critical": i <= critical_fact_count}
            for i in range(1, claim_count + 1)
        ],
        "facts_checked": facts_checked,
        "rationale": rationale,
    }


# --- payment-service: a narrow positive confirmation ----------------------------------------


def narrow_payment_highcpu() -> SessionDocument:
    at = "2026-07-08T23:05:10.000000Z"
    invocation = _invocation(
        1,
        "query_metrics",
        {"service": "payment-service", "alertname": "HighCPUUsage", "window": "30m"},
        {
            "alerts": [
                {
                    "alertname": "HighCPUUsage",
                    "service": "payment-service",
                    "instance": "payment-service-7d9f8b6c4-x2k9p",
                    "severity": "warning",
                    "state": "firing",
                    "value": 92.0,
                    "unit": "%",
                    "active_at": "2026-07-08T22:40:00Z",
                    "duration": "25m",
                    "summary": "CPU usage of payment-service above 80% for 25 minutes",
                }
            ],
            "series": [],
            "total": 1,
            "truncated": False,
            "message": "1 alerts, 0 series",
        },
        at=at,
        duration=38.0,
        service="payment-service",
        keywords=["HighCPUUsage"],
        window="30m",
        limit=50,
    )
    output = _executor_output(
        [
            _claim(
                "claim-1",
                "observation",
                "payment-service has a firing HighCPUUsage alert with CPU usage at 92% for 25 minutes.",
                _binding(
                    "query_metrics",
                    1,
                    "$.alerts[0]",
                    "HighCPUUsage, service=payment-service ... state=firing, current=92%, duration=25m",
                ),
            )
        ]
    )
    return SessionDocument(
        run=_completed_run(
            "sample-narrow-payment-highcpu",
            "Only confirm whether payment-service currently has a HighCPUUsage alert firing.",
            _config("narrow", "en", ["payment-service"], ["HighCPUUsage"]),
            at=at,
            updated_at="2026-07-08T23:05:12.000000Z",
        ),
        steps=_steps(
            at,
            (
                "planner",
                False,
                "question: confirm payment-service HighCPUUsage",
                "skill=diagnose-high-cpu, narrow",
                4.0,
            ),
            ("executor", True, "plan: 1 step", "query_metrics(payment-service, HighCPUUsage, 30m)", 41.0),
            ("verifier", False, "1 verified claim", "PASS", 2.0),
            ("composer", False, "1 allowed claim", "answer in English", 2.0),
        ),
        invocations=[invocation],
        stage_outputs=_stage_outputs(
            at,
            plan={
                "selected_skill": "diagnose-high-cpu",
                "selection_reason": "The question asks to confirm one alert on one service.",
                "plan": ["Query the HighCPUUsage alert of payment-service over the last 30 minutes."],
                "reasoning": "Narrow confirmation: one metrics query, observations only.",
            },
            executor_output=output,
            verify=_passed_verification(
                1,
                1,
                ["HighCPUUsage firing", "92%", "25m"],
                "The alert excerpt states state=firing, current=92% and duration=25m.",
            ),
            compose={
                "answer_summary": "payment-service has a firing HighCPUUsage alert at 92% CPU.",
                "recommended_actions": [],
                "user_facing_answer": "Yes. payment-service has a HighCPUUsage alert firing: CPU usage is 92% "
                "(above 80%) and has been for 25 minutes [1].",
            },
        ),
    )


# --- inventory-service: a narrow negative observation (Chinese) -----------------------------------


def negative_inventory_hikaricp() -> SessionDocument:
    at = "2026-07-08T23:24:28.000000Z"
    invocation = _log_query(1, "inventory-service", "HikariCP", [], "未找到匹配的日志", at=at, duration=21.0)
    output = _executor_output(
        [
            _claim(
                "claim-1",
                "negative_observation",
                "当前查询未检索到 inventory-service 的 HikariCP 连接池耗尽日志。",
                _binding(
                    "query_logs",
                    1,
                    "$.no_evidence",
                    "query_logs returned no evidence; ... query=inventory-service HikariCP; ... total=0",
                ),
            )
        ],
        missing=["本次仅检索了最近 1 小时的应用日志。"],
    )
    return SessionDocument(
        run=_completed_run(
            "sample-negative-inventory-hikaricp",
            "只确认 inventory-service 是否存在 HikariCP 连接池耗尽日志。",
            _config("narrow", "zh", ["inventory-service"], terms=["Hikari", "pool", "HikariCP"]),
            at=at,
            updated_at="2026-07-08T23:24:30.000000Z",
        ),
        steps=_steps(
            at,
            (
                "planner",
                False,
                "问题：确认 inventory-service HikariCP 日志",
                "skill=diagnose-mysql-connection-pool, narrow",
                3.0,
            ),
            ("executor", True, "plan: 1 step", "query_logs(inventory-service, HikariCP, 1h)", 24.0),
            ("verifier", False, "1 verified claim", "PASS", 2.0),
            ("composer", False, "1 allowed claim", "answer in Chinese", 2.0),
        ),
        invocations=[invocation],
        stage_outputs=_stage_outputs(
            at,
            plan={
                "selected_skill": "diagnose-mysql-connection-pool",
                "selection_reason": "问题只涉及 HikariCP 连接池日志。",
                "plan": ["检索 inventory-service 最近 1 小时含 HikariCP 的日志。"],
                "reasoning": "窄范围确认：一次精确日志查询；无结果时不放宽查询。",
            },
            executor_output=output,
            verify=_passed_verification(
                1,
                1,
                ["query returned no evidence"],
                "The claim only restates that this query found no matching evidence.",
            ),
            compose={
                "answer_summary": "本次查询未检索到 inventory-service 的 HikariCP 连接池耗尽日志。",
                "recommended_actions": [],
                "user_facing_answer": "本次查询在 inventory-service 最近 1 小时的日志中未检索到 HikariCP 连接池耗尽的匹配记录 [1]。"
                "这只说明本次检索没有匹配证据。",
            },
        ),
    )


# --- order-service: a broad diagnosis over alerts, logs and a runbook --------------------------------

ORDER_GC_LOGS = [
    "2026-07-08 22:58:41 WARN order-service order-service-5c8d7f9b-qm4tz [GC] Full GC (Allocation Failure) 3.8GB->3.7GB(4.0GB), 2.41s",
    "2026-07-08 23:01:12 WARN order-service order-service-5c8d7f9b-qm4tz [GC] Full GC (Allocation Failure) 3.9GB->3.8GB(4.0GB), 2.87s",
    "2026-07-08 23:02:05 ERROR order-service order-service-5c8d7f9b-qm4tz Container order-service was OOMKilled (exit code 137), restarting (restart_count=3)",
]
ORDER_POOL_LOGS = [
    (
        "2026-07-08 23:05:28 ERROR order-service order-service-5c8d7f9b-qm4tz HikariPool-1 - Connection is not available, "
        "request timed out after 30000ms (total=50, active=50, idle=0, waiting=23)"
    ),
    (
        "2026-07-08 23:05:31 ERROR order-service order-service-5c8d7f9b-qm4tz HikariPool-1 - Connection is not available, "
        "request timed out after 30000ms (total=50, active=50, idle=0, waiting=25)"
    ),
]
MEMORY_RUNBOOK = (
    "If a JVM service shows repeated Full GC with the heap near its limit, "
    "capture a heap dump with jmap before restarting the pod, then compare the dominator tree with the last healthy dump. "
    "Raise -Xmx only after the leak is ruled out."
)


def _log_items(lines):
    items = []
    for line in lines:
        date, time, level, service, instance, message = line.split(" ", 5)
        items.append(
            {
                "timestamp": f"{date}T{time}Z",
                "level": level,
                "service": service,
                "instance": instance,
                "message": message,
            }
        )
    return items


def broad_order_service() -> SessionDocument:
    at = "2026-07-08T23:06:02.000000Z"
    invocations = [
        _invocation(
            1,
            "query_metrics",
            {"service": "order-service", "window": "30m"},
            {
                "alerts": [
                    {
                        "alertname": "HighMemoryUsage",
                        "service": "order-service",
                        "instance": "order-service-5c8d7f9b-qm4tz",
                        "severity": "critical",
                        "state": "firing",
                        "value": 91.0,
                        "unit": "%",
                        "active_at": "2026-07-08T22:47:00Z",
                        "duration": "18m",
                        "summary": "JVM heap of order-service above 85%",
                    }
                ],
                "series": [
                    {
                        "service": "order-service",
                        "metric": "jvm_memory_used_bytes{area=heap}",
                        "window": "30m",
                        "min": 2.9,
                        "max": 3.8,
                        "last": 3.8,
                        "unit": "GB",
                    }
                ],
                "total": 2,
                "truncated": False,
                "message": "1 alerts, 1 series",
            },
            at=at,
            duration=44.0,
            service="order-service",
            window="30m",
            limit=50,
        ),
        _log_query(
            2, "order-service", "GC OOMKilled", _log_items(ORDER_GC_LOGS), "3 matching lines", at=at, duration=63.0
        ),
        _log_query(
            3, "order-service", "HikariPool", _log_items(ORDER_POOL_LOGS), "2 matching lines", at=at, duration=58.0
        ),
        _invocation(
            4,
            "lookup_knowledge",
            {"query": "order-service HighMemoryUsage Full GC OOMKilled"},
            {
                "evidence_blocks": [
                    {
                        "doc": "runbooks/high-memory.md",
                        "title": "High memory usage",
                        "heading": "Immediate steps",
                        "text": MEMORY_RUNBOOK,
                        "relevance_level": "PRECISE",
                        "score": 12.4,
                        "layer": "L0",
                    }
                ],
                "total": 1,
                "truncated": False,
                "message": "1 blocks",
            },
            at=at,
            duration=9.0,
            keywords=["HighMemoryUsage", "Full GC", "OOMKilled"],
            limit=5,
        ),
        _log_query(5, "order-service", "deadlock", [], "no matching log lines", at=at, duration=40.0),
    ]
    invocations[3].relevance_level = "PRECISE"
    output = _executor_output(
        [
            _claim(
                "claim-1",
                "observation",
                "order-service has a critical HighMemoryUsage alert firing at 91% for 18 minutes.",
                _binding(
                    "query_metrics",
                    1,
                    "$.alerts[0]",
                    "HighMemoryUsage, service=order-service ... state=firing, current=91%, duration=18m",
                ),
            ),
            _claim(
                "claim-2",
                "observation",
                "The order-service JVM heap reached max=3.8GB and was last at 3.8GB in the last 30 minutes.",
                _binding(
                    "query_metrics",
                    1,
                    "$.series[0]",
                    "jvm_memory_used_bytes{area=heap} window=30m min=2.9GB max=3.8GB last=3.8GB",
                ),
            ),
            _claim(
                "claim-3",
                "symptom",
                "order-service ran repeated Full GCs and its container was OOMKilled with exit code 137.",
                _binding("query_logs", 2, "$.logs[1]", "[GC] Full GC (Allocation Failure) 3.9GB->3.8GB(4.0GB), 2.87s"),
                _binding("query_logs", 2, "$.logs[2]", "Container order-service was OOMKilled (exit code 137)"),
            ),
            _claim(
                "claim-4",
                "symptom",
                "HikariPool-1 of order-service is exhausted: 50 of 50 connections active, 23 requests waiting, 30000 ms timeouts.",
                _binding(
                    "query_logs",
                    3,
                    "$.logs[0]",
                    "HikariPool-1 - Connection is not available, request timed out after 30000ms (total=50, active=50, idle=0, waiting=23)",
                ),
            ),
            _claim(
                "claim-5",
                "negative_observation",
                "This query found no deadlock log lines for order-service in the last hour.",
                _binding(
                    "query_logs",
                    5,
                    "$.no_evidence",
                    "query_logs returned no evidence; ... query=order-service deadlock; ... total=0",
                ),
            ),
            _claim(
                "claim-6",
                "runbook_reference",
                "The runbook says to capture a heap dump with jmap before restarting the pod.",
                _binding(
                    "lookup_knowledge",
                    4,
                    "$.evidence_blocks[0]",
                    "capture a heap dump with jmap before restarting the pod",
                ),
                support="indirect",
            ),
        ],
        hypotheses=[
            "Heap exhaustion in order-service causes long GC pauses, so requests hold pool connections longer and the HikariCP pool runs dry."
        ],
        actions=[
            "Capture a heap dump of order-service before the next restart (runbook high-memory.md).",
            "Check which queries hold connections longest in order-service during GC pauses.",
        ],
        missing=["No heap dump or allocation profile is available to confirm a leak."],
    )
    return SessionDocument(
        run=_completed_run(
            "sample-broad-order-service",
            "Why is order-service failing? It keeps restarting and checkout requests time out.",
            _config("broad", "en", ["order-service"], terms=["restart", "OOMKilled", "timeout", "timed out"]),
            at=at,
            updated_at="2026-07-08T23:06:05.000000Z",
        ),
        steps=_steps(
            at,
            (
                "planner",
                False,
                "question: order-service restarts and timeouts",
                "skill=diagnose-high-memory, broad",
                5.0,
            ),
            ("executor", True, "plan: 4 steps", "query_metrics, query_logs x3, lookup_knowledge", 220.0),
            ("verifier", False, "6 verified claims", "PASS", 4.0),
            ("composer", False, "6 allowed claims, 1 hypothesis", "answer in English", 3.0),
        ),
        invocations=invocations,
        stage_outputs=_stage_outputs(
            at,
            plan={
                "selected_skill": "diagnose-high-memory",
                "selection_reason": "Restarts with timeouts on a JVM service point at memory pressure first.",
                "plan": [
                    "Check order-service alerts and heap metrics.",
                    "Search order-service logs for GC and OOMKilled.",
                    "Search order-service logs for connection pool errors and deadlocks.",
                    "Look up the high-memory runbook.",
                ],
                "reasoning": "Broad diagnosis: collect alerts, metrics, logs and runbook guidance before any hypothesis.",
            },
            executor_output=output,
            verify=_passed_verification(
                4,
                6,
                [
                    "91%",
                    "3.8GB",
                    "exit code 137",
                    "active=50/50, waiting=23",
                    "no deadlock hits",
                    "jmap heap dump",
                ],
                "Every claim restates its verified excerpts; the pool-exhaustion cause stays a hypothesis.",
            ),
            compose={
                "answer_summary": "order-service is under heap pressure (91%, heap at 3.8GB), was OOMKilled, and its HikariCP pool is exhausted.",
                "recommended_actions": [
                    {
                        "action_text": "Capture a heap dump with jmap before the next restart.",
                        "reason": "Runbook high-memory.md [6].",
                    }
                ],
                "user_facing_answer": "order-service has a critical HighMemoryUsage alert at 91% [1]; its heap reached 3.8GB [2]. "
                "It ran repeated Full GCs and was OOMKilled with exit code 137 [3]. Its HikariCP pool is exhausted "
                "(50/50 active, 23 waiting, 30000 ms timeouts) [4]. This query found no deadlock log lines [5]. "
                "Possible cause (unconfirmed): GC pauses keep connections busy. Next: capture a heap dump before restarting [6].",
            },
        ),
    )


BASES = (narrow_payment_highcpu, negative_inventory_hikaricp, broad_order_service)


def _with_gate_history(document: SessionDocument) -> SessionDocument:
    result = gate(document.latest_stage("execute").output, document.invocations, RULES)
    stored = StoredGateResult(seq=1, round=1, created_at=document.run.created_at, result=result)
    return document.model_copy(update={"gate_results": [stored]})


def build() -> dict[str, str]:
    """File name -> pretty JSON text of every sample session."""
    files: dict[str, SessionDocument] = {}
    bases = [builder() for builder in BASES]
    for base in bases:
        base.run.annotations = {
            "sample": {"kind": "base", "description": "A valid recorded session; every citation is real."},
            "expected_gate": {"status": "pass", "severity": "none", "failed_rules": []},
        }
        files[base.run.session_id.removeprefix("sample-") + ".json"] = _with_gate_history(base)

    for mutation in MUTATIONS:
        if mutation.benign:
            continue
        for base in bases:
            case = next(iter(mutation.mutate(base, base.latest_stage("execute").output)), None)
            if case is None:
                continue
            session_id = f"sample-fault-{mutation.name.replace('_', '-')}"
            execute = base.latest_stage("execute").model_copy(update={"output": case.output})
            document = base.model_copy(
                update={
                    "run": base.run.model_copy(
                        update={
                            "session_id": session_id,
                            "status": "executed",
                            "verdict": None,
                            "annotations": {
                                "sample": {
                                    "kind": "fault",
                                    "mutation": mutation.name,
                                    "base": base.run.session_id,
                                    "description": case.description,
                                },
                                "expected_gate": {
                                    "status": "fail",
                                    "severity": mutation.expected_severity,
                                    # the rule the class names, and any other rule that catches it too
                                    "failed_rules": sorted(
                                        {mutation.expected_rule}
                                        | set(
                                            gate(
                                                case.output,
                                                base.invocations if case.invocations is None else case.invocations,
                                                RULES,
                                                services=session_services(base),
                                            ).failed_rules
                                        )
                                    ),
                                },
                            },
                        }
                    ),
                    "steps": [s for s in base.steps if s.agent in ("planner", "executor")],
                    "invocations": base.invocations if case.invocations is None else case.invocations,
                    "stage_outputs": [s for s in base.stage_outputs if s.stage == "plan"] + [execute],
                    "gate_results": [],
                }
            )
            files[session_id.removeprefix("sample-") + ".json"] = document
            break
    return {
        name: json.dumps(document.model_dump(mode="json"), ensure_ascii=False, indent=2, sort_keys=True) + "\n"
        for name, document in sorted(files.items())
    }


def main(argv: list[str]) -> int:
    files = build()
    if "--check" in argv:
        stale = [
            name
            for name, text in files.items()
            if not (OUT_DIR / name).exists() or (OUT_DIR / name).read_text(encoding="utf-8") != text
        ]
        extra = sorted({p.name for p in OUT_DIR.glob("*.json")} - set(files))
        for name in stale + extra:
            print(f"stale: sample_sessions/{name}", file=sys.stderr)
        return 1 if stale or extra else 0
    OUT_DIR.mkdir(exist_ok=True)
    for old in OUT_DIR.glob("*.json"):
        if old.name not in files:
            old.unlink()
    for name, text in files.items():
        (OUT_DIR / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} sessions to {OUT_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
