"""`evcli tool query_metrics|query_logs|lookup_knowledge`: the model view, --json, recording into a
session (--session, --db), custom snapshots (--env), and the exit codes of refusals and failures."""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from evcli.contracts import NO_EVIDENCE_PATH, ToolInvocation
from evcli.store.db import TraceStore
from evcli.tools.view import model_view
from tests.backends.test_envcheck import CONTAINER_LOGS, container_snapshot
from tests.cli._util import assert_clean_error, evcli

# --- helpers -------------------------------------------------------------------------------


def new_session(db: Path, *, narrow: bool = False) -> str:
    with TraceStore(db) as store:
        return store.create_session("cli tool test", config={"task_scope": "narrow" if narrow else "broad"}).session_id


def invocation_rows(db: Path, session_id: str) -> list[dict]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(
            "SELECT * FROM tool_invocation WHERE session_id = ? ORDER BY invocation_id", [session_id]
        ).fetchall()
        return [dict(row) for row in rows]
    finally:
        conn.close()


def invocation_of(run) -> ToolInvocation:
    return ToolInvocation.model_validate(run.json())


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def snapshot(tmp_path) -> Path:
    """A small environment snapshot of its own, unrelated to the demo."""
    root = tmp_path / "snap"
    (root / "logs").mkdir(parents=True)
    (root / "metrics").mkdir()
    (root / "runbooks").mkdir()
    (root / "env.toml").write_text(
        'name = "gateway-incident"\ntimezone = "UTC"\nnow = "2030-01-02T03:04:00Z"\n\n'
        '[services.api-gateway]\naliases = ["gw", "edge"]\n',
        encoding="utf-8",
    )
    (root / "logs" / "api-gateway.log").write_text(
        "2030-01-01 23:00:00.000 ERROR [gw-1] upstream timeout to billing after 5000ms (yesterday)\n"
        "2030-01-02 03:00:00.000 INFO  [gw-1] listening on :8443\n"
        "2030-01-02 03:01:00.000 ERROR [gw-1] upstream timeout to billing after 5000ms\n"
        "2030-01-02 03:02:00.000 WARN  [gw-2] slow upstream billing took 1800ms\n"
        "2030-01-02 03:03:00.000 ERROR [gw-2] upstream timeout to billing after 5000ms\n",
        encoding="utf-8",
    )
    (root / "metrics" / "api-gateway.csv").write_text(
        "timestamp,latency[ms],errors_per_s\n"
        "2030-01-02T02:00:00Z,5000,99\n"
        "2030-01-02T03:00:00Z,120,0\n"
        "2030-01-02T03:01:00Z,4800,3\n"
        "2030-01-02T03:02:00Z,1800,1\n"
        "2030-01-02T03:03:00Z,4950,4\n",
        encoding="utf-8",
    )
    (root / "alerts.json").write_text(
        json.dumps(
            [
                {
                    "labels": {"alertname": "UpstreamTimeouts", "service": "api-gateway", "severity": "critical"},
                    "annotations": {"summary": "api-gateway upstream timeouts to billing"},
                    "startsAt": "2030-01-02T03:01:30Z",
                    "endsAt": "2030-01-02T04:00:00Z",
                    "status": {"state": "active"},
                }
            ]
        ),
        encoding="utf-8",
    )
    (root / "runbooks" / "gateway.md").write_text(
        "---\ntitle: Upstream timeouts at the gateway\nalerts: [UpstreamTimeouts]\n---\n\n"
        "# Upstream timeouts at the gateway\n\n## Checks\n\nCompare the billing latency with the gateway timeout of 5000ms.\n",
        encoding="utf-8",
    )
    return root


