"""A first tool call on a big snapshot file is not timed out by building its index (issue 27): the tools'
`prepare` builds the log index of the files the call reads, and the snapshot's clock (the trace index),
before the call's deadline starts. Each test runs the real `evcli tool` command on real files with a
timeout far shorter than the build; the same call without the hook times out (checked here too, so the
files are known to be big enough)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from evcli.backends.logindex import SUFFIX
from evcli.tools import registry
from tests.backends.test_trace_index import write_calls
from tests.cli._util import evcli

LINES = 450_000  # ~34 MB: over 1 s to index (polars) on a quiet 2-core machine, against a 0.4 s timeout
TIMEOUT_S = "0.4"


def write_log(path: Path, lines: int) -> None:
    """`lines` ISO 8601 lines in time order, one in 17 an ERROR naming a read Timeout."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        for index in range(lines):
            second, tenth = divmod(index, 10)
            stamp = f"2026-07-08T{second // 3600 % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}.{tenth}00Z"
            if index % 17 == 0:
                handle.write(
                    f"{stamp} ERROR [app-{index % 5}] payment call failed: read Timeout after {index % 900}ms\n"
                )
            elif index % 5 == 0:
                handle.write(f"{stamp} WARN [app-{index % 5}] pool wait {index % 300}ms for order ORD-{index}\n")
            else:
                handle.write(f"{stamp} INFO [app-{index % 5}] served GET /api/items/{index % 9999} in {index % 90}ms\n")


def grep_count(path: Path, word: str) -> int:
    """What `grep -ci word` counts: the lines holding it, ASCII case ignored."""
    with path.open() as handle:
        return sum(word in line.lower() for line in handle)


def index_files(home: Path) -> list[Path]:
    """The log index files (one store per log file) in `home`."""
    return sorted((home / "logindex").glob(f"*{SUFFIX}")) if (home / "logindex").is_dir() else []


def without_prepare(monkeypatch, name: str) -> None:
    """The tool as it was before issue 27: no `prepare`, so a first build runs under the call's deadline."""
    monkeypatch.setitem(registry._SPECS, name, dataclasses.replace(registry.get(name), prepare=None))


def tool(name: str, env: Path, *options: str, code: int = 0) -> dict:
    """The invocation `evcli tool NAME --env ENV ... --json` recorded; it exits 1 when the call failed."""
    run = evcli("tool", name, "--env", env, *options, "--json")
    assert run.exit_code == code, run
    return run.json()


@pytest.fixture
def big_log(tmp_path, monkeypatch) -> Path:
    env = tmp_path / "env"
    write_log(env / "logs" / "app.log", LINES)
    (env / "logs" / "db.log").write_text("2026-07-08T00:00:01Z ERROR db read timeout\n")
    monkeypatch.setenv("EVCLI_TOOL_TIMEOUT_S", TIMEOUT_S)
    return env


def test_the_first_query_of_a_big_log_answers_under_a_timeout_shorter_than_its_build(big_log, evcli_home):
    called = tool("query_logs", big_log, "--service", "app", "--query", "timeout")
    assert called["success"], called["output"]
    assert called["output"]["total"] == grep_count(big_log / "logs" / "app.log", "timeout") > 8_000
    assert called["duration_ms"] > float(TIMEOUT_S) * 1000  # the build did take longer than the timeout
    assert [path.name.split("-")[0] for path in index_files(evcli_home)] == [
        called["output"]["digests"]["logs/app.log"][7:]
    ]


def test_without_its_prepare_the_same_first_query_times_out_and_keeps_no_index(big_log, evcli_home, monkeypatch):
    without_prepare(monkeypatch, "query_logs")
    called = tool("query_logs", big_log, "--service", "app", "--query", "timeout", code=1)
    assert not called["success"] and "timed out" in called["error_message"], called
    assert index_files(evcli_home) == [] and not list((evcli_home / "logindex").glob(".building-*"))


def test_a_query_naming_a_service_builds_only_its_files_and_an_unknown_one_none(tmp_path, evcli_home):
    env = tmp_path / "env"
    write_log(env / "logs" / "app.log", 500)
    write_log(env / "logs" / "other.log", 400)
    unknown = tool("query_logs", env, "--service", "nosuch", "--query", "timeout")
    assert "unknown service" in unknown["output"]["message"] and index_files(evcli_home) == []
    named = tool("query_logs", env, "--service", "app", "--query", "timeout")
    assert named["output"]["total"] == grep_count(env / "logs" / "app.log", "timeout")
    assert len(index_files(evcli_home)) == 1
    every = tool("query_logs", env, "--query", "timeout")
    assert every["output"]["total"] == named["output"]["total"] + grep_count(env / "logs" / "other.log", "timeout")
    assert len(index_files(evcli_home)) == 2


def test_find_changes_builds_every_log_index_before_its_deadline(big_log, evcli_home, monkeypatch):
    called = tool("find_changes", big_log)
    assert called["success"], called["output"]
    assert len(index_files(evcli_home)) == 2  # both services' logs
    for index in index_files(evcli_home):
        index.unlink()
    without_prepare(monkeypatch, "find_changes")
    called = tool("find_changes", big_log, code=1)
    assert not called["success"] and "timed out" in called["error_message"], called


def test_the_snapshot_clock_is_read_before_the_deadline_even_when_it_builds_the_trace_index(
    tmp_path, evcli_home, monkeypatch
):
    """query_metrics states the snapshot's whole span, which reads the spans' span: the trace index."""
    env = tmp_path / "env"
    write_calls(env / "traces" / "calls.jsonl", 20_000)
    rows = "".join(f"2026-05-04T16:{minute:02d}:00Z,{10 + minute}\n" for minute in range(30))
    (env / "metrics").mkdir()
    (env / "metrics" / "checkout.csv").write_text("timestamp,cpu_usage[%]\n" + rows)
    monkeypatch.setenv("EVCLI_TOOL_TIMEOUT_S", "0.2")
    called = tool("query_metrics", env, "--service", "checkout")
    assert called["success"], called["output"]
    assert called["output"]["series"][0]["points"] == 30
    # the metric rows' first time to the clock: the newest span's end (20,000 traces 10 ms apart, 90 ms each)
    assert called["retrieval_details"]["range"] == "2026-05-04T16:00:00+00:00..2026-05-04T16:43:20.080000+00:00"
    for index in (evcli_home / "logindex").glob("traces-*.db"):
        index.unlink()
    without_prepare(monkeypatch, "query_metrics")
    called = tool("query_metrics", env, "--service", "checkout", code=1)
    assert not called["success"] and "timed out" in called["error_message"], called
