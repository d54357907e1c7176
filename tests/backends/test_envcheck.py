"""check_env: the inventory of a snapshot directory and every problem in it, by file."""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import evcli
from evcli.backends import envcheck
from evcli.backends.envcheck import check_env
from evcli.backends.logformats import known_formats
from evcli.backends.snapshot import demo_env_dir
from tests.backends.test_snapshot import make_snapshot


def problems_of(report, path: str) -> list[tuple[str, str]]:
    return [(problem.severity, problem.message) for problem in report.problems if problem.path == path]


def test_demo_environment_checks_ok_with_its_inventory():
    report = check_env(demo_env_dir())
    assert report.ok, report.problems
    assert report.problems == [] and report.ignored == []
    assert report.name == "demo"
    assert (report.clock.now, report.clock.source, report.clock.timezone) == (
        "2026-07-08T23:10:00Z",
        "env.toml now",
        "UTC",
    )
    services = {service.name: service for service in report.services}
    assert sorted(services) == [
        "inventory-service",
        "node-worker-01",
        "order-service",
        "payment-service",
        "user-service",
    ]
    assert services["order-service"].aliases == ["order", "orders", "订单服务"]
    assert services["inventory-service"].sources == ["env.toml", "logs", "metrics"]

    assert report.alerts is not None
    assert (report.alerts.shape, report.alerts.count, report.alerts.firing) == ("prometheus", 5, 4)
    assert {(a.alertname, a.service, a.state) for a in report.alerts.alerts} == {
        ("HighCPUUsage", "payment-service", "firing"),
        ("HighMemoryUsage", "order-service", "firing"),
        ("SlowResponse", "user-service", "firing"),
        ("DiskSpaceLow", "node-worker-01", "firing"),
        ("HighErrorRate", "order-service", "pending"),
    }

    log_files = {info.path: info for info in report.log_files}
    assert sorted(log_files) == [
        "logs/inventory-service.log",
        "logs/node-worker-01.log",
        "logs/order-service.log",
        "logs/payment-service.log",
        "logs/user-service.jsonl",
    ]
    assert sum(info.lines for info in log_files.values()) > 300
    for info in log_files.values():
        assert info.first >= "2026-07-08T22:30:00Z" and info.last <= "2026-07-08T23:10:00Z", info
    order = log_files["logs/order-service.log"]
    # stack trace lines belong to their event: they are counted, not held against the timestamp share
    assert order.continuation_lines > 0 and order.timestamp_share == 1.0 and order.unrecognised_lines == 0
    assert order.levels["ERROR"] >= 7 and order.levels["WARN"] >= 5
    assert {path: (info.format, info.timestamp_share) for path, info in log_files.items()} == {
        "logs/inventory-service.log": ("java", 1.0),
        "logs/node-worker-01.log": ("rfc3164", 1.0),
        "logs/order-service.log": ("java", 1.0),
        "logs/payment-service.log": ("java", 1.0),
        "logs/user-service.jsonl": ("json", 1.0),
    }
    # syslog lines whose program writes its level first (`disk-monitor[2201]: INFO /data used 86%`) have it
    assert log_files["logs/node-worker-01.log"].level_share == 0.9348
    assert all(info.sampled_lines is None for info in log_files.values())  # small files are read whole

    metric_files = {info.path: info for info in report.metric_files}
    assert len(metric_files) == 5 and all(info.rows == 41 for info in metric_files.values())
    payment = metric_files["metrics/payment-service.csv"]
    assert [(m.name, m.unit) for m in payment.metrics][:2] == [("cpu_usage", "%"), ("p99_latency", "s")]
    assert (payment.first, payment.last) == ("2026-07-08T22:30:00Z", "2026-07-08T23:10:00Z")

    assert len(report.runbooks) >= 5
    assert all(runbook.title and "skill" in runbook.front_matter_keys for runbook in report.runbooks)
    assert any("连接池" in runbook.title for runbook in report.runbooks)
    assert report.as_dict()["ok"] is True