# --- output: model view and --json ----------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("query_metrics", "--service", "payment-service"),
        ("query_logs", "--service", "order-service", "--query", "HikariPool", "--level", "ERROR"),
        ("lookup_knowledge", "--query", "heap dump OOMKilled"),
        ("query_logs", "--service", "inventory-service", "--query", "HikariCP"),
    ],
)
def test_human_output_is_the_model_view_and_json_is_the_invocation(args):
    as_json = evcli("tool", *args, "--json")
    assert as_json.exit_code == 0, as_json
    invocation = invocation_of(as_json)
    assert invocation.tool_name == args[0]
    assert invocation.invocation_id == 0  # not recorded

    human = evcli("tool", *args)
    assert human.exit_code == 0, human
    assert human.stdout.endswith("\n")
    # the console expands the tab of an original line (a stack frame); the text is otherwise the same
    lines = [" ".join(line.split()) for line in human.stdout.splitlines()]
    expected = [" ".join(line.split()) for line in model_view(invocation).splitlines()]
    # --json sorts keys, so only the order of the call's parameters may differ
    assert lines[:1] + lines[2:] == expected[:1] + expected[2:]
    call = lines[1]
    assert call.startswith(f"call: {args[0]}(") and call.endswith(")")
    assert sorted(call[len(f"call: {args[0]}(") : -1].split(", ")) == sorted(
        f"{key}={value!r}" for key, value in invocation.input_params.items()
    )
    assert (
        lines[0]
        == f'<evidence invocation="unrecorded" tool="{args[0]}" status="{invocation.retrieval_details.evidence_status}">'
    )
    assert lines[-1] == "</evidence>"
    refs = invocation.retrieval_details.evidence_refs
    assert refs
    for ref in refs:
        assert " ".join(f"{ref.raw_path}: {ref.text.replace('<', '‹').replace('>', '›')}".split()) in lines
    assert human.stderr == ""


def test_json_output_has_the_contract_fields():
    run = evcli("tool", "query_logs", "--service", "order-service", "--query", "HikariPool", "--limit", "2", "--json")
    assert run.exit_code == 0, run
    data = run.json()
    assert set(data) == set(ToolInvocation.model_fields)
    assert data["input_params"] == {"service": "order-service", "query": "HikariPool", "limit": 2}
    assert len(data["output"]["logs"]) == 2
    assert data["output"]["truncated"] is True
    details = data["retrieval_details"]
    assert details["evidence_status"] == "supported"
    assert [ref["raw_path"] for ref in details["evidence_refs"]][:3] == ["$.logs[0]", "$.logs[1]", "$.stats"]
    assert (details["service"], details["keywords"], details["window"], details["limit"], details["truncated"]) == (
        "order-service",
        ["HikariPool"],
        None,
        2,
        True,
    )
    # no time named: the whole snapshot, stated absolutely
    assert details["range_origin"] == "whole snapshot"
    assert details["range"].startswith("2026-07-08T") and details["range"].endswith("+00:00")


@pytest.mark.parametrize("service", sorted(CONTAINER_LOGS))
def test_level_error_over_container_json_logs_counts_their_inner_error_lines(tmp_path, service):
    root = container_snapshot(tmp_path / "containers")
    run = evcli("tool", "query_logs", "--env", root, "--service", service, "--level", "ERROR", "--json")
    assert run.exit_code == 0, run
    output = run.json()["output"]
    errors = [index for index, (_, level) in enumerate(CONTAINER_LOGS[service]) if level == "ERROR"]
    # each ERROR line, with the stack trace lines that continue it; no line at another level, none without one
    assert output["stats"]["records"] == len(errors)
    assert output["stats"]["by_level"] == {"ERROR": output["total"], "none": 0}
    heads = [entry for entry in output["logs"] if entry["source"]["line"] - 1 in errors]
    assert [entry["level"] for entry in heads] == ["ERROR"] * len(errors)
    if service != "cart":  # no stack trace: the lines are exactly the ERROR lines
        assert [entry["source"]["line"] - 1 for entry in output["logs"]] == errors


def test_no_evidence_output_names_the_query():
    run = evcli("tool", "query_logs", "--service", "inventory-service", "--query", "HikariCP")
    assert run.exit_code == 0, run
    assert 'status="no_evidence"' in run.stdout
    line = next(line for line in run.stdout.splitlines() if line.startswith(NO_EVIDENCE_PATH))
    assert "query_logs returned no evidence" in line
    assert "query=inventory-service HikariCP" in line and "total=0" in line


