"""Probes: input evcli does not control is bounded and named (issue 28, the input part).

Each probe runs the real `python -m evcli` process (bounded by a timeout) or the real library call:
a model reply over the size cap or not valid UTF-8 (real HTTP from litellm to the scripted
OpenAI-compatible server on 127.0.0.1), a metrics CSV with 20,000 to 1,000,000 columns, an
alerts.json and a JSON log line nested 100,000 deep, a token file and a config file other users can
read or write, and a log query with an apostrophe inside a phrase.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

from evcli.agents.engine import EngineError, RoleRequest
from evcli.agents.llm import LiteLLMEngine
from evcli.agents.prompts import load_prompt
from evcli.tools.params import keywords
from tests.agents.scripted_server import ScriptedServer, answer
from tests.conftest import REPO

QUESTION = "Why is payment-service CPU usage high?"
ENV_TOML = 'name = "bounds"\ntimezone = "UTC"\nnow = "2026-07-08T23:10:00Z"\n'
TEN_MIB = 10 << 20
# The caps as the README states them (evcli.agents.llm.MAX_REPLY_CHARS, snapshot_metrics.MAX_METRIC_COLUMNS).
MAX_REPLY_CHARS = 1 << 20
MAX_METRIC_COLUMNS = 10_000


def run_evcli(*args: str, extra_env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """`python -m evcli ARGS` as a user runs it (EVCLI_HOME is the test's own), killed after `timeout` s."""
    environment = {**os.environ, "NO_COLOR": "1", "COLUMNS": "4000", **(extra_env or {})}
    return subprocess.run(
        [sys.executable, "-m", "evcli", *args],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def error_lines(run: subprocess.CompletedProcess) -> list[str]:
    return [line for line in run.stderr.splitlines() if line.startswith("error:")]


def snapshot(root: Path) -> Path:
    """A small snapshot: env.toml and one log, to which a probe adds its hostile file."""
    (root / "logs").mkdir(parents=True)
    (root / "env.toml").write_text(ENV_TOML, encoding="utf-8")
    (root / "logs" / "svc.log").write_text(
        "2026-07-08T22:30:00Z ERROR Can't find child process 4711\n"
        "2026-07-08T22:31:00Z ERROR connection is not available\n"
        "2026-07-08T22:32:00Z INFO child found, connection available\n",
        encoding="utf-8",
    )
    return root


# --- 1, 2: model replies ----------------------------------------------------------------------------


def test_the_caps_are_the_documented_ones():
    from evcli.agents.llm import MAX_REPLY_CHARS as reply_cap
    from evcli.backends.snapshot_metrics import MAX_METRIC_COLUMNS as column_cap

    assert (reply_cap, column_cap) == (MAX_REPLY_CHARS, MAX_METRIC_COLUMNS)


def model_env(server: ScriptedServer) -> dict[str, str]:
    return {
        "EVCLI_MODEL": "openai/scripted",
        "EVCLI_API_BASE": server.url + "/v1",
        "EVCLI_MODEL_TIMEOUT": "60",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def store_bytes(home: Path) -> int:
    return sum(path.stat().st_size for path in home.glob("evcli.db*"))


def test_a_10_mib_model_reply_is_refused_before_it_is_stored(evcli_home):
    """Every role replies with 10 MiB: each reply is refused at the cap, the step records its size and
    the cap, the run fails as a model failure does (exit 1, one line), and the store stays small."""
    with ScriptedServer(lambda body: answer("x" * TEN_MIB)) as server:
        run = run_evcli("ask", QUESTION, extra_env=model_env(server), timeout=120)
    assert run.returncode == 1, run.stderr
    (line,) = error_lines(run)
    assert "the executor failed" in line and f"over the {MAX_REPLY_CHARS:,}-character cap" in line, line
    assert f"{TEN_MIB:,} characters" in line, line
    assert store_bytes(evcli_home) < 1 << 20, store_bytes(evcli_home)
    database = Database(evcli_home / "evcli.db")
    steps = list(database["agent_step"].rows_where("model = ?", ["openai/scripted"]))
    assert [step["agent"] for step in steps] == ["planner", "planner", "executor"]  # the offline planner planned
    assert all(step["status"] == "RETRYABLE_FAILED" for step in steps), steps
    assert all(f"{TEN_MIB:,} characters" in step["error"] for step in steps)
    assert all(not step["model_output_summary"] for step in steps)
    outputs = list(database["stage_output"].rows)
    assert all(len(row["raw_text"] or "") <= MAX_REPLY_CHARS for row in outputs)


def test_a_reply_at_the_cap_is_still_read(evcli_home):
    """The cap refuses only what is over it: a reply of exactly MAX_REPLY_CHARS reaches the reader."""
    request = RoleRequest(role="planner", prompt=load_prompt("planner"), payload={"question": QUESTION})
    with ScriptedServer(lambda body: answer("y" * MAX_REPLY_CHARS)) as server:
        engine = LiteLLMEngine("openai/scripted", api_base=server.url + "/v1", retries=0)
        reply = engine.complete(request)
    assert len(reply.text) == MAX_REPLY_CHARS


def _not_utf8_completion(body: dict[str, Any]) -> dict[str, Any]:
    completion = {
        "id": "chatcmpl-bad-bytes",
        "object": "chat.completion",
        "created": 1,
        "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "@@"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    return {"raw": json.dumps(completion).encode().replace(b"@@", b"bad \xff\xfe bytes"), "status": 200}


def test_a_reply_that_is_not_utf8_is_named_as_such_in_one_line(evcli_home):
    with ScriptedServer(_not_utf8_completion) as server:
        run = run_evcli("ask", QUESTION, extra_env=model_env(server), timeout=120)
    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr
    (line,) = error_lines(run)
    assert "the model's reply is not valid UTF-8" in line, line
    for internal in ("HTTP 500", "APIResponse", "Received response", "InternalServerError", "codec"):
        assert internal not in line, line


def test_an_undecodable_reply_is_not_asked_again_by_the_engine():
    """It is a reply, not an outage: the pipeline decides on a retry (retryable), the engine asks once."""
    request = RoleRequest(role="planner", prompt=load_prompt("planner"), payload={"question": QUESTION})
    with ScriptedServer(_not_utf8_completion) as server:
        engine = LiteLLMEngine("openai/scripted", api_base=server.url + "/v1", retries=2, backoff=0.01)
        with pytest.raises(EngineError) as raised:
            engine.complete(request)
        assert len(server.requests) == 1
    assert raised.value.retryable
    assert raised.value.message.endswith("the model's reply is not valid UTF-8 (invalid start byte 0xff)")


# --- 3: wide metric files ---------------------------------------------------------------------------


def wide_metrics(root: Path, columns: int, rows: int = 3) -> Path:
    snapshot(root)
    (root / "metrics").mkdir()
    header = "timestamp," + ",".join(f"m{index}" for index in range(columns))
    cells = ",".join("1" for _ in range(columns))
    lines = [header] + [f"2026-07-08T22:{30 + minute:02d}:00Z,{cells}" for minute in range(rows)]
    (root / "metrics" / "svc.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("columns", "stated"),
    [
        (20_000, "20,000"),
        (100_000, "100,000"),
        # its 6.9 MB header is cut at the line limit (1 Mi characters): what was read is a lower bound
        (1_000_000, "at least 144,960"),
    ],
)
def test_a_wide_metrics_file_is_refused_in_bounded_time_naming_the_file(tmp_path, columns, stated):
    """Was 2.7 s (20,000 columns), 80 s (100,000) and 136 s (1,000,000, 13.9 MB) in `env check`."""
    env = wide_metrics(tmp_path / "env", columns)
    refused = f"metrics/svc.csv: {stated} metric columns, more than the {MAX_METRIC_COLUMNS:,} evcli reads"
    started = time.monotonic()
    run = run_evcli("env", "check", str(env), timeout=30)
    seconds = time.monotonic() - started
    assert seconds < 10, seconds
    assert run.returncode == 2, run.stdout[-2000:]
    assert f"error {refused} from one file; split it into files of fewer columns" in run.stdout.splitlines()

    started = time.monotonic()
    query = run_evcli("tool", "query_metrics", "--env", str(env), "--service", "svc", timeout=30)
    assert time.monotonic() - started < 10
    assert query.returncode == 1, query.stderr
    assert refused in query.stderr, query.stderr


def test_a_metrics_file_at_the_column_cap_is_read_whole_and_quickly(tmp_path):
    env = wide_metrics(tmp_path / "env", MAX_METRIC_COLUMNS, rows=30)
    started = time.monotonic()
    run = run_evcli("env", "check", str(env), "--json", timeout=30)
    assert time.monotonic() - started < 10
    assert run.returncode == 0, run.stderr
    (metric_file,) = json.loads(run.stdout)["metric_files"]
    assert len(metric_file["metrics"]) == MAX_METRIC_COLUMNS

    last = f"m{MAX_METRIC_COLUMNS - 1}"
    started = time.monotonic()
    query = run_evcli("tool", "query_metrics", "--env", str(env), "--service", "svc", "--metric", last, "--json")
    assert time.monotonic() - started < 10
    assert query.returncode == 0, query.stderr
    assert [item["metric"] for item in json.loads(query.stdout)["output"]["series"]] == [last]

    # an unknown name is answered with the close names and a bounded list of the others, not all 10,000
    unknown = run_evcli("tool", "query_metrics", "--env", str(env), "--service", "svc", "--metric", "nope", "--json")
    assert unknown.returncode == 0, unknown.stderr
    assert len(unknown.stdout) < 20_000
    assert f"and {MAX_METRIC_COLUMNS - 50:,} more)" in unknown.stdout


# --- 4: deeply nested JSON in a snapshot ------------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000


def test_alerts_json_nested_100000_deep_is_one_line_naming_the_file(tmp_path):
    env = snapshot(tmp_path / "env")
    (env / "alerts.json").write_text(DEEP, encoding="utf-8")
    check = run_evcli("env", "check", str(env), timeout=30)
    assert check.returncode == 2, check.stderr
    assert "Traceback" not in check.stderr
    assert "error alerts.json: nested too deeply to read (no alert list is that deep)" in check.stdout.splitlines()

    query = run_evcli("tool", "query_metrics", "--env", str(env), timeout=30)
    assert query.returncode == 1, query.stderr
    assert query.stderr.splitlines() == [
        "query_metrics failed: alerts.json: nested too deeply to read (no alert list is that deep)"
    ]


def test_a_json_log_line_nested_100000_deep_is_text_not_a_crash(tmp_path):
    env = snapshot(tmp_path / "env")
    deep_object = '{"a":' * 100_000 + "1" + "}" * 100_000
    (env / "logs" / "api.jsonl").write_text(
        '{"timestamp": "2026-07-08T22:30:00Z", "level": "ERROR", "message": "upstream reset"}\n' + deep_object + "\n",
        encoding="utf-8",
    )
    check = run_evcli("env", "check", str(env), timeout=30)
    assert "Traceback" not in check.stderr and "nested" not in check.stderr, check.stderr
    assert "logs/api.jsonl" in check.stdout
    query = run_evcli("tool", "query_logs", "--env", str(env), "--service", "api", "--query", "upstream", timeout=30)
    assert query.returncode == 0, query.stderr
    assert "upstream reset" in query.stdout


# --- 5: secrets and configs other users can read or write --------------------------------------------


@pytest.fixture
def prometheus() -> Iterator[str]:
    """An HTTP server answering every GET as an empty Prometheus API answer; it records the Authorization."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization") or "")
            body = json.dumps({"status": "success", "data": {"alerts": [], "resultType": "matrix", "result": []}})
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
    assert all(header == "Bearer s3cret-token-value" for header in seen), seen


def test_a_token_file_other_users_can_read_is_warned_about(evcli_home, tmp_path, prometheus):
    token = tmp_path / "prometheus.token"
    token.write_text("s3cret-token-value\n", encoding="utf-8")
    evcli_home.mkdir(parents=True, exist_ok=True)
    config = evcli_home / "evcli.toml"
    config.write_text(
        f'[backends.prometheus]\nurl = "{prometheus}"\n[backends.prometheus.auth]\nkind = "bearer"\n'
        f'token_file = "{token}"\n',
        encoding="utf-8",
    )
    config.chmod(0o644)
    token.chmod(0o644)
    run = run_evcli("tool", "query_metrics", timeout=30)
    assert run.returncode == 0, run.stderr
    warnings = [line for line in run.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: token file {token} can be read by other users (mode 0644); run `chmod 600 {token}`"
    ], run.stderr
    assert "s3cret" not in run.stderr
    shown = run_evcli("config", "show", timeout=30)  # where a user looks at what the token file is
    assert shown.returncode == 0 and shown.stderr.splitlines() == warnings, shown.stderr

    token.chmod(0o600)
    run = run_evcli("tool", "query_metrics", timeout=30)
    assert run.returncode == 0, run.stderr
    assert "warning:" not in run.stderr, run.stderr


def test_a_config_file_other_users_can_write_is_warned_about(evcli_home):
    evcli_home.mkdir(parents=True, exist_ok=True)
    config = evcli_home / "evcli.toml"
    config.write_text('env = "demo"\n', encoding="utf-8")
    config.chmod(0o666)
    run = run_evcli("config", "show", timeout=30)
    assert run.returncode == 0, run.stderr
    assert run.stderr.splitlines() == [
        f"warning: config file {config} can be written by other users (mode 0666); run `chmod go-w {config}`"
    ], run.stderr

    config.chmod(0o644)
    run = run_evcli("config", "show", timeout=30)
    assert run.returncode == 0 and run.stderr == "", run.stderr


# --- 6: quotes in a log query ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Can't find child", ("Can't", "find", "child")),
        ('"Can\'t find child"', ("Can't find child",)),
        ("'Can't find child'", ("Can't find child",)),
        ('"connection is not available" pool', ("connection is not available", "pool")),
        ("users' sessions", ("users'", "sessions")),
        ("'twas night", ("'twas", "night")),  # an apostrophe that closes nothing is text
        ('say"hi"now', ('say"hi"now',)),
        ("\"it's 'fine' now\"", ("it's 'fine' now",)),
        (r"C:\temp\x", (r"C:\temp\x",)),
    ],
)
def test_quotes_inside_words_are_text_and_phrase_quotes_open_and_close_at_word_edges(query, expected):
    assert keywords(query) == expected


def test_a_double_quote_that_is_never_closed_is_still_an_error():
    with pytest.raises(ValueError, match='unbalanced quotes: the " of "unclosed opens a phrase that nothing closes'):
        keywords('"unclosed phrase')


def query_logs(env: Path, query: str) -> subprocess.CompletedProcess:
    return run_evcli("tool", "query_logs", "--env", str(env), "--service", "svc", "--query", query, "--json")


def found_lines(run: subprocess.CompletedProcess) -> list[str]:
    assert run.returncode == 0, run.stderr
    return [item["line"] for item in json.loads(run.stdout)["output"]["logs"]]


def test_a_log_query_with_an_apostrophe_finds_the_line(tmp_path):
    env = snapshot(tmp_path / "env")
    wanted = "2026-07-08T22:30:00Z ERROR Can't find child process 4711"
    assert found_lines(query_logs(env, "Can't find child")) == [wanted]
    assert found_lines(query_logs(env, '"Can\'t find child"')) == [wanted]
    assert found_lines(query_logs(env, '"connection is not available"')) == [
        "2026-07-08T22:31:00Z ERROR connection is not available"
    ]
    # a phrase is searched as one string: its words in another order are not a match
    assert found_lines(query_logs(env, '"connection available"')) == [
        "2026-07-08T22:32:00Z INFO child found, connection available"
    ]
    assert found_lines(query_logs(env, '"available connection"')) == []
