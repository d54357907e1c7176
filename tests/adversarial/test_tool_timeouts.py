"""Probes: a tool call's timeout stops the work, fails the invocation and lets the process exit.

Real snapshot files generated in tmp (many log lines, one huge line), the real runner and the
real `python -m evcli tool` process; CPU time is measured on the process itself (in-process:
`time.process_time`; a subprocess: `os.wait4`'s rusage).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from evcli.backends.snapshot import SnapshotBackend
from evcli.tools.runner import ToolEnvironment, ToolSettings, run_tool
from tests.conftest import REPO

TIMEOUT_S = 0.3
ENV_TOML = 'name = "big"\nnow = "2026-07-08T23:10:00Z"\n'
# not ASCII (a German message): such lines are counted by address line by line in Python, the slowest work a
# count does (plain ASCII lines are counted vectorised, 150k of them in about 0.1 s)
LINE = "2026-07-08T23:00:00.000Z ERROR [checkout-1] payment failed for order 4711 after retry (Zahlung für Müller)\n"


def many_lines_env(root: Path, lines: int = 150_000) -> Path:
    """A snapshot whose one log has `lines` matching lines: counting them by address takes well over TIMEOUT_S
    (the index is built before the deadline starts)."""
    (root / "logs").mkdir(parents=True)
    (root / "env.toml").write_text(ENV_TOML, encoding="utf-8")
    (root / "logs" / "checkout.log").write_text(LINE * lines, encoding="utf-8")
    return root


def one_huge_line_env(root: Path, megabytes: int = 40) -> Path:
    """A snapshot whose log is a single line of `megabytes` MiB (no newline at all)."""
    (root / "logs").mkdir(parents=True)
    (root / "env.toml").write_text(ENV_TOML, encoding="utf-8")
    with (root / "logs" / "checkout.log").open("w", encoding="utf-8") as handle:
        handle.write("2026-07-08T23:00:00Z ERROR payment ")
        chunk = "x" * (1 << 20)
        for _ in range(megabytes):
            handle.write(chunk)
    return root


def evcli_tool(env: Path, *extra: str, timeout_s: float = TIMEOUT_S) -> tuple[int, str, float, float]:
    """(exit code, stderr, wall seconds, CPU seconds) of `evcli tool query_logs` on `env`."""
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "evcli", "tool", "query_logs", "--env", str(env), "--service", "checkout",
         "--query", "payment", "--window", "1h", *extra],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "EVCLI_TOOL_TIMEOUT_S": str(timeout_s), "NO_COLOR": "1", "COLUMNS": "4000"},
    )  # fmt: skip
    try:
        stderr = process.stderr.read() if process.stderr else ""
        _, status, usage = os.wait4(process.pid, 0)
    finally:
        if process.poll() is None:
            process.kill()
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, stderr, time.monotonic() - started, usage.ru_utime + usage.ru_stime


def test_a_timed_out_call_stops_its_work_and_fails(tmp_path):
    env = ToolEnvironment(
        backend=SnapshotBackend(many_lines_env(tmp_path / "env")),
        knowledge=lambda: None,
        settings=ToolSettings(timeout_s=TIMEOUT_S),
    )
    # the log index is built before the deadline starts (ToolSpec.prepare): a first call builds it; counting
    # 150k matches by address is the work the deadline must stop
    assert run_tool("query_logs", {"service": "checkout", "query": "order", "limit": 1}, env).success
    started = time.monotonic()
    invocation = run_tool(
        "query_logs", {"service": "checkout", "query": "payment", "window": "1h", "count_by": "address"}, env
    )
    waited = time.monotonic() - started
    assert not invocation.success and invocation.retrieval_details.evidence_status == "failed"
    assert invocation.error_message == f"timed out after {TIMEOUT_S:g}s"
    assert waited < TIMEOUT_S + 0.5
    cpu_before = time.process_time()
    time.sleep(0.6)  # an abandoned worker that kept scanning would spend this on CPU
    assert time.process_time() - cpu_before < 0.15


def test_the_timeout_is_configurable_and_the_process_exits_promptly(tmp_path):
    env = many_lines_env(tmp_path / "env")
    # built ahead (as `evcli env index` does for an operator): the timed process only starts, counts and exits
    subprocess.run([sys.executable, "-m", "evcli", "env", "index", str(env)], cwd=REPO, capture_output=True, check=True)
    code, stderr, wall, cpu = evcli_tool(env, "--count-by", "address")
    assert code == 1, stderr
    assert f"timed out after {TIMEOUT_S:g}s" in stderr
    assert wall < 4 and cpu < 3  # start-up, the 0.3 s of work, and nothing after it


def test_a_bad_timeout_setting_is_a_usage_error(tmp_path):
    env = many_lines_env(tmp_path / "env", lines=10)
    code, stderr, _, _ = evcli_tool(env, timeout_s=-1)
    assert code == 2, stderr
    assert "EVCLI_TOOL_TIMEOUT_S" in stderr and len(stderr.strip().splitlines()) == 1


def test_a_single_huge_line_cannot_stall_a_query(tmp_path):
    env = one_huge_line_env(tmp_path / "env")
    code, stderr, wall, cpu = evcli_tool(env, timeout_s=5)
    assert code == 0, stderr  # the line is read up to the line limit, and the query says so
    assert wall < 4 and cpu < 3


def test_a_huge_line_is_searched_up_to_the_line_limit_and_the_result_says_so(tmp_path):
    backend = SnapshotBackend(one_huge_line_env(tmp_path / "env", megabytes=3))
    env = ToolEnvironment(backend=backend, knowledge=lambda: None)
    # the log index is built before the deadline starts (ToolSpec.prepare); counting 150k matches by address is
    # the work the deadline must stop
    invocation = run_tool(
        "query_logs", {"service": "checkout", "query": "payment", "window": "1h", "count_by": "address"}, env
    )
    assert invocation.success and invocation.output["total"] == 1
    assert "longer than" in invocation.output["message"]
