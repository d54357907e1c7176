"""query_metrics through the CLI: the range it searched is stated in absolute times with the
environment's zone, also when it found nothing (issue 9), and it is the same whole-snapshot range
query_logs states for any service."""

from __future__ import annotations

from pathlib import Path

import evcli
from evcli.contracts import NO_EVIDENCE_PATH
from tests.cli._util import evcli as run_evcli

HOST = Path(evcli.__file__).resolve().parent / "envs" / "host"
HOST_SPAN = "2026-03-18T07:40:00+01:00..2026-03-18T09:30:00+01:00"  # first timestamp .. env.toml now, Berlin


def _run(tool: str, *args: str) -> dict:
    run = run_evcli("tool", tool, "--env", HOST, "--json", *args)
    assert run.exit_code == 0, run
    return run.json()


def test_no_series_and_no_named_time_states_the_whole_snapshot_in_absolute_times():
    invocation = _run("query_metrics", "--alertname", "NoSuchAlert")
    details = invocation["retrieval_details"]
    [ref] = details["evidence_refs"]
    assert ref["raw_path"] == NO_EVIDENCE_PATH
    assert f"range={HOST_SPAN} (whole snapshot)" in ref["text"]
    assert (details["range"], details["range_origin"]) == (HOST_SPAN, "whole snapshot")
    assert invocation["output"]["searched_range"] == HOST_SPAN


def test_metrics_and_the_logs_of_any_service_state_one_whole_snapshot_range():
    ranges = {_run("query_metrics", "--service", "nginx")["output"]["searched_range"]}
    for service in ("auth", "nginx", "worker"):
        ranges.add(_run("query_logs", "--service", service, "--limit", "1")["output"]["searched_range"])
    assert ranges == {HOST_SPAN}


def test_a_named_range_without_hits_is_stated_with_its_zone():
    invocation = _run("query_metrics", "--alertname", "NoSuchAlert", "--since", "09:00", "--until", "09:10")
    [ref] = invocation["retrieval_details"]["evidence_refs"]
    assert "range=2026-03-18T09:00:00+01:00..2026-03-18T09:10:00+01:00 (question/call)" in ref["text"]