def test_broken_snapshot_reports_every_problem_with_its_file(tmp_path):
    root = make_snapshot(
        tmp_path / "broken",
        {
            "env.toml": 'now = "2026-07-08T23:10:00Z"\ntimzone = "Asia/Shanghai"\n',
            "alerts.json": json.dumps({"firing": [{"labels": {"alertname": "A"}}]}),
            "logs/api.jsonl": '{"ts": "2026-07-08T23:00:00Z", "msg": "ok"}\n[1, 2]\n{"ts": "2026-07-08T23:01:00Z"\n',
            "logs/batch.log": "starting batch\nno timestamps here\n",
            "logs/readme.txt": "how these logs were collected",
            "metrics/api.csv": "ts,cpu[%]\n2026-07-08T23:00:00Z,12\n2026-07-08T23:01:00Z,high\n",
            "metrics/db.csv": "host,connections\ndb-1,12\ndb-2,14\n",
            "metrics/x.xlsx": b"PK\x03\x04",
            "runbooks/broken.md": "---\ntitle: never closed\n\n# Heading\n",
            "runbooks/untitled.md": "Some advice without a heading.\n",
            "notes.md": "scratch",
        },
    )
    report = check_env(root)
    assert report.ok is False
    assert problems_of(report, "env.toml") == [
        ("error", "unknown key 'timzone' (expected name, now, services, timezone, topology)")
    ]
    [(severity, message)] = problems_of(report, "alerts.json")
    assert severity == "error" and message.startswith("unknown alerts shape; expected one of: Prometheus")
    assert "Alertmanager GET /api/v2/alerts" in message and "webhook" in message
    known = ", ".join(known_formats())
    assert problems_of(report, "logs/api.jsonl") == [
        ("error", "line 2 is not a JSON object"),
        ("error", "line 3 is not a JSON object"),
        (
            "error",
            "only 33% of the event lines have a recognised timestamp (at least 90% are needed; the detected "
            f"format is json); e.g. '[1, 2]'; known formats: {known}",
        ),
    ]
    assert problems_of(report, "logs/batch.log") == [
        (
            "error",
            "only 0% of the event lines have a recognised timestamp (at least 90% are needed; no known format "
            f"reads its first lines); e.g. 'starting batch'; known formats: {known}",
        )
    ]
    assert problems_of(report, "metrics/api.csv") == [("error", "line 3: cpu[%] value 'high' is not a number")]
    assert problems_of(report, "metrics/db.csv") == [
        ("error", "no timestamp column: the first column is not a time (line 2: 'db-1')")
    ]
    assert problems_of(report, "runbooks/broken.md") == [("error", "front matter starts with --- but is never closed")]
    assert problems_of(report, "runbooks/untitled.md") == [("warning", "no title (front matter title: or a # heading)")]
    assert {(item.path, item.reason) for item in report.ignored} == {
        ("logs/readme.txt", "not a .log or .jsonl file"),
        ("metrics/x.xlsx", "not a .csv file"),
        (
            "notes.md",
            "not part of the snapshot layout (env.toml, alerts.json, logs/, metrics/, runbooks/, k8s/, traces/)",
        ),
    }
    for item in report.ignored:
        assert problems_of(report, item.path) == [("warning", f"ignored: {item.reason}")]
    # what could be read is still inventoried
    assert [(info.path, info.lines) for info in report.log_files] == [
        ("logs/api.jsonl", 3),
        ("logs/batch.log", 2),
    ]
    assert [info.rows for info in report.metric_files] == [2, 2]


def test_invalid_json_and_invalid_toml_are_errors_and_the_rest_is_still_checked(tmp_path):
    root = make_snapshot(
        tmp_path / "env",
        {
            "env.toml": "name = [",
            "alerts.json": '{"status": "success", "data": ',
            "logs/a.log": "2026-07-08 23:00:00 INFO fine\n",
        },
    )
    report = check_env(root)
    assert not report.ok
    [(severity, message)] = problems_of(report, "env.toml")
    assert severity == "error" and message.startswith("invalid TOML")
    [(severity, message)] = problems_of(report, "alerts.json")
    assert severity == "error" and message.startswith("invalid JSON")
    assert [(info.path, info.first) for info in report.log_files] == [("logs/a.log", "2026-07-08T23:00:00Z")]
    assert (report.clock.now, report.clock.source) == (
        "2026-07-08T23:00:00Z",
        "newest timestamp (logs/a.log)",
    )


def test_empty_and_missing_snapshots(tmp_path):
    missing = check_env(tmp_path / "nowhere")
    assert not missing.ok and problems_of(missing, ".") == [("error", "the snapshot directory does not exist")]

    empty = make_snapshot(tmp_path / "empty", {"env.toml": 'name = "x"\n[services.api]\naliases = ["a"]\n'})
    for folder in ("logs", "metrics", "runbooks"):
        (empty / folder).mkdir()
    report = check_env(Path(empty))
    assert not report.ok
    assert ("error", "no evidence: the snapshot has no alerts.json, logs, metrics, k8s/ or traces/") in problems_of(
        report, "."
    )
    assert problems_of(report, "logs/") == [("warning", "contains no .log or .jsonl files")]
    assert problems_of(report, "metrics/") == [("warning", "contains no .csv files")]
    assert problems_of(report, "runbooks/") == [("warning", "contains no .md files")]
    assert problems_of(report, "env.toml") == [("warning", "service api has no logs, metrics or alerts")]


