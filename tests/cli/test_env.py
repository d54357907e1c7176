"""`evcli env check [DIR] [--json]`: the inventory of a snapshot, and every bad file named with its
reason (exit 2)."""

from __future__ import annotations

import csv
import json
import re
import tomllib
from pathlib import Path

import pytest

from evcli.backends.snapshot import demo_env_dir
from tests.cli._util import evcli

DEMO = demo_env_dir()
_LOG_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d)")


def _log_facts(path: Path) -> tuple[int, int]:
    """(non-blank lines, lines without a timestamp of their own), worked out from the file."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if path.suffix == ".jsonl":
        stamped = sum(1 for line in lines if json.loads(line).get("timestamp"))
    else:
        stamped = sum(1 for line in lines if _LOG_STAMP.match(line))
    return len(lines), len(lines) - stamped


@pytest.fixture
def demo_report() -> dict:
    run = evcli("env", "check", "--json")
    assert run.exit_code == 0, run
    return run.json()


def test_demo_is_ok(demo_report):
    assert demo_report["ok"] is True
    assert Path(demo_report["directory"]) == DEMO
    assert demo_report["name"] == "demo"
    assert demo_report["clock"] == {"now": "2026-07-08T23:10:00Z", "source": "env.toml now", "timezone": "UTC"}
    assert [p for p in demo_report["problems"] if p["severity"] == "error"] == []
    assert demo_report["ignored"] == []


def test_demo_lists_services_with_their_aliases(demo_report):
    config = tomllib.loads((DEMO / "env.toml").read_text(encoding="utf-8"))
    services = {service["name"]: service for service in demo_report["services"]}
    assert set(services) == set(config["services"])
    for name, table in config["services"].items():
        assert services[name]["aliases"] == table["aliases"]
        assert {"env.toml", "logs", "metrics"} <= set(services[name]["sources"])


def test_demo_counts_alerts(demo_report):
    raw = json.loads((DEMO / "alerts.json").read_text(encoding="utf-8"))["data"]["alerts"]
    alerts = demo_report["alerts"]
    assert alerts["shape"] == "prometheus"
    assert alerts["count"] == len(raw) == len(alerts["alerts"])
    assert alerts["firing"] == sum(alert["state"] == "firing" for alert in raw)
    assert [(a["alertname"], a["service"]) for a in alerts["alerts"]] == [
        (alert["labels"]["alertname"], alert["labels"]["service"]) for alert in raw
    ]


def test_demo_log_files_with_line_counts_and_timestamp_share(demo_report):
    files = sorted((DEMO / "logs").iterdir())
    reported = {info["path"]: info for info in demo_report["log_files"]}
    assert list(reported) == [f"logs/{path.name}" for path in files]
    for path in files:
        info = reported[f"logs/{path.name}"]
        lines, unstamped = _log_facts(path)
        assert info["lines"] == lines, path.name
        # the demo's only lines without a timestamp are stack traces: they belong to their event
        assert info["continuation_lines"] == unstamped and info["unrecognised_lines"] == 0, path.name
        assert info["timestamp_share"] == 1.0, path.name
        assert info["service"] == path.stem
        assert info["first"] and info["last"] and info["first"] <= info["last"] <= "2026-07-08T23:10:00Z"
    assert reported["logs/order-service.log"]["continuation_lines"] > 0


def test_demo_metric_files_and_runbooks(demo_report):
    reported = {info["path"]: info for info in demo_report["metric_files"]}
    files = sorted((DEMO / "metrics").glob("*.csv"))
    assert list(reported) == [f"metrics/{path.name}" for path in files]
    for path in files:
        with path.open(encoding="utf-8") as handle:
            header, *rows = list(csv.reader(handle))
        info = reported[f"metrics/{path.name}"]
        assert info["rows"] == len(rows)
        assert [metric["name"] for metric in info["metrics"]] == [re.sub(r"\[.*\]$", "", h) for h in header[1:]]
    runbooks = sorted(path.relative_to(DEMO).as_posix() for path in (DEMO / "runbooks").rglob("*.md"))
    assert sorted(info["path"] for info in demo_report["runbooks"]) == runbooks
    high_cpu = next(info for info in demo_report["runbooks"] if info["path"] == "runbooks/high-cpu.md")
    assert high_cpu["title"] == "High CPU usage on a JVM service"
    assert set(high_cpu["front_matter_keys"]) == {"title", "alerts", "services", "skill"}


def test_demo_by_path_and_human_output():
    run = evcli("env", "check", DEMO)
    assert run.exit_code == 0, run
    assert run.stdout.rstrip().splitlines()[-1] == "ok"
    assert "payment-service" in run.stdout
    assert not [line for line in run.stdout.splitlines() if line.startswith("error ")]


# --- a broken snapshot --------------------------------------------------------------------------

BAD_FILES = {
    "env.toml": "unknown key 'timzone'",
    "alerts.json": "invalid JSON",
    "logs/api.jsonl": "line 2 is not a JSON object",
    "metrics/api.csv": "'yesterday' is not a timestamp",
    "metrics/db.csv": "no metric columns",
    "runbooks/broken.md": "front matter starts with --- but is never closed",
}


@pytest.fixture
def broken(tmp_path) -> Path:
    root = tmp_path / "broken"
    for folder in ("logs", "metrics", "runbooks"):
        (root / folder).mkdir(parents=True)
    (root / "env.toml").write_text('name = "broken"\ntimzone = "Europe/Paris"\n', encoding="utf-8")
    (root / "alerts.json").write_text('{"status": "success", "data": {"alerts": [', encoding="utf-8")
    (root / "logs" / "api.jsonl").write_text(
        '{"timestamp": "2026-07-08T22:00:00Z", "level": "INFO", "msg": "ok"}\nthis is not json\n', encoding="utf-8"
    )
    (root / "logs" / "good.log").write_text("2026-07-08 22:00:00 INFO fine\n", encoding="utf-8")
    (root / "metrics" / "api.csv").write_text(
        "timestamp,cpu[%]\n2026-07-08T22:00:00Z,40\nyesterday,50\n", encoding="utf-8"
    )
    (root / "metrics" / "db.csv").write_text("timestamp\n2026-07-08T22:00:00Z\n", encoding="utf-8")
    (root / "runbooks" / "broken.md").write_text("---\ntitle: never closed\n\nbody\n", encoding="utf-8")
    (root / "runbooks" / "fine.md").write_text("# Fine\n\ntext\n", encoding="utf-8")
    return root


def test_broken_snapshot_json_names_every_bad_file(broken):
    run = evcli("env", "check", broken, "--json")
    assert run.exit_code == 2, run
    report = run.json()
    assert report["ok"] is False
    errors = [problem for problem in report["problems"] if problem["severity"] == "error"]
    for path, reason in BAD_FILES.items():
        assert any(p["path"] == path and reason in p["message"] for p in errors), (path, errors)
    assert {p["path"] for p in errors} == set(BAD_FILES)  # good files are not blamed
    # what could be read is still reported
    assert {info["path"] for info in report["log_files"]} == {"logs/api.jsonl", "logs/good.log"}
    assert {info["path"] for info in report["runbooks"]} == {"runbooks/broken.md", "runbooks/fine.md"}


def test_broken_snapshot_human_output_names_every_bad_file(broken):
    run = evcli("env", "check", broken)
    assert run.exit_code == 2, run
    lines = run.stdout.splitlines()
    error_lines = [line for line in lines if line.startswith("error ")]
    for path, reason in BAD_FILES.items():
        assert any(line.startswith(f"error {path}: ") and reason in line for line in error_lines), (path, error_lines)
    assert lines[-1] == f"{len(error_lines)} errors"


def test_stray_files_are_warnings_not_errors(tmp_path):
    root = tmp_path / "snap"
    (root / "logs").mkdir(parents=True)
    (root / "logs" / "api.log").write_text("2026-07-08 22:00:00 INFO fine\n", encoding="utf-8")
    (root / "logs" / "api.log.gz").write_bytes(b"\x1f\x8b")
    (root / "README.txt").write_text("notes", encoding="utf-8")
    run = evcli("env", "check", root, "--json")
    assert run.exit_code == 0, run
    report = run.json()
    assert report["ok"] is True
    assert {item["path"] for item in report["ignored"]} == {"README.txt", "logs/api.log.gz"}


def test_missing_directory_is_exit_2(tmp_path):
    run = evcli("env", "check", tmp_path / "nope", "--json")
    assert run.exit_code == 2, run
    assert run.json()["problems"] == [
        {"severity": "error", "path": ".", "message": "the snapshot directory does not exist"}
    ]


def test_a_packaged_environment_is_checked_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no directory named host here
    run = evcli("env", "check", "host", "--json")
    assert run.exit_code == 0, run
    report = run.json()
    assert Path(report["directory"]).parts[-2:] == ("envs", "host")
    assert {log["path"]: log["format"] for log in report["log_files"]}["logs/auth.log"] == "rfc3164"


def test_empty_directory_has_no_evidence(tmp_path):
    (tmp_path / "empty").mkdir()
    run = evcli("env", "check", tmp_path / "empty")
    assert run.exit_code == 2, run
    assert any(line.startswith("error .: no evidence") for line in run.stdout.splitlines())


def test_garbage_log_human_output_names_file_line_and_formats(tmp_path):
    root = tmp_path / "snap"
    (root / "logs").mkdir(parents=True)
    (root / "logs" / "ok.log").write_text("2026-07-08 22:00:00 INFO fine\n", encoding="utf-8")
    # a terminal escape and a secret in the first unrecognised line
    (root / "logs" / "junk.log").write_text(
        "\x1b]0;owned\x07 api_key=sk_live_abcdef123456\nmore junk\n", encoding="utf-8"
    )
    run = evcli("env", "check", root)
    assert run.exit_code == 2, run
    [error] = [line for line in run.stdout.splitlines() if line.startswith("error ")]
    assert error.startswith("error logs/junk.log: only 0% of the event lines have a recognised timestamp")
    assert "\\x1b]0;owned\\x07" in error and "\x1b" not in run.stdout  # shown, not obeyed
    assert "sk_live_abcdef123456" not in run.stdout  # masked
    assert "known formats: " in error and "rfc3164" in error and "logfmt" in error
    assert "logs/junk.log: unknown format, 2 lines" in run.stdout
    assert "logs/ok.log: " in run.stdout and "timestamps 100%" in run.stdout
    assert run.stdout.rstrip().splitlines()[-1] == "1 errors"
    report = evcli("env", "check", root, "--json").json()
    junk = next(info for info in report["log_files"] if info["path"] == "logs/junk.log")
    assert junk["format"] is None and junk["unrecognised_lines"] == 2 and junk["timestamp_share"] == 0.0


def test_packaged_host_environment_is_ok_and_reports_each_format():
    run = evcli("env", "check", Path(DEMO).parent / "envs" / "host")
    assert run.exit_code == 0, run
    for path, name in (("auth.log", "rfc3164"), ("nginx.log", "access_log"), ("zookeeper.log", "java")):
        assert any(line.startswith(f"logs/{path}: {name}, ") for line in run.stdout.splitlines()), path
    assert "DiskSpaceLow web-01: suppressed" in run.stdout


def test_supercomputer_hpc_windows_and_proxifier_logs_are_recognised(tmp_path):
    root = tmp_path / "snap"
    (root / "logs").mkdir(parents=True)
    (root / "env.toml").write_text('now = "2016-11-01T00:00:00Z"\n', encoding="utf-8")
    files = {
        "bgl.log": (
            "cfdr",
            "- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.50.675872 R02-M1-N0-C:J12-U11 "
            "RAS KERNEL INFO instruction cache parity error corrected\n"
            "KERNDTLB 1118536327 2005.06.11 R30-M0-N9-C:J16-U01 2005-06-11-17.32.07.581048 R30-M0-N9-C:J16-U01 "
            "RAS KERNEL FATAL data TLB error interrupt\n",
        ),
        "thunderbird.log": (
            "cfdr",
            "- 1131566461 2005.11.09 dn228 Nov 9 12:01:01 dn228/dn228 crond(pam_unix)[2915]: session closed for user root\n"
            "- 1131566475 2005.11.09 en257 Nov 9 12:01:15 en257/en257 ntpd[2380]: synchronized to 10.100.16.250\n",
        ),
        "hpc.log": (
            "hpc",
            "134681 node-246 unix.hw state_change.unavailable 1077804742 1 Component State Change: Component "
            "\\042alt0\\042 is in the unavailable state (HWID=1973)\n"
            "437893 gige7 gige.ps_fail sw 1079543049 1 Power supply failed\n",
        ),
        "cbs.log": (
            "windows_cbs",
            "2016-09-28 04:30:30, Info                  CBS    Loaded Servicing Stack v6.1.7601.23505\n"
            "2016-09-28 04:40:30, Warning               CBS    Failed to get next element [HRESULT = 0x800f080d]\n",
        ),
        "proxifier.log": (
            "proxifier",
            "[10.30 16:49:06] chrome.exe - proxy.cse.cuhk.edu.hk:5070 open through proxy proxy.cse.cuhk.edu.hk:5070 HTTPS\n"
            "[10.30 17:01:43] Dropbox.exe - block.dropbox.com:443 error : A connection request was canceled.\n",
        ),
    }
    for path, (_, text) in files.items():
        (root / "logs" / path).write_text(text, encoding="utf-8")
    run = evcli("env", "check", root)
    assert run.exit_code == 0, run
    for path, (name, _) in files.items():
        assert any(
            line.startswith(f"logs/{path}: {name}, 2 lines, timestamps 100%") for line in run.stdout.splitlines()
        ), path
    report = evcli("env", "check", root, "--json").json()
    proxifier = next(info for info in report["log_files"] if info["path"] == "logs/proxifier.log")
    assert (proxifier["first"], proxifier["last"]) == ("2016-10-30T16:49:06Z", "2016-10-30T17:01:43Z")


def test_loghub_style_logs_are_checked_ok_and_each_format_named(tmp_path):
    root = tmp_path / "loghub"
    (root / "logs").mkdir(parents=True)
    (root / "env.toml").write_text('now = "2018-01-02T00:00:00Z"\n', encoding="utf-8")
    files = {
        "namenode.log": ("hdfs", [
            "081109 203518 143 INFO dfs.DataNode$DataXceiver: Receiving block blk_-1608999687919862906 src: "
            "/10.250.19.102:54106 dest: /10.250.19.102:50010",
            "081109 204106 329 WARN dfs.DataNode$DataXceiver: 10.251.90.64:50010:Got exception while serving "
            "blk_-2918118818249673980 to /10.251.90.64:",
        ]),
        "executor.log": ("spark", [
            "17/06/09 20:10:40 INFO util.SignalUtils: Registered signal handler for TERM",
            "17/06/09 20:11:11 ERROR executor.Executor: Exception in task 2.0 in stage 1.0 (TID 9)",
            "java.io.IOException: Connection reset by peer",
            "\tat sun.nio.ch.FileDispatcherImpl.read0(Native Method)",
        ]),
        "phone.log": ("logcat", [
            "--------- beginning of main",
            "12-31 23:59:58.811  1702  2395 D WindowManager: printFreezingDisplayLogsopening app wtoken",
            "--------- beginning of crash",
            "12-31 23:59:59.512  4128  4128 E AndroidRuntime: FATAL EXCEPTION: main",
        ]),
        "health.log": ("healthapp", [
            "20171223-22:15:29:606|Step_LSC|30002312|onStandStepChanged 3579",
            "20171224-0:0:1:45|Step_ExtSDM|30002312|calculateAltitudeWithCache totalAltitude=240",
        ]),
    }  # fmt: skip
    for name, (_, lines) in files.items():
        (root / "logs" / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = evcli("env", "check", root, "--json")
    assert run.exit_code == 0, run
    logs = {log["path"]: log for log in run.json()["log_files"]}
    for name, (log_format, _) in files.items():
        assert (logs[f"logs/{name}"]["format"], logs[f"logs/{name}"]["timestamp_share"]) == (log_format, 1.0), name
    # the logcat year comes from the clock: December lines read on Jan 2 are the year before
    assert (logs["logs/phone.log"]["first"], logs["logs/phone.log"]["last"]) == (
        "2017-12-31T23:59:58Z",
        "2017-12-31T23:59:59Z",
    )
    human = evcli("env", "check", root).stdout.splitlines()
    for name, (log_format, _) in files.items():
        assert any(line.startswith(f"logs/{name}: {log_format}, ") for line in human), name
