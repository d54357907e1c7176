"""`evcli gate SESSION --against <prometheus url>` (issue 26): a stored session whose evidence came from a live
Prometheus is re-derived from it, each call with its time pinned to the absolute range it recorded, so an
honest binding still checks out and a value edited consistently in the output, the ref and the claim fails.
Alerts are Prometheus' state of now and are reported as not re-checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evcli.contracts import SessionConfig, StageOutput, ToolInvocation
from evcli.store.db import TraceStore
from evcli.tools.context import build_environment
from evcli.tools.query_metrics import series_text
from evcli.tools.runner import run_tool
from tests.cli._util import evcli, import_sample

EXPRESSION = "sum by (status) (rate(shop_orders_total[4s]))"
# (parameters, cited raw_path): a relative window, no time at all (the live default hour), since/until, an instant
SHOP_CALLS = [
    ({"service": "shop", "metric": "shop_queue_depth", "labels": ["queue=email"]}, "$.series[0]"),
    ({"service": "shop", "metric": "shop_orders_total", "since": "-1m", "until": "-2s"}, "$.series[1]"),
    ({"service": "shop", "metric": "shop_request_seconds", "quantile": 0.9, "window": "1m"}, "$.series[0]"),
    ({"promql": EXPRESSION, "since": "-1m", "until": "-2s"}, "$.series[1]"),
    ({"promql": EXPRESSION, "at": "-2s"}, "$.series[0]"),
]


def claim_text(item: dict[str, Any], raw_path: str) -> str:
    """What a claim citing the item says: an alert as its ref reads, a series' values over its range."""
    if raw_path.startswith("$.alerts"):
        return f"{item['alertname']} is {item['state']} on {item['service']}."
    if item.get("instant"):
        return f"{item['query']} for {item['selector']} was {item['last']} at {item['last_at']}."
    values = ", ".join(f"{key}={item[key]}{item['unit']}" for key in ("min", "max", "last"))
    return f"{item['selector']} over range={item['range']}: {values}."


def item_at(invocation: ToolInvocation, raw_path: str) -> dict[str, Any]:
    array, _, index = raw_path.removeprefix("$.").rstrip("]").partition("[")
    return invocation.output[array][int(index)]


def stored_session(db: Path, url: str, calls: list[tuple[dict[str, Any], str]]) -> str:
    """A session on the Prometheus at `url`: the calls run for real and recorded, then an executor output
    citing one item of each, its excerpt the whole ref."""
    environment = build_environment(prometheus=url)
    with TraceStore(db) as store:
        session_id = store.create_session("How is the shop?", config=SessionConfig(env={"prometheus": url})).session_id
        claims = []
        for number, (params, raw_path) in enumerate(calls, start=1):
            invocation = store.record_invocation(session_id, run_tool("query_metrics", params, environment))
            assert invocation.success, invocation.error_message
            ref = next(ref for ref in invocation.retrieval_details.evidence_refs if ref.raw_path == raw_path)
            binding = {
                "source_type": "tool_trace",
                "source_id": "",
                "tool_name": "query_metrics",
                "source_invocation_id": invocation.invocation_id,
                "raw_path": raw_path,
                "evidence_excerpt": ref.text,
            }
            claims.append(
                {
                    "claim_id": f"claim-{number}",
                    "claim_type": "observation",
                    "claim_text": claim_text(item_at(invocation, raw_path), raw_path),
                    "support_level": "direct",
                    "evidence_bindings": [binding],
                }
            )
        output = {
            "answer_version": "executor_evidence_v2",
            "claims": claims,
            "hypotheses": [],
            "recommended_actions": [],
            "missing_info": [],
        }
        store.record_stage_output(session_id, StageOutput(stage="execute", output=output))
    return session_id


def gate(*args: Any) -> tuple[int, dict[str, Any]]:
    run = evcli("gate", *args, "--json")
    assert run.exit_code in (0, 3, 4), run
    return run.exit_code, run.json()


def test_a_stored_session_holds_against_the_prometheus_it_ran_on(prometheus_scraping, db_path):
    session_id = stored_session(db_path, prometheus_scraping.url, SHOP_CALLS)
    assert gate(session_id, "--db", db_path)[0] == 0  # the document agrees with itself

    code, report = gate(session_id, "--against", prometheus_scraping.url, "--db", db_path)

    assert code == 0, report["result"]["errors"]
    assert report["sources_rechecked"] is True and report["against"] == prometheus_scraping.url
    assert [binding["status"] for binding in report["result"]["checked_bindings"]] == ["pass"] * len(SHOP_CALLS)
    human = evcli("gate", session_id, "--against", prometheus_scraping.url, "--db", db_path)
    assert human.stdout.splitlines()[-3] == f"sources re-checked: invocations re-run on {prometheus_scraping.url}"