def test_lines_after_the_clock_and_items_of_alerts_are_reported(tmp_path):
    alerts = [
        {"labels": {"alertname": "A", "service": "api"}, "startsAt": "2026-07-08T22:00:00Z"},
        {"labels": {"alertname": "B"}, "startsAt": "2026-07-08T22:00:00Z"},
        {"labels": {"service": "api"}, "startsAt": "2026-07-08T22:00:00Z"},
    ]
    root = make_snapshot(
        tmp_path / "env",
        {
            "env.toml": 'now = "2026-07-08T23:00:00Z"\n',
            "alerts.json": json.dumps(alerts),
            "logs/api.log": "2026-07-08 22:59:00 INFO a\n2026-07-08 23:05:00 INFO b\n",
        },
    )
    report = check_env(root)
    assert problems_of(report, "alerts.json") == [
        ("error", "alerts[2]: labels.alertname is missing"),
        ("warning", "alert B has no service, job or app label"),
    ]
    assert report.alerts is not None and (report.alerts.shape, report.alerts.count) == ("alertmanager-v2", 2)
    assert problems_of(report, "logs/api.log") == [
        ("warning", "1 lines are later than the snapshot clock and never match a query")
    ]


# --- every common log format (the packaged host environment) -------------------------------------

HOST = Path(evcli.__file__).resolve().parent / "envs" / "host"
HOST_FORMATS = {  # file -> (detected format, share of event lines with a level)
    "logs/apache.log": ("apache_error", 1.0),  # Apache 2.4: [Wed Mar 18 08:41:07.512734 2026] [proxy_fcgi:error]
    "logs/auth.log": ("rfc3164", 0.0),  # sshd via syslog: no level at all
    "logs/billing.log": ("logfmt", 1.0),
    "logs/intranet.log": ("apache_error", 1.0),  # Apache 2.2: [Wed Mar 18 08:02:25 2026] [error]
    "logs/nginx.log": ("access_log", None),  # levels only derived from 4xx/5xx statuses
    "logs/redis.log": ("container_json", 0.0),  # Docker json-file; redis writes no level word
    "logs/shop-api.log": ("python", 1.0),
    "logs/worker.jsonl": ("json", 1.0),
    "logs/zookeeper.log": ("java", 1.0),
}


def _grep_count(path: Path, pattern: str) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if re.search(pattern, line))


def test_host_environment_every_format_detected_with_full_timestamps():
    report = check_env(HOST)
    assert report.ok, report.problems
    assert [p for p in report.problems if p.severity == "error"] == []
    files = {info.path: info for info in report.log_files}
    assert set(files) == set(HOST_FORMATS)
    for path, (name, level_share) in HOST_FORMATS.items():
        info = files[path]
        assert info.format == name, path
        assert info.timestamp_share == 1.0 and info.unrecognised_lines == 0, path
        assert info.lines == _grep_count(HOST / path, r"\S"), path
        if level_share is not None:
            assert info.level_share == level_share, path
        assert "2026-03-18T07:00:00Z" <= info.first <= info.last <= "2026-03-18T08:30:00Z", path
    # stack traces (Python tracebacks, Java frames) belong to their event
    assert files["logs/shop-api.log"].continuation_lines == _grep_count(
        HOST / "logs/shop-api.log", r"^(\s|Traceback|kazoo\.)"
    )
    assert files["logs/zookeeper.log"].continuation_lines == _grep_count(HOST / "logs/zookeeper.log", r"^(\s|java\.)")
    # access-log levels come from the status: 4xx WARN, 5xx ERROR, others none
    nginx = files["logs/nginx.log"]
    assert nginx.levels.get("WARN") == _grep_count(HOST / "logs/nginx.log", r'" 4\d\d ')
    assert nginx.levels.get("ERROR") == _grep_count(HOST / "logs/nginx.log", r'" 5\d\d ')
    # local times without a zone take Europe/Berlin (UTC+1 in March): 08:00:02 local is 07:00:02Z
    assert files["logs/intranet.log"].first == "2026-03-18T07:00:02Z"
    assert report.clock.timezone == "Europe/Berlin"


