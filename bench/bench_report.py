#!/usr/bin/env python
"""Benchmark of `evcli report --format html` on a session with 500 citations (issue 13).

    python bench/bench_report.py            # full run (a few seconds)
    python bench/bench_report.py --quick    # fewer repetitions

Prints ONE JSON object to stdout; progress goes to stderr. The session is built in process:
one query_metrics invocation with 20 series of 300 samples each and one query_logs invocation
with 480 log lines (each with `<`, `&` and quotes to escape), an executor output of 500 claims
(one per ref, excerpts cut from the ref text), gated by the real Gatekeeper, a Verifier output
judging every claim direct_support and an answer citing [1]..[500]. Measured:

* report_html_500: `python -m evcli report SESSION --format html -o OUT` on the session stored
  (imported) in a store, as a whole process (median, <= 0.5 s), with `render(document, "html")`
  in process beside it, and the same from the exported FILE (reported: reading a file masks
  every string for secrets first);
* report_html_size: the written file (<= 1 MB).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, as_installed, finish, log, r4, run_cmd

SERIES, SAMPLES, LOGS = 20, 300, 480
START = 1773817200  # 2026-03-18T08:00:00+01:00


def _iso(seconds: int) -> str:
    from datetime import datetime, timedelta, timezone

    return datetime.fromtimestamp(seconds, timezone(timedelta(hours=1))).isoformat()


def _session():
    from evcli.contracts import (
        RunRecord,
        SessionDocument,
        StageOutput,
        StoredGateResult,
        ToolInvocation,
    )
    from evcli.gatekeeper.engine import gate
    from evcli.gatekeeper.rules import load_rules
    from evcli.tools.query_logs import log_text
    from evcli.tools.query_metrics import series_text

    series = []
    for index in range(SERIES):
        samples = [[START + minute * 60, float((minute * (index + 3)) % 97)] for minute in range(SAMPLES)]
        values = [value for _, value in samples]
        series.append(
            {
                "service": "api",
                "metric": f"metric_{index}",
                "unit": "%",
                "range": "2026-03-18T08:00:00+01:00..2026-03-18T12:59:00+01:00",
                "points": SAMPLES,
                "min": min(values),
                "min_at": _iso(samples[values.index(min(values))][0]),
                "max": max(values),
                "max_at": _iso(samples[values.index(max(values))][0]),
                "last": values[-1],
                "last_at": _iso(samples[-1][0]),
                "samples": samples,
            }
        )
    logs = [
        {
            "timestamp": f"2026-03-18T09:{index // 60 % 60:02d}:{index % 60:02d}.000+01:00",
            "level": "ERROR",
            "service": "api",
            "message": f'request {index} failed: <b>upstream</b> "timeout" & retry #{index}',
            "line": f'2026-03-18 09:00:00 ERROR request {index} failed: <b>upstream</b> "timeout" & retry #{index}',
            "source": {"path": "logs/api.log", "line": index + 1},
        }
        for index in range(LOGS)
    ]
    log_refs = [{"raw_path": f"$.logs[{i}]", "text": log_text(item)} for i, item in enumerate(logs)]
    series_refs = [{"raw_path": f"$.series[{i}]", "text": series_text(item)} for i, item in enumerate(series)]
    scope = {"service": "api", "range": "2026-03-18T08:00:00+01:00..2026-03-18T13:00:00+01:00", "keywords": []}
    invocations = [
        ToolInvocation(
            invocation_id=1,
            tool_name="query_metrics",
            input_params={"service": "api"},
            output={"series": series, "alerts": [], "searched_range": scope["range"]},
            retrieval_details={"evidence_status": "supported", "evidence_refs": series_refs, **scope},
        ),
        ToolInvocation(
            invocation_id=2,
            tool_name="query_logs",
            input_params={"service": "api", "level": "ERROR", "limit": LOGS},
            output={"logs": logs, "searched_range": scope["range"]},
            retrieval_details={"evidence_status": "supported", "evidence_refs": log_refs, "level": "ERROR", **scope},
        ),
    ]
    bound = [(1, "query_metrics", ref) for ref in series_refs] + [(2, "query_logs", ref) for ref in log_refs]
    claims = [
        {
            "claim_id": f"claim-{n}",
            "claim_type": "observation",
            "claim_text": f"api reported: {ref['text']}",
            "evidence_bindings": [
                {
                    "tool_name": tool,
                    "source_invocation_id": invocation,
                    "raw_path": ref["raw_path"],
                    "evidence_excerpt": ref["text"],
                }
            ],
        }
        for n, (invocation, tool, ref) in enumerate(bound, start=1)
    ]
    executor = {"answer_version": "executor_evidence_v2", "claims": claims}
    gated = gate(executor, invocations, load_rules(REPO / "rules.toml"))
    checks = [{"claim_id": c["claim_id"], "verification": "direct_support", "is_critical": True} for c in claims]
    answer = "Findings:\n" + "\n".join(f"- {c['claim_text']} [{n}]." for n, c in enumerate(claims, start=1))
    outputs = [
        StageOutput(stage="plan", output={"plan": ["query_metrics(service='api')", "query_logs(service='api')"]}),
        StageOutput(stage="execute", output=executor),
        StageOutput(stage="verify", output={"verdict": "PASS", "claim_checks": checks, "groundedness_score": 1.0}),
        StageOutput(stage="compose", output={"answer_summary": "", "user_facing_answer": answer}),
    ]
    run = RunRecord(session_id="bench-report-500", question="why is api failing?", status="completed", verdict="PASS")
    document = SessionDocument(
        run=run,
        invocations=invocations,
        stage_outputs=outputs,
        gate_results=[StoredGateResult(seq=1, result=gated)],
    )
    return document, gated


def main() -> None:
    as_installed()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    started = time.perf_counter()
    repeats = 3 if args.quick else 7
    sys.path.insert(0, str(REPO))
    from evcli.report import render
    from evcli.report.model import report_model

    document, gated = _session()
    citations = len(report_model(document).citations)
    log(f"session: {citations} citations, gate {gated.status}/{gated.severity.value}")
    results: dict = {}
    errors: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="evcli-bench-report-") as tmp:
        source, page = Path(tmp) / "session.json", Path(tmp) / "report.html"
        source.write_text(document.model_dump_json(), encoding="utf-8")
        in_process = []
        for _ in range(repeats):
            began = time.perf_counter()
            render(document, "html")
            in_process.append(time.perf_counter() - began)
        environment = dict(os.environ, EVCLI_HOME=tmp)
        db = str(Path(tmp) / "evcli.db")
        report = [sys.executable, "-m", "evcli", "report", "--format", "html", "-o", str(page), "--db", db]
        stored, from_file, baseline = [], [], []
        try:
            run_cmd([sys.executable, "-m", "evcli", "import", str(source), "--db", db], environment)
            for _ in range(repeats):
                baseline.append(run_cmd([sys.executable, "-m", "evcli", "--help"], environment)[0])
                stored.append(run_cmd([*report, document.run.session_id], environment)[0])
                from_file.append(run_cmd([*report, str(source)], environment)[0])
        except RuntimeError as exc:
            errors["report_html_500"] = str(exc)
        size = page.stat().st_size if page.exists() else 0
    median = statistics.median(stored) if stored else float("inf")
    results["report_html_500"] = {
        "seconds": r4(median),
        "statistic": f"median of {len(stored)} whole processes, stored session",
        "runs_s": [r4(t) for t in stored],
        "render_in_process_s": r4(statistics.median(in_process)),
        # the same machine's start-up alone (`evcli --help`): what the report adds is the difference
        "help_baseline_s": r4(statistics.median(baseline)) if baseline else None,
        "citations": citations,
        "target_s": 0.5,
        "ok": median <= 0.5 and citations == 500,
    }
    # An exported file is masked for secrets string by string when read (evcli.store.documents), no target of its own.
    results["report_html_500_from_file"] = {
        "seconds": r4(statistics.median(from_file)) if from_file else None,
        "runs_s": [r4(t) for t in from_file],
    }
    results["report_html_size"] = {"bytes": size, "target_bytes": 1_000_000, "ok": 0 < size <= 1_000_000}
    log(f"report: {median:.3f} s whole process, {statistics.median(in_process):.3f} s in process, {size} bytes")
    finish(results, {}, errors, started)


if __name__ == "__main__":
    main()