def test_unknown_service_lists_close_matches():
    run = evcli("tool", "query_metrics", "--service", "inventry-service")
    assert run.exit_code == 0, run
    assert 'status="no_evidence"' in run.stdout
    assert "unknown service 'inventry-service'; close names: inventory-service" in run.stdout


def test_without_session_nothing_is_recorded(db_path):
    run = evcli("tool", "query_metrics", "--service", "payment-service")
    assert run.exit_code == 0, run
    assert not db_path.exists()


# --- --session and --db ------------------------------------------------------------------------------


def test_session_records_calls_with_per_session_ids(db_path):
    session = new_session(db_path)
    other = new_session(db_path)
    calls = [
        ("query_metrics", "--service", "payment-service"),
        ("query_logs", "--service", "payment-service", "--query", "timeout"),
        ("lookup_knowledge", "--query", "high cpu thread pool"),
    ]
    for number, args in enumerate(calls, start=1):
        run = evcli("tool", *args, "--session", session, "--json")
        assert run.exit_code == 0, run
        assert run.json()["invocation_id"] == number
        assert run.stderr.strip() == f"recorded as invocation #{number} of session {session}"

    rows = invocation_rows(db_path, session)
    assert [row["invocation_id"] for row in rows] == [1, 2, 3]
    assert [row["tool_name"] for row in rows] == [args[0] for args in calls]
    assert all(row["success"] == 1 for row in rows)
    assert [json.loads(row["retrieval_details"])["evidence_status"] for row in rows] == ["supported"] * 3
    assert json.loads(rows[1]["input_params"]) == {"service": "payment-service", "query": "timeout", "limit": 50}

    # ids are per session: another session starts at 1
    run = evcli("tool", "query_metrics", "--service", "payment-service", "--session", other)
    assert run.exit_code == 0, run
    assert run.stdout.startswith('<evidence invocation="1" tool="query_metrics" status="supported">')
    assert [row["invocation_id"] for row in invocation_rows(db_path, other)] == [1]


def test_session_accepts_last_and_a_unique_prefix(db_path):
    first = new_session(db_path)
    newest = new_session(db_path)
    run = evcli("tool", "query_metrics", "--service", "payment-service", "--session", "last")
    assert run.exit_code == 0, run
    assert run.stderr.strip() == f"recorded as invocation #1 of session {newest}"
    assert invocation_rows(db_path, first) == []
    run = evcli("tool", "query_metrics", "--service", "order-service", "--session", first[:-1])
    assert run.exit_code == 0, run
    assert [row["invocation_id"] for row in invocation_rows(db_path, first)] == [1]


def test_session_refuses_an_identical_repeat(db_path):
    session = new_session(db_path)
    args = ("tool", "query_logs", "--service", "order-service", "--query", "HikariPool", "--session", session)
    assert evcli(*args).exit_code == 0
    assert evcli("tool", "query_metrics", "--service", "order-service", "--session", session).exit_code == 0

    repeat = evcli(*args)
    assert_clean_error(repeat, 2, "query_logs refused", "identical to invocation #1")
    # the same call spelt differently is still the same call
    spelt = evcli(
        "tool",
        "query_logs",
        "--service",
        "order-service",
        "--query",
        "HikariPool",
        "--limit",
        "50",
        "--session",
        session,
    )
    assert_clean_error(spelt, 2, "identical to invocation #1")
    assert [row["invocation_id"] for row in invocation_rows(db_path, session)] == [1, 2]


def test_unknown_session_is_exit_2(db_path):
    new_session(db_path)
    run = evcli("tool", "query_metrics", "--service", "payment-service", "--session", "no-such-session")
    assert_clean_error(run, 2, "unknown session 'no-such-session'")


def test_explicit_db(tmp_path, db_path):
    other_db = tmp_path / "elsewhere" / "trace.db"
    session = new_session(other_db)
    run = evcli("tool", "query_metrics", "--service", "user-service", "--session", session, "--db", other_db, "--json")
    assert run.exit_code == 0, run
    assert run.json()["invocation_id"] == 1
    assert [row["tool_name"] for row in invocation_rows(other_db, session)] == ["query_metrics"]
    assert not db_path.exists()  # the default store was never touched


