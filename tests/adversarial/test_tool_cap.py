"""Probe: the per-session tool cap holds when many `evcli tool … --session SID` processes race.

16 real processes, each with different keywords (so the repeat guard does not refuse them),
record into one real SQLite store; every call is slow enough (a generated log) that all of them
load the session before the first one is recorded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from evcli.store.db import TraceStore
from evcli.tools.runner import ToolSettings
from tests.conftest import REPO

CALLS = 16
CAP = ToolSettings().max_calls_per_tool
LINE = "2026-07-08T23:00:00.000Z ERROR [checkout-1] payment failed for order {n} after retry\n"


def slow_env(root: Path, lines: int = 3_000) -> Path:
    (root / "logs").mkdir(parents=True)
    (root / "env.toml").write_text('name = "race"\nnow = "2026-07-08T23:10:00Z"\n', encoding="utf-8")
    (root / "logs" / "checkout.log").write_text("".join(LINE.format(n=n) for n in range(lines)), encoding="utf-8")
    return root


def test_concurrent_calls_store_exactly_cap_invocations_with_contiguous_ids(tmp_path):
    db = tmp_path / "evcli.db"
    env = slow_env(tmp_path / "env")
    with TraceStore(db) as store:  # a session on that snapshot: calls into it must name it or nothing
        session = store.create_session("race the cap", config={"env": {"env_dir": str(env)}}).session_id
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "evcli",
                "tool",
                "query_logs",
                "--env",
                str(env),
                "--service",
                "checkout",
                "--query",
                f"payment {n}",
                "--window",
                "1h",
                "--session",
                session,
                "--db",
                str(db),
            ],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "NO_COLOR": "1", "COLUMNS": "4000"},
        )  # fmt: skip
        for n in range(100, 100 + CALLS)
    ]
    results = [(process.wait(timeout=60), process.stderr.read() if process.stderr else "") for process in processes]
    with TraceStore(db) as store:
        ids = [invocation.invocation_id for invocation in store.load(session).invocations]
    assert ids == list(range(1, CAP + 1))
    refused = [stderr for code, stderr in results if code == 2]
    assert len(refused) == CALLS - CAP, results
    for stderr in refused:
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and f"(cap {CAP})" in lines[0] and "refused" in lines[0], stderr
    assert sorted(code for code, _ in results) == [0] * CAP + [2] * (CALLS - CAP), results