def test_a_value_edited_consistently_holds_in_the_document_but_not_against_prometheus(
    prometheus_scraping, db_path, tmp_path
):
    """The ok rate of call 2 multiplied by ten in the output, its ref, the excerpt and the claim alike."""
    session_id = stored_session(db_path, prometheus_scraping.url, SHOP_CALLS)
    exported = tmp_path / "session.json"
    assert evcli("export", session_id, "-o", exported, "--db", db_path).exit_code == 0
    document = json.loads(exported.read_text(encoding="utf-8"))
    invocation = document["invocations"][1]
    item = invocation["output"]["series"][1]
    item["last"] = round(item["last"] * 10, 3)
    forged = series_text(item)
    invocation["retrieval_details"]["evidence_refs"][1]["text"] = forged
    claim = next(s for s in document["stage_outputs"] if s["stage"] == "execute")["output"]["claims"][1]
    claim["claim_text"] = claim_text(item, "$.series[1]")
    claim["evidence_bindings"][0]["evidence_excerpt"] = forged
    document["run"]["session_id"] = "forged-" + session_id
    tampered = tmp_path / "forged.json"
    tampered.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    stored = import_sample(tampered, db_path)

    code, report = gate(stored, "--db", db_path)
    assert code == 0, report["result"]["errors"]  # consistent in itself
    code, report = gate(stored, "--against", prometheus_scraping.url, "--db", db_path)

    assert code == 4
    errors = report["result"]["errors"]
    assert [(error["rule"], error["claim_id"]) for error in errors] == [("provenance.source_matches", "claim-2")]
    assert errors[0]["message"].startswith("invocation 2 (query_metrics ")
    assert f"$.series[1] does not match its source at {prometheus_scraping.url}" in errors[0]["message"]


def test_a_cited_alert_cannot_be_rechecked_against_prometheus(prometheus, db_path):
    """Prometheus lists the alerts active now, not those of the call's time: the series of the same call is
    re-derived and passes, the alert is reported as not re-checked (and the gate fails, as for any evidence
    `--against` cannot show to be real)."""
    call = {"service": "payment-service", "metric": "cpu_usage_percent", "since": "-10m"}  # until now: the alert is new
    session_id = stored_session(db_path, prometheus.url, [(call, "$.alerts[0]")])
    with TraceStore(db_path) as store:  # the same call's series, cited by a second claim
        document = store.load(session_id)
    execute = document.latest_stage("execute")
    series_claim = dict(execute.output["claims"][0])
    item = document.invocations[0].output["series"][0]
    ref = next(r for r in document.invocations[0].retrieval_details.evidence_refs if r.raw_path == "$.series[0]")
    series_claim.update(
        claim_id="claim-2",
        claim_text=claim_text(item, "$.series[0]"),
        evidence_bindings=[
            {
                **execute.output["claims"][0]["evidence_bindings"][0],
                "raw_path": "$.series[0]",
                "evidence_excerpt": ref.text,
            }
        ],
    )
    with TraceStore(db_path) as store:
        output = {**execute.output, "claims": [*execute.output["claims"], series_claim]}
        store.record_stage_output(session_id, StageOutput(stage="execute", output=output))

    code, report = gate(session_id, "--against", prometheus.url, "--db", db_path)

    assert code == 4
    errors = report["result"]["errors"]
    assert [(error["rule"], error["claim_id"]) for error in errors] == [("provenance.source_matches", "claim-1")]
    assert f"$.alerts[0] cannot be re-checked against {prometheus.url}" in errors[0]["message"]
    assert [binding["status"] for binding in report["result"]["checked_bindings"]] == ["fail", "pass"]


def test_an_invocation_prometheus_does_not_serve_is_not_rechecked(prometheus_scraping, tmp_path):
    """A demo-snapshot session gated against a Prometheus: its runbook and log evidence is not there."""
    from evcli.backends.snapshot import demo_env_dir
    from tests.cli._util import export_offline_session

    path = export_offline_session(tmp_path, "Why is order-service failing? It keeps restarting.", demo_env_dir())

    code, report = gate(path, "--against", prometheus_scraping.url)

    assert code == 4
    messages = [
        error["message"] for error in report["result"]["errors"] if error["rule"] == "provenance.source_matches"
    ]
    assert messages and any(f"Prometheus at {prometheus_scraping.url} does not serve it" in m for m in messages), (
        messages
    )


def test_an_offline_answer_on_prometheus_holds_against_it(prometheus_scraping):
    """The path a user takes: ask with --prometheus, then gate the stored session against the same Prometheus."""
    asked = evcli("ask", "How is shop_orders_total of shop?", "--prometheus", prometheus_scraping.url, "--json")
    assert asked.exit_code in (0, 3), asked
    cited = [binding for claim in asked.json()["claims"] for binding in claim["evidence"]]
    assert any(binding["raw_path"].startswith("$.series[") for binding in cited), cited

    code, report = gate("last", "--against", prometheus_scraping.url)

    assert code == 0, report["result"]["errors"]
    assert report["sources_rechecked"] is True


def test_credentials_in_the_against_url_are_sent_but_never_shown_or_stored(prometheus_scraping, db_path):
    session_id = stored_session(db_path, prometheus_scraping.url, SHOP_CALLS[:1])
    with_credentials = prometheus_scraping.url.replace("http://", "http://reader:s3cret@")

    run = evcli("gate", session_id, "--against", with_credentials, "--db", db_path, "--json")

    assert run.exit_code == 0, run
    assert run.json()["against"] == prometheus_scraping.url
    assert "s3cret" not in run.stdout + run.stderr
    with TraceStore(db_path) as store:
        assert "s3cret" not in store.load(session_id).model_dump_json()