def test_missing_explicit_db_is_an_error(tmp_path):
    run = evcli("tool", "query_metrics", "--session", "x", "--db", tmp_path / "missing.db")
    assert_clean_error(run, 1, "no trace store at")


def test_session_lookup_knowledge_dedups_blocks_seen_before(db_path):
    session = new_session(db_path)
    first = evcli("tool", "lookup_knowledge", "--query", "heap dump OOMKilled", "--session", session, "--json")
    assert first.exit_code == 0, first
    again = evcli("tool", "lookup_knowledge", "--query", "OOMKilled heap dump", "--session", session)
    assert again.exit_code == 0, again
    assert again.stdout.startswith('<evidence invocation="2" tool="lookup_knowledge" status="deduped">')
    assert "already returned by invocation #1" in again.stdout
    assert "$.evidence_blocks[" not in again.stdout and NO_EVIDENCE_PATH not in again.stdout
    row = invocation_rows(db_path, session)[1]
    assert json.loads(row["retrieval_details"])["evidence_status"] == "deduped"
    assert "invocation #1" in row["dedup_reason"]


def test_narrow_session_refuses_widening_after_no_evidence(db_path):
    session = new_session(db_path, narrow=True)
    precise = evcli(
        "tool", "query_logs", "--service", "inventory-service", "--query", "HikariCP", "--window", "30m",
        "--session", session,
    )  # fmt: skip
    assert precise.exit_code == 0, precise
    assert 'status="no_evidence"' in precise.stdout

    wider = evcli(
        "tool",
        "query_logs",
        "--service",
        "inventory-service",
        "--window",
        "2h",
        "--query",
        "HikariCP",
        "--session",
        session,
    )
    assert_clean_error(wider, 2, "narrow task", "invocation #1", "widens the time range (window=30m → window=2h)")
    dropped = evcli("tool", "query_logs", "--service", "order-service", "--query", "HikariCP", "--session", session)
    assert_clean_error(dropped, 2, "narrow task", "drops or changes the service")

    narrower = evcli(
        "tool",
        "query_logs",
        "--service",
        "inventory-service",
        "--query",
        "HikariCP pool",
        "--window",
        "10m",
        "--session",
        session,
    )
    assert narrower.exit_code == 0, narrower
    assert [row["invocation_id"] for row in invocation_rows(db_path, session)] == [1, 2]


def test_broad_session_allows_the_same_widening(db_path):
    session = new_session(db_path, narrow=False)
    assert (
        evcli(
            "tool", "query_logs", "--service", "inventory-service", "--query", "HikariCP", "--session", session
        ).exit_code
        == 0
    )
    wider = evcli(
        "tool",
        "query_logs",
        "--service",
        "order-service",
        "--query",
        "HikariCP",
        "--window",
        "2h",
        "--session",
        session,
    )
    assert wider.exit_code == 0, wider
    assert [row["invocation_id"] for row in invocation_rows(db_path, session)] == [1, 2]


# --- --env --------------------------------------------------------------------------------------------


def test_custom_snapshot_logs(snapshot):
    args = ("tool", "query_logs", "--env", snapshot, "--service", "gw", "--query", "upstream timeout", "--json")
    run = evcli(*args, "--window", "30m")
    assert run.exit_code == 0, run
    logs = run.json()["output"]["logs"]
    assert [(log["timestamp"], log["level"], log["service"], log["instance"]) for log in logs] == [
        ("2030-01-02T03:01:00.000+00:00", "ERROR", "api-gateway", "gw-1"),
        ("2030-01-02T03:03:00.000+00:00", "ERROR", "api-gateway", "gw-2"),
    ]  # yesterday's line is outside the snapshot's last 30 minutes
    assert run.json()["retrieval_details"]["evidence_refs"][0]["text"] == (
        "logs/api-gateway.log:3 2030-01-02T03:01:00.000+00:00 ERROR "
        "2030-01-02 03:01:00.000 ERROR [gw-1] upstream timeout to billing after 5000ms"
    )
    # no time named: the whole snapshot, yesterday's line too
    whole = evcli(*args).json()
    assert [log["source"]["line"] for log in whole["output"]["logs"]] == [1, 3, 5]
    assert whole["retrieval_details"]["range_origin"] == "whole snapshot"


