"""Call edges from traces as one more source of the topology the change ranking reads: the find_changes
snapshot of tests/tools/test_find_changes.py without a declared topology and without log lines naming a
peer, where only a traces/ file tells that gateway calls checkout and checkout calls payment."""

from __future__ import annotations

import json
from pathlib import Path

from evcli.diagnosis.topology import merged, traced_calls
from tests.tools.test_find_changes import START, build
from tests.tools.test_find_changes import _changes as changes


def test_traced_calls_keep_each_caller_once_and_no_self_call():
    pairs = [("gateway", "checkout"), ("checkout", "payment"), ("gateway", "checkout"), ("db", "db")]
    assert traced_calls(pairs) == {"gateway": ("checkout",), "checkout": ("payment",)}
    assert merged({"gateway": ("catalog",)}, traced_calls(pairs))["gateway"] == ("catalog", "checkout")


def _without_peers(directory: Path) -> Path:
    """The checkout log without its lines naming payment: nothing but traces may tell who calls whom."""
    log = directory / "logs" / "checkout.log"
    log.write_text("".join(line for line in log.read_text().splitlines(True) if "payment" not in line))
    return directory


def _write_traces(directory: Path) -> None:
    """One Jaeger export: gateway → checkout → payment, and an orphan catalog span (no edge)."""
    start_us = int(START.timestamp() * 1_000_000)
    spans = [
        ("g1", None, "p1", "GET /checkout", 0),
        ("c1", "g1", "p2", "POST /checkout", 1_000),
        ("x1", "c1", "p3", "charge", 2_000),
        ("k1", "missing", "p4", "list", 3_000),
    ]
    trace = {
        "traceID": "aa11",
        "spans": [
            {
                "traceID": "aa11",
                "spanID": span_id,
                "operationName": operation,
                "references": [{"refType": "CHILD_OF", "traceID": "aa11", "spanID": parent}] if parent else [],
                "startTime": start_us + offset,
                "duration": 50_000,
                "processID": process,
            }
            for span_id, parent, process, operation, offset in spans
        ],
        "processes": {
            "p1": {"serviceName": "gateway"},
            "p2": {"serviceName": "checkout"},
            "p3": {"serviceName": "payment"},
            "p4": {"serviceName": "catalog"},
        },
    }
    (directory / "traces").mkdir()
    (directory / "traces" / "jaeger.json").write_text(json.dumps({"data": [trace]}))


def test_without_traces_nothing_says_who_payment_affects(tmp_path):
    output = changes(_without_peers(build(tmp_path / "env", topology=False)))["output"]
    assert output["suspects"][0]["service"] == "payment"
    assert output["suspects"][0]["affects"] == []
    assert "call edges from traces" not in output["ranked_by"]


def test_call_edges_from_traces_rank_the_callee_that_changed_first_above_its_callers(tmp_path):
    directory = _without_peers(build(tmp_path / "env", topology=False))
    _write_traces(directory)
    output = changes(directory)["output"]
    assert "call edges from traces" in output["ranked_by"]
    assert "peers named in log lines" not in output["ranked_by"]
    first = output["suspects"][0]
    assert first["service"] == "payment" and first["affects"] == ["checkout", "gateway"]
    ranked = [suspect["service"] for suspect in output["suspects"]]
    assert ranked.index("payment") < ranked.index("checkout") < ranked.index("gateway")