def test_host_environment_metrics_and_alert_states():
    report = check_env(HOST)
    metrics = {info.path: info for info in report.metric_files}
    web = metrics["metrics/web-01.csv"]
    assert web.timestamp_column == "timestamp" and web.parseable_share == 1.0  # a NaN cell is a gap, not bad
    assert [(m.name, m.unit) for m in web.metrics] == [
        ("cpu_usage", "%"),
        ("load1", ""),
        ("mem_used", "GB"),
        ("disk_used", "%"),
    ]
    assert report.alerts is not None and report.alerts.shape == "alertmanager-v2"
    assert {alert.alertname: alert.state for alert in report.alerts.alerts} == {
        "SSHBruteForce": "firing",
        "HighHTTP401Rate": "firing",
        "ZooKeeperDown": "resolved",  # endsAt before the clock
        "DiskSpaceLow": "suppressed",  # silencedBy
    }
    assert report.alerts.firing == 2


def test_a_file_of_garbage_is_an_error_naming_it_with_one_masked_line(tmp_path):
    root = tmp_path / "host"
    shutil.copytree(HOST, root)
    garbage = [
        "%%%% dump of buffer 7 %%%%",
        "password=hunter2secret token",
        *(f"0x{n:04x} ff ee dd" for n in range(20)),
    ]
    (root / "logs" / "garbage.log").write_text("\n".join(garbage) + "\n", encoding="utf-8")
    report = check_env(root)
    assert not report.ok
    [problem] = [p for p in report.problems if p.severity == "error"]
    assert problem.path == "logs/garbage.log"
    assert problem.message.startswith("only 0% of the event lines have a recognised timestamp (at least 90% are needed")
    assert "e.g. '%%%% dump of buffer 7 %%%%'" in problem.message
    assert problem.message.endswith("known formats: " + ", ".join(known_formats()))
    info = next(info for info in report.log_files if info.path == "logs/garbage.log")
    assert (info.lines, info.unrecognised_lines, info.timestamp_share) == (22, 22, 0.0)


def test_the_example_line_is_masked(tmp_path):
    root = make_snapshot(tmp_path / "s", {"logs/app.log": "password=hunter2secret sent\n2026-07-08 22:00:00 INFO ok\n"})
    [info] = check_env(root).log_files
    assert info.example_unrecognised is not None and "hunter2secret" not in info.example_unrecognised
    assert info.timestamp_share == 0.5


def test_a_few_unrecognised_lines_under_ten_percent_are_fine(tmp_path):
    lines = [f"2026-07-08 22:{n // 60:02d}:{n % 60:02d} INFO step {n}" for n in range(95)] + ["-- rotated --"] * 5
    root = make_snapshot(tmp_path / "s", {"logs/app.log": "\n".join(lines) + "\n"})
    report = check_env(root)
    [info] = report.log_files
    assert report.ok and (info.timestamp_share, info.unrecognised_lines) == (0.95, 5)
    assert info.example_unrecognised == "-- rotated --"


def test_a_large_file_is_sampled_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(envcheck, "FULL_PASS_BYTES", 20_000)  # a small threshold instead of a 16 MB file
    start = datetime(2026, 7, 8, 12, 0, 0)
    good = [f"{start + timedelta(seconds=n)} INFO step {n}" for n in range(30_000)]
    root = make_snapshot(tmp_path / "s", {"logs/app.log": "\n".join(good) + "\n\n"})
    [info] = check_env(root).log_files
    assert info.lines == 30_000  # counted over the whole file, blank lines left out
    assert info.sampled_lines is not None and 20_000 <= info.sampled_lines < 30_000
    assert info.timestamp_share == 1.0 and info.unrecognised_lines == 0
    assert info.first == "2026-07-08T12:00:00Z"
    assert info.last == "2026-07-08T20:19:59Z"  # the end of the file is always in the sample
    # a file that is mostly garbage is caught from the sample too
    bad = [line if n % 3 == 0 else f"garbage {n}" for n, line in enumerate(good)]
    (root / "logs" / "app.log").write_text("\n".join(bad) + "\n", encoding="utf-8")
    report = check_env(root)
    [problem] = [p for p in report.problems if p.severity == "error"]
    assert "in a sample of" in problem.message and "of 30000 lines" in problem.message


def test_a_file_just_over_the_threshold_is_read_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(envcheck, "FULL_PASS_BYTES", 20_000)
    lines = [f"2026-07-08 20:{n // 60 % 60:02d}:{n % 60:02d} INFO step {n}" for n in range(3000)]
    root = make_snapshot(tmp_path / "s", {"logs/app.log": "\n".join(lines) + "\n"})
    [info] = check_env(root).log_files
    assert (info.lines, info.sampled_lines) == (3000, None)  # the blocks covered every line once