def test_custom_snapshot_metrics(snapshot):
    run = evcli("tool", "query_metrics", "--env", snapshot, "--service", "edge", "--window", "30m", "--json")
    assert run.exit_code == 0, run
    output = run.json()["output"]
    assert [(a["alertname"], a["service"], a["state"]) for a in output["alerts"]] == [
        ("UpstreamTimeouts", "api-gateway", "firing")
    ]
    assert [(s["metric"], s["min"], s["max"], s["last"], s["unit"]) for s in output["series"]] == [
        ("latency", 120, 4950, 4950, "ms"),
        ("errors_per_s", 0, 4, 4, ""),
    ]
    human = evcli(
        "tool", "query_metrics", "--env", snapshot, "--service", "edge", "--since", "03:00", "--until", "03:03"
    )
    assert (
        "$.series[0]: api-gateway latency range=2030-01-02T03:00:00+00:00..2030-01-02T03:03:00+00:00 points=4 "
        "min=120ms at 2030-01-02T03:00:00+00:00 max=4950ms at 2030-01-02T03:03:00+00:00 "
        "last=4950ms at 2030-01-02T03:03:00+00:00"
    ) in " ".join(human.stdout.split())


def test_custom_snapshot_knowledge(snapshot):
    run = evcli("tool", "lookup_knowledge", "--env", snapshot, "--query", "billing timeout", "--json")
    assert run.exit_code == 0, run
    blocks = run.json()["output"]["evidence_blocks"]
    assert blocks and {block["doc"] for block in blocks} == {"runbooks/gateway.md"}


def test_custom_snapshot_unknown_service_suggests_its_own_services(snapshot):
    run = evcli("tool", "query_logs", "--env", snapshot, "--service", "api-gatway")
    assert run.exit_code == 0, run
    assert "unknown service 'api-gatway'; close names: api-gateway" in run.stdout


def test_human_output_prints_evidence_text_verbatim(snapshot):
    with (snapshot / "logs" / "api-gateway.log").open("a", encoding="utf-8") as handle:
        handle.write(
            "2030-01-02 03:03:30.000 WARN  [gw-1] refused login for passwd entry root:x:0:0 from :100: hosts\n"
        )
    run = evcli("tool", "query_logs", "--env", snapshot, "--service", "api-gateway", "--query", "refused login")
    assert run.exit_code == 0, run
    assert "root:x:0:0 from :100: hosts" in run.stdout


def test_missing_env_dir_is_exit_2(tmp_path):
    run = evcli("tool", "query_metrics", "--env", tmp_path / "nope")
    assert_clean_error(run, 2, "no such environment directory")


def test_env_and_backend_urls_together_is_exit_2(snapshot):
    run = evcli("tool", "query_metrics", "--env", snapshot, "--prometheus", "http://127.0.0.1:9090")
    assert_clean_error(run, 2, "use either --env DIR or backend URLs")


# --- bad input and failed backends ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("query_logs", "--service", "order service"), "query_logs: service:"),
        (("query_logs", "--service", "order-service", "--limit", "0"), "query_logs: limit:"),
        (("query_logs", "--service", "order-service", "--limit", "501"), "query_logs: limit:"),
        (("query_logs", "--service", "order-service", "--window", "lately"), "query_logs: window:"),
        (
            ("query_logs", "--service", "order-service", "--query", '"HikariPool'),
            "query_logs: query: query has unbalanced quotes",
        ),
        (("query_metrics", "--metric", "cpu{usage}"), "query_metrics: metric:"),  # `cpu usage (%)` is a name (issue 9)
        (("lookup_knowledge", "--query", "heap", "--limit", "21"), "lookup_knowledge: limit:"),
    ],
)
def test_bad_parameters_are_exit_2_naming_tool_and_parameter(args, fragment):
    assert_clean_error(evcli("tool", *args), 2, fragment)


