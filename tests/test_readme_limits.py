"""The README's "What `ask` reads from a question" limit, as `evcli ask` behaves on the packaged environments:
what it reads (counts, named times, alert states) and what it does not (two periods, a ranking of services).
A change of either makes this fail, so the README is changed with it."""

from __future__ import annotations

from typing import Any

import pytest

from evcli.store.db import TraceStore
from tests.cli._util import evcli
from tests.conftest import REPO

README = (REPO / "README.md").read_text()


def ask(db_path, question: str, *options: str) -> tuple[dict[str, Any], list[Any]]:
    run = evcli("ask", question, *options, "--json")
    assert run.exit_code == 0, run
    result = run.json()
    with TraceStore(db_path) as store:
        return result, store.load(result["session_id"]).invocations


def cited(result: dict[str, Any]) -> set[str]:
    return {evidence["raw_path"] for claim in result["claims"] for evidence in claim["evidence"]}


def test_the_readme_states_what_ask_reads():
    assert "- **What `ask` reads from a question.**" in README
    for quoted in ("between 22:40 and 22:50", "Is ZooKeeperDown still firing?", "which service logged the most"):
        assert quoted in " ".join(README.split()), quoted


def test_how_many_is_answered_from_stats(db_path):
    result, _ = ask(db_path, "How many errors did payment-service log?")
    assert "$.stats" in cited(result)
    assert "Counted 18 matching lines" in result["answer"]["user_facing_answer"]


@pytest.mark.parametrize(
    ("question", "since", "until"),
    [
        ("What did order-service log between 22:40 and 22:50?", "22:40", "22:50"),
        ("What did order-service log at 22:42?", "22:37", "22:47"),
    ],
)
def test_a_named_time_becomes_since_and_until(db_path, question, since, until):
    _, invocations = ask(db_path, question)
    logs = [i.input_params for i in invocations if i.tool_name == "query_logs"]
    assert logs and all(p["since"].startswith(f"2026-07-08T{since}") for p in logs), logs
    assert all(p["until"].startswith(f"2026-07-08T{until}") for p in logs), logs


@pytest.mark.parametrize(
    ("question", "env", "shown"),
    [
        ("Is HighCPUUsage still firing?", "demo", "has a firing HighCPUUsage alert"),
        ("Is ZooKeeperDown still firing?", "host", "has a resolved ZooKeeperDown alert"),
        ("Is DiskSpaceLow silenced?", "host", "has a suppressed DiskSpaceLow alert"),
    ],
)
def test_an_alert_state_asked_looks_at_every_state(db_path, question, env, shown):
    result, invocations = ask(db_path, question, "--env", env)
    assert [i.input_params.get("state") for i in invocations if i.tool_name == "query_metrics"] == ["any"]
    assert shown in result["answer"]["user_facing_answer"]


def test_two_periods_are_searched_as_one(db_path):
    _, invocations = ask(
        db_path, "Did payment-service log more errors in the last 10 minutes than in the 10 minutes before?"
    )
    ranges = {(i.input_params.get("window"), i.input_params.get("since")) for i in invocations}
    assert ranges == {("10m", None)}


def test_services_are_not_ranked_by_a_count(db_path):
    result, invocations = ask(db_path, "Which service logged the most errors?")
    read = [i.input_params for i in invocations if i.tool_name == "query_logs"]
    assert sorted(p["service"] for p in read) == ["order-service", "payment-service"]
    assert all(p["level"] == "WARN" for p in read)
    assert "$.stats" not in cited(result)
