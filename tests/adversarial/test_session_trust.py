"""Session-file trust: hand edits of an exported session must not pass `evcli gate`.

Each probe edits a real session file the way an attacker would and gates it
with the real CLI: (a) an invocation added by hand, (b) a ref text edited while
the recorded output is unchanged, (c) two invocations with the same id, (d) a
citation of an invocation recorded as failed, and (e) an export forged
consistently (output, refs and excerpts), which only `gate --against DIR` can
see, because nothing in a document is signed.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from evcli.backends.snapshot import demo_env_dir
from tests.cli._util import evcli, export_offline_session, load_json
from tests.conftest import sample

BASE = sample("broad-order-service")
FORGED_FACT = "root cause confirmed: database migration 42 failed"
QUESTION = "Why is order-service failing? It keeps restarting and checkout requests time out."


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> dict:
    """An offline ask on the packaged demo environment, exported (built once, copied per probe)."""
    return load_json(export_offline_session(tmp_path_factory.mktemp("fresh"), QUESTION, demo_env_dir()))


def _write(tmp_path: Path, document: dict, name: str = "edited.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    return path


def _gate(path: Path, *args) -> tuple[int, dict]:
    run = evcli("gate", path, "--json", *args)
    return run.exit_code, run.json()["result"]


def _execute(document: dict) -> dict:
    return next(s for s in document["stage_outputs"] if s["stage"] == "execute")["output"]


def _invocation(document: dict, invocation_id: int) -> dict:
    return next(i for i in document["invocations"] if i["invocation_id"] == invocation_id)


def _cite(document: dict, invocation: dict, raw_path: str, excerpt: str) -> None:
    """A new claim of the executor output bound to invocation/raw_path."""
    _execute(document)["claims"].append(
        {
            "claim_id": "claim-forged",
            "claim_type": "root_cause",
            "claim_text": FORGED_FACT,
            "support_level": "direct",
            "evidence_bindings": [
                {
                    "source_type": "tool_trace",
                    "source_id": "",
                    "tool_name": invocation["tool_name"],
                    "source_invocation_id": invocation["invocation_id"],
                    "raw_path": raw_path,
                    "evidence_excerpt": excerpt,
                }
            ],
        }
    )


def _add_forged_log(document: dict, source_id: int, **changes) -> dict:
    """A copy of a query_logs invocation whose first line says FORGED_FACT, in output and ref alike."""
    added = copy.deepcopy(_invocation(document, source_id))
    added["output"]["logs"][0]["message"] += f"; {FORGED_FACT}"
    if "line" in added["output"]["logs"][0]:  # since issue 9 a log ref renders the original line
        added["output"]["logs"][0]["line"] += f"; {FORGED_FACT}"
    ref = next(r for r in added["retrieval_details"]["evidence_refs"] if r["raw_path"] == "$.logs[0]")
    ref["text"] += f"; {FORGED_FACT}"
    added.update(changes)
    document["invocations"].append(added)
    _cite(document, added, "$.logs[0]", FORGED_FACT)
    return added


# --- (a) an invocation added by hand ------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {"invocation_id": 9},  # beyond 1..n
        {"invocation_id": 6, "created_at": "2026-07-08T23:59:00.000000Z"},  # after the executor output citing it
        {"invocation_id": 6, "round": 2},  # a round in which the executor called no tool
    ],
    ids=["id-gap", "after-output", "other-round"],
)
def test_hand_added_invocation_is_not_accounted_for(tmp_path, changes):
    document = load_json(BASE)
    _add_forged_log(document, 2, **changes)

    code, result = _gate(_write(tmp_path, document))

    assert code == 3 and result["failed_rules"] == ["invocation.recorded_by_run"], result


def test_hand_added_invocation_beyond_the_listed_tool_calls_is_not_accounted_for(tmp_path, fresh):
    document = copy.deepcopy(fresh)
    metrics = next(i for i in document["invocations"] if i["tool_name"] == "query_metrics")
    # The executor step that called query_metrics recorded its complete call list: one query_metrics call.
    step = next(
        s
        for s in document["steps"]
        if s["agent"] == "executor" and s["has_tool_call"] and '"query_metrics"' in s["model_output_summary"]
    )
    listed = json.loads(step["model_output_summary"])
    assert listed.count({"tool": "query_metrics", "arguments": {"service": "order-service"}}) == 1
    for other in document["steps"]:
        if other is not step and other["has_tool_call"]:
            other["has_tool_call"] = False  # the attacker also hides the truncated call lists
    added = copy.deepcopy(metrics)
    added.update(invocation_id=len(document["invocations"]) + 1)
    document["invocations"].append(added)
    _cite(document, added, "$.alerts[0]", "HighMemoryUsage, service=order-service")

    code, result = _gate(_write(tmp_path, document))

    assert code == 3 and "invocation.recorded_by_run" in result["failed_rules"], result


def test_consistent_hand_added_invocation_is_caught_against_the_sources(tmp_path, fresh):
    document = copy.deepcopy(fresh)
    source = next(i for i in document["invocations"] if i["tool_name"] == "query_logs" and i["output"]["logs"])
    added = _add_forged_log(document, source["invocation_id"], invocation_id=len(document["invocations"]) + 1)
    path = _write(tmp_path, document)

    # Nothing in the document shows it (its time, round and id are plausible) ...
    code, result = _gate(path)
    assert code == 0, result
    # ... but re-run on the environment the session claims, its line is not there.
    code, result = _gate(path, "--against", demo_env_dir())
    assert code == 4 and result["failed_rules"] == ["provenance.source_matches"], result
    assert f"invocation {added['invocation_id']} (query_logs" in result["errors"][0]["message"]


# --- (b) a ref text edited, recorded output unchanged ---------------------------------------------


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text.replace("restart_count=3", "restart_count=30"),
        lambda text: f"{text}; {FORGED_FACT}",
        lambda text: text.replace("ERROR", "WARN"),
    ],
    ids=["number", "appended", "level"],
)
def test_edited_ref_text_is_rejected(tmp_path, edit):
    document = load_json(BASE)
    ref = _invocation(document, 2)["retrieval_details"]["evidence_refs"][2]
    ref["text"] = edit(ref["text"])
    _execute(document)["claims"][2]["evidence_bindings"][1]["evidence_excerpt"] = ref["text"]

    code, result = _gate(_write(tmp_path, document))

    assert code == 4 and result["failed_rules"] == ["invocation.refs_derivable"], result


def test_no_evidence_ref_naming_another_scope_is_rejected(tmp_path):
    document = load_json(BASE)
    ref = _invocation(document, 5)["retrieval_details"]["evidence_refs"][0]
    ref["text"] = ref["text"].replace("window=1h", "window=7d")  # claims a wider search than was made

    code, result = _gate(_write(tmp_path, document))

    assert code == 4 and result["failed_rules"] == ["invocation.refs_derivable"], result


# --- (c) two invocations with the same id ----------------------------------------------------------


@pytest.mark.parametrize("position", ["after", "before"])
def test_duplicate_invocation_id_is_rejected_whichever_comes_first(tmp_path, position):
    document = load_json(BASE)
    twin = copy.deepcopy(_invocation(document, 3))
    twin["output"]["logs"][0]["message"] += f"; {FORGED_FACT}"
    twin["retrieval_details"]["evidence_refs"][0]["text"] += f"; {FORGED_FACT}"
    document["invocations"].insert(len(document["invocations"]) if position == "after" else 0, twin)
    _cite(document, twin, "$.logs[0]", FORGED_FACT)

    code, result = _gate(_write(tmp_path, document))

    assert code == 4 and "invocation.ids_unique" in result["failed_rules"], result
    forged = [b for b in result["checked_bindings"] if b["claim_id"] == "claim-forged"]
    assert forged[0]["status"] == "fail" and forged[0]["matched_text"] is None


# --- (d) a citation of an invocation recorded as failed ----------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {"success": False, "error_message": "timed out after 15s"},
        {"evidence_status": "failed"},
    ],
    ids=["success-false", "status-failed"],
)
def test_citing_a_failed_invocation_is_rejected(tmp_path, changes):
    document = load_json(BASE)
    invocation = _invocation(document, 2)
    if "evidence_status" in changes:
        invocation["retrieval_details"].update(changes)
    else:
        invocation.update(changes)

    code, result = _gate(_write(tmp_path, document))

    assert code == 4 and result["failed_rules"] == ["binding.invocation_succeeded"], result


# --- (e) an export forged consistently -------------------------------------------------------------


def test_consistently_forged_export_passes_gate_but_fails_against_the_sources(tmp_path, fresh):
    text = json.dumps(fresh, ensure_ascii=False)
    assert text.count("restartCount=1") >= 3  # output, ref and excerpt all carry it
    path = _write(tmp_path, json.loads(text.replace("restartCount=1", "restartCount=7")), "forged.json")

    plain = evcli("gate", path)
    assert plain.exit_code == 0, plain
    assert "sources not re-checked" in plain.stdout

    against = evcli("gate", path, "--against", demo_env_dir())
    assert against.exit_code == 4, against
    finding = next(
        line for line in against.stdout.splitlines() if line.startswith("✗ provenance.source_matches (reject)")
    )
    assert "restartCount=1" in finding and "restartCount=7" in finding and "(query_logs" in finding