def test_failed_backend_exits_1_with_the_error_on_stderr(db_path):
    port = closed_port()
    run = evcli("tool", "query_metrics", "--prometheus", f"http://127.0.0.1:{port}", "--service", "payment-service")
    assert run.exit_code == 1, run
    assert run.stdout.startswith('<evidence invocation="unrecorded" tool="query_metrics" status="failed">')
    assert NO_EVIDENCE_PATH not in run.stdout
    assert f"GET http://127.0.0.1:{port}/api/v1/alerts failed: connection refused" in run.stderr
    assert "query_metrics failed" in run.stderr
    assert "Traceback" not in run.stderr


def test_failed_backend_json_is_the_failed_invocation(db_path):
    port = closed_port()
    run = evcli("tool", "query_logs", "--loki", f"http://127.0.0.1:{port}", "--service", "payment-service", "--json")
    assert run.exit_code == 1, run
    data = run.json()
    assert data["success"] is False
    assert data["retrieval_details"]["evidence_status"] == "failed"
    assert data["retrieval_details"]["evidence_refs"] == []
    assert "connection refused" in data["error_message"]


def test_failed_backend_json_also_reports_the_error_on_stderr():
    port = closed_port()
    run = evcli("tool", "query_logs", "--loki", f"http://127.0.0.1:{port}", "--service", "payment-service", "--json")
    assert run.exit_code == 1, run
    assert "connection refused" in run.stderr


def test_failed_backend_is_recorded_as_failed(db_path):
    loki = f"http://127.0.0.1:{closed_port()}"
    with TraceStore(db_path) as store:  # a session on that Loki: a call into it runs there
        session = store.create_session("cli tool test", config={"env": {"loki": loki}}).session_id
    run = evcli("tool", "query_logs", "--loki", loki, "--service", "payment-service", "--session", session)
    assert run.exit_code == 1, run
    [row] = invocation_rows(db_path, session)
    assert row["invocation_id"] == 1 and row["success"] == 0
    details = json.loads(row["retrieval_details"])
    assert details["evidence_status"] == "failed" and details["evidence_refs"] == []
    assert "connection refused" in row["error_message"]