def test_a_few_text_lines_in_a_jsonl_file_are_a_warning_and_read_as_text(tmp_path):
    """npm writes its banner between a Node service's JSON lines on every start: a warning naming the lines,
    not an error (the file is read; most of it is JSON)."""
    lines = [json.dumps({"level": 30, "time": 1784052000000 + n * 1000, "msg": f"request {n}"}) for n in range(300)]
    lines[120:120] = ["> checkout-web@2.8.3 start", "> node dist/server.js"]
    root = tmp_path / "env"
    (root / "logs").mkdir(parents=True)
    (root / "logs" / "checkout.jsonl").write_text("\n".join(lines) + "\n")
    (root / "env.toml").write_text('now = "2026-07-14T18:45:00Z"\n')

    report = check_env(root)

    assert report.ok is True
    assert problems_of(report, "logs/checkout.jsonl") == [
        ("warning", "2 lines are not JSON objects (lines 121, 122); they are read as text lines")
    ]


# Inner lines of three services, as their programs write them (Spring Boot, logfmt, zap's JSON), and the
# level of each (None: a stack trace line, which continues the event before it)
CONTAINER_LOGS = {
    "cart": [
        ("2026-07-08 22:41:54.001  INFO 1 --- [nio-8080-exec-1] c.e.shop.CartController : cart 42 loaded", "INFO"),
        ("2026-07-08 22:41:55.210 ERROR 1 --- [nio-8080-exec-3] c.e.shop.CartController : payment failed", "ERROR"),
        ("java.lang.IllegalStateException: payment gateway closed", None),
        ("\tat com.example.shop.OrderServiceImpl.place(OrderServiceImpl.java:548)", None),
        ("\t... 12 more", None),
        ("2026-07-08 22:41:56.300  WARN 1 --- [nio-8080-exec-4] c.e.shop.CartController : retrying payment", "WARN"),
        ("2026-07-08 22:41:57.400 ERROR 1 --- [nio-8080-exec-5] c.e.shop.CartController : payment failed", "ERROR"),
    ],
    "gateway": [
        ('time=2026-07-08T22:41:54Z level=info msg="request served" path=/cart', "INFO"),
        ('time=2026-07-08T22:41:55Z level=error msg="upstream timeout" upstream=cart', "ERROR"),
        ('time=2026-07-08T22:41:56Z level=warning msg="slow upstream" upstream=cart', "WARN"),
    ],
    "payment": [
        ('{"level":"info","ts":1783550514.1,"caller":"pay/charge.go:40","msg":"charge started","orderId":"ORD-1"}',
         "INFO"),
        ('{"level":"error","ts":1783550515.2,"caller":"pay/charge.go:88","msg":"charge failed","orderId":"ORD-1"}',
         "ERROR"),
        ('{"level":"warn","msg":"x"}', "WARN"),
        ('{"level":"error","ts":1783550517.4,"caller":"pay/charge.go:88","msg":"charge failed","orderId":"ORD-2"}',
         "ERROR"),
    ],
}  # fmt: skip


def container_snapshot(root: Path) -> Path:
    """A snapshot of CONTAINER_LOGS as Docker's json-file driver writes them, one runtime line per
    inner line (the runtime's time a few ms after the program's)."""
    files: dict[str, str | bytes] = {"env.toml": 'now = "2026-07-08T23:00:00Z"\n'}
    for service, lines in CONTAINER_LOGS.items():
        files[f"logs/{service}.log"] = "".join(
            json.dumps(
                {"log": inner + "\n", "stream": "stderr" if level is None else "stdout",
                 "time": f"2026-07-08T22:41:{54 + index // 2}.{index:03d}456789Z"},
                separators=(",", ":"),
            ) + "\n"
            for index, (inner, level) in enumerate(lines)
        )  # fmt: skip
    return make_snapshot(root, files)


def test_container_json_logs_report_their_inner_lines_levels(tmp_path):
    report = check_env(container_snapshot(tmp_path / "containers"))
    assert report.ok, report.problems
    for info in report.log_files:
        written = [level for _, level in CONTAINER_LOGS[info.service]]
        assert (info.format, info.timestamp_share, info.level_share) == ("container_json", 1.0, 1.0), info
        assert info.continuation_lines == written.count(None)
        assert info.levels == {level: written.count(level) for level in sorted(set(written) - {None})}