@pytest.fixture
def erroring_server():
    """A loopback server answering HTTP 500 with a body that looks like Rich markup."""

    class Fail(BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"parse error: unexpected [/metrics] near [bold]offset 7[/bold]"
            self.send_response(500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Fail)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_backend_error_text_is_printed_verbatim(erroring_server):
    run = evcli("tool", "query_metrics", "--prometheus", erroring_server, "--service", "payment-service")
    assert run.exit_code == 1, run
    assert "MarkupError" not in run.stderr
    assert "parse error: unexpected [/metrics] near [bold]offset 7[/bold]" in run.stderr


# --- issue 9: since/until on the environment's clock and zone -----------------------------------


@pytest.fixture
def sshd_env(tmp_path) -> Path:
    """An sshd auth log (RFC 3164, no level) in an environment on Asia/Shanghai time."""
    root = tmp_path / "bastion"
    (root / "logs").mkdir(parents=True)
    (root / "env.toml").write_text('timezone = "Asia/Shanghai"\nnow = "2023-01-29T11:00:00"\n', encoding="utf-8")
    lines = [
        f"Jan 29 10:0{minute}:1{minute} bastion sshd[81{minute}]: Failed password for root from 10.20.30.40 port 5214{minute} ssh2"
        for minute in range(6)
    ]
    lines.insert(3, "Jan 29 10:03:30 bastion sshd[820]: Accepted publickey for deploy from 10.0.0.5 port 40022 ssh2")
    (root / "logs" / "sshd.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("since", "until"),
    [
        ("2023-01-29T10:03:00+08:00", "2023-01-29T10:05:00+08:00"),  # ISO with zone
        ("2023-01-29T02:03:00Z", "2023-01-29T02:05:00Z"),  # another zone, same instants
        ("2023-01-29T10:03:00", "2023-01-29T10:05:00"),  # ISO without zone: the environment's
        ("2023-01-29 10:03", "2023-01-29 10:05"),  # date and time
        ("10:03", "10:05"),  # time of day on the clock's date
        ("-57m", "-55m"),  # relative to the clock (11:00)
    ],
)
def test_since_until_forms_search_the_same_absolute_range_stated_with_zone(sshd_env, since, until):
    run = evcli("tool", "query_logs", "--env", sshd_env, "--service", "sshd", "--query", '"Failed password"',
                "--since", since, "--until", until, "--json")  # fmt: skip
    assert run.exit_code == 0, run
    data = run.json()
    details = data["retrieval_details"]
    assert (details["range"], details["range_origin"]) == (
        "2023-01-29T10:03:00+08:00..2023-01-29T10:05:00+08:00",
        "question/call",
    )
    assert [log["source"]["line"] for log in data["output"]["logs"]] == [5, 6]  # 10:03:13 and 10:04:14
    refs = {ref["raw_path"]: ref["text"] for ref in details["evidence_refs"]}
    assert refs["$.stats"].startswith(
        "stats: 2 matching lines in 2023-01-29T10:03:00+08:00..2023-01-29T10:05:00+08:00 (question/call); "
        "first 2023-01-29T10:03:13.000+08:00, last 2023-01-29T10:04:14.000+08:00; by level: none 2"
    )
    assert refs["$.logs[0]"] == (
        "logs/sshd.log:5 2023-01-29T10:03:13.000+08:00 "
        "Jan 29 10:03:13 bastion sshd[813]: Failed password for root from 10.20.30.40 port 52143 ssh2"
    )
    assert refs["$.patterns[0]"].startswith("pattern (count 2, first 2023-01-29T10:03:13.000+08:00, last ")


def test_no_time_named_searches_the_whole_snapshot_and_says_so(sshd_env):
    run = evcli("tool", "query_logs", "--env", sshd_env, "--service", "sshd", "--query", "10.20.30.40", "--json")
    assert run.exit_code == 0, run
    details = run.json()["retrieval_details"]
    assert details["range_origin"] == "whole snapshot"
    stats = next(ref["text"] for ref in details["evidence_refs"] if ref["raw_path"] == "$.stats")
    assert stats.startswith("stats: 6 matching lines in 2023-01-29T10:00:10+08:00..")
    assert "(whole snapshot)" in stats


def test_zero_hits_in_a_named_range_state_that_range(sshd_env):
    run = evcli("tool", "query_logs", "--env", sshd_env, "--service", "sshd", "--query", "Failed",
                "--since", "10:30", "--until", "10:40")  # fmt: skip
    assert run.exit_code == 0, run
    assert 'status="no_evidence"' in run.stdout
    assert "range=2023-01-29T10:30:00+08:00..2023-01-29T10:40:00+08:00 (question/call); total=0" in " ".join(
        run.stdout.split()
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--since", "-1h", "--window", "30m"), "query_logs: parameters: give either window or since/until, not both"),
        (
            ("--until", "10:05", "--window", "30m"),
            "query_logs: parameters: give either window or since/until, not both",
        ),
        (("--since", "last tuesday"), "query_logs: since: cannot read time 'last tuesday': use ISO 8601"),
        (("--until", "2023-02-30 10:00"), "query_logs: until: cannot read time '2023-02-30 10:00': use ISO 8601"),
        (("--since", "10:05", "--until", "10:03"), "range start 2023-01-29T10:05:00+08:00 is after its end"),
    ],
)
def test_bad_ranges_are_one_line_usage_errors(sshd_env, extra, message):
    run = evcli("tool", "query_logs", "--env", sshd_env, "--service", "sshd", *extra)
    assert_clean_error(run, 2, message)
    assert len(run.stderr.strip().splitlines()) == 1


def test_query_metrics_takes_since_and_until_too(snapshot):
    run = evcli(
        "tool",
        "query_metrics",
        "--env",
        snapshot,
        "--service",
        "api-gateway",
        "--since",
        "03:01",
        "--until",
        "03:02",
        "--json",
    )
    assert run.exit_code == 0, run
    details = run.json()["retrieval_details"]
    assert (details["range"], details["range_origin"]) == (
        "2030-01-02T03:01:00+00:00..2030-01-02T03:02:00+00:00",
        "question/call",
    )
    assert all(series["range"] == details["range"] for series in run.json()["output"]["series"])
