"""Metric files as they come and alert states as they are (issue 9), read by the snapshot backend.

Metric CSVs with units in brackets or parentheses, NaN/empty/null cells, irregular and unsorted
rows, epoch and zone-less timestamps; one test per alert state in each alerts.json shape.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evcli.backends.snapshot import SnapshotBackend
from evcli.backends.snapshot_metrics import metric_column, metric_time
from evcli.core.errors import BackendError
from evcli.core.time import TimeRange, zone_named
from tests.cli._util import evcli

ENV = 'name = "m"\ntimezone = "Asia/Shanghai"\nnow = "2026-07-09T07:10:00+08:00"\n'
SHANGHAI = zone_named("Asia/Shanghai")

# Irregular sampling, out of order, NaN/empty/null cells, zone-less local times (Asia/Shanghai).
HOST_CSV = """\
timestamp,CpuUsageRate(%),latency_p99[s],mem_used (MiB),Requests
2026-07-09 06:40:00,20,0.1,512,5
2026-07-09 06:41:30,NaN,0.2,,6
2026-07-09 06:55:00,97.5,null,530,7
2026-07-09 06:47:10,97.5,0.15,None,
2026-07-09 07:05:00,35,0.4,600,9
2026-07-09 06:20:00,1,9.9,100,1
"""


def snapshot(tmp_path: Path, files: dict[str, str]) -> SnapshotBackend:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return SnapshotBackend(tmp_path)


def query(snap: SnapshotBackend, **kwargs):
    return snap.query_metrics(**{"service": None, "alertname": None, "metric": None, **kwargs})


def local(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=SHANGHAI)


@pytest.mark.parametrize(
    ("header", "name", "unit"),
    [
        ("CpuUsageRate(%)", "CpuUsageRate", "%"),
        ("latency_p99[s]", "latency_p99", "s"),
        ("mem_used (MiB)", "mem_used", "MiB"),
        (" heap_used [GB] ", "heap_used", "GB"),
        ("requests", "requests", ""),
    ],
)
def test_header_units_in_brackets_or_parentheses(header, name, unit):
    assert metric_column(header)[:2] == (name, unit)


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("1783548000", datetime(2026, 7, 8, 22, 0, tzinfo=UTC)),  # epoch seconds
        ("1783548000000", datetime(2026, 7, 8, 22, 0, tzinfo=UTC)),  # epoch milliseconds
        ("2026-07-09T06:00:00+08:00", datetime(2026, 7, 8, 22, 0, tzinfo=UTC)),
        ("2026-07-08T22:00:00Z", datetime(2026, 7, 8, 22, 0, tzinfo=UTC)),
        ("2026-07-09 06:00:00", datetime(2026, 7, 8, 22, 0, tzinfo=UTC)),  # no zone: the environment's
        ("2026/07/09 06:00:00", datetime(2026, 7, 8, 22, 0, tzinfo=UTC)),
        ("2026-07-09T06:00:00,500", datetime(2026, 7, 8, 22, 0, 0, 500000, tzinfo=UTC)),
    ],
)
def test_timestamps_in_every_common_form(cell, expected):
    assert metric_time(cell, SHANGHAI) == expected
    assert metric_time("yesterday", SHANGHAI) is None


def test_whole_file_summary_skips_empty_cells_and_states_when_min_max_last_occurred(tmp_path):
    snap = snapshot(tmp_path, {"env.toml": ENV, "metrics/host.csv": HOST_CSV})
    series = {item["metric"]: item for item in query(snap, service="host").series}

    assert (
        series["CpuUsageRate"]
        == {
            "service": "host",
            "metric": "CpuUsageRate",
            "unit": "%",
            "range": "2026-07-09T06:20:00+08:00..2026-07-09T07:05:00+08:00",  # no range named: the whole file
            "points": 5,  # the NaN row is no point
            "min": 1.0,
            "min_at": "2026-07-09T06:20:00+08:00",  # the last row of the file, but the earliest time
            "max": 97.5,
            "max_at": "2026-07-09T06:47:10+08:00",  # reached twice: the first time it was reached
            "last": 35.0,
            "last_at": "2026-07-09T07:05:00+08:00",
            "samples": [  # issue 13: every point as [unix seconds, value] sorted by time (the row order is not), for the report's chart
                [1783549200, 1.0],
                [1783550400, 20.0],
                [1783550830, 97.5],
                [1783551300, 97.5],
                [1783551900, 35.0],
            ],
        }
    )
    assert (series["latency_p99"]["points"], series["latency_p99"]["max_at"]) == (5, "2026-07-09T06:20:00+08:00")
    assert (series["mem_used"]["unit"], series["mem_used"]["points"]) == ("MiB", 4)  # empty and None skipped
    assert series["Requests"]["last"] == 9.0


def test_a_range_keeps_only_its_rows_and_is_stated_in_the_environment_zone(tmp_path):
    snap = snapshot(tmp_path, {"env.toml": ENV, "metrics/host.csv": HOST_CSV})
    searched = TimeRange(local("2026-07-09 06:41:00"), local("2026-07-09 06:50:00"))

    (cpu,) = query(snap, service="host", metric="CpuUsageRate", range=searched).series

    assert cpu["range"] == "2026-07-09T06:41:00+08:00..2026-07-09T06:50:00+08:00"
    assert (cpu["points"], cpu["min"], cpu["last"], cpu["last_at"]) == (1, 97.5, 97.5, "2026-07-09T06:47:10+08:00")
    empty = query(snap, service="host", metric="CpuUsageRate", range=TimeRange(local("2026-07-09 08:00"), None))
    assert empty.series == [] and "no points of metrics/host.csv inside 2026-07-09T08:00:00+08:00.." in empty.message


@pytest.mark.parametrize("asked", ["CpuUsageRate(%)", "CpuUsageRate", "cpuusagerate", "CpuUsageRate (%)"])
def test_a_series_is_asked_for_by_its_shown_or_its_bare_name(tmp_path, asked):
    snap = snapshot(tmp_path, {"env.toml": ENV, "metrics/host.csv": HOST_CSV})

    assert [item["metric"] for item in query(snap, service="host", metric=asked).series] == ["CpuUsageRate"]


def test_an_unknown_metric_names_the_close_ones_instead_of_failing(tmp_path):
    snap = snapshot(tmp_path, {"env.toml": ENV, "metrics/host.csv": HOST_CSV})

    result = query(snap, service="host", metric="CpuUsage")

    assert result.series == []
    assert "no metric 'CpuUsage' in metrics/host.csv; close: CpuUsageRate" in result.message
    assert "(has CpuUsageRate(%), latency_p99[s], mem_used (MiB), Requests)" in result.message


def test_a_text_cell_is_an_error_naming_file_line_and_column(tmp_path):
    snap = snapshot(tmp_path, {"env.toml": ENV, "metrics/host.csv": "ts,CpuUsageRate(%)\n1783548000,high\n"})

    with pytest.raises(BackendError, match=r"metrics/host\.csv line 2: CpuUsageRate\(%\) value 'high' is not a number"):
        query(snap, service="host")


def test_metric_with_unit_in_its_name_through_the_cli(tmp_path):
    snapshot(tmp_path, {"env.toml": ENV, "metrics/host.csv": HOST_CSV})

    run = evcli("tool", "query_metrics", "--env", str(tmp_path), "--metric", "CpuUsageRate(%)", "--json")

    assert run.exit_code == 0, run
    (series,) = run.json()["output"]["series"]
    assert (series["metric"], series["max"], series["max_at"]) == ("CpuUsageRate", 97.5, "2026-07-09T06:47:10+08:00")
    refused = evcli("tool", "query_metrics", "--env", str(tmp_path), "--metric", 'cpu"} or vector(1)')
    assert refused.exit_code == 2, refused


# --- alert states, one test per state and shape ------------------------------------------------

PROMETHEUS_SHAPE = {
    "status": "success",
    "data": {
        "alerts": [
            {"labels": {"alertname": "Hot", "service": "a"}, "state": "firing", "activeAt": "2026-07-08T22:50:00Z"},
            {"labels": {"alertname": "Warm", "service": "a"}, "state": "pending", "activeAt": "2026-07-08T23:05:00Z"},
        ]
    },
}
ALERTMANAGER_SHAPE = [
    {
        "labels": {"alertname": "Noisy", "service": "b"},
        "startsAt": "2026-07-08T22:30:00Z",
        "endsAt": "2026-07-08T23:30:00Z",
        "status": {"state": "suppressed", "silencedBy": ["5b2f-silence"], "inhibitedBy": []},
    },
    {
        "labels": {"alertname": "Symptom", "service": "b"},
        "startsAt": "2026-07-08T22:40:00Z",
        "endsAt": "2026-07-08T23:30:00Z",
        # an inhibited alert that a hand-written snapshot still calls active is suppressed all the same
        "status": {"state": "active", "silencedBy": [], "inhibitedBy": ["a9e3c5d71f20b864"]},
    },
    {
        "labels": {"alertname": "Cause", "service": "b"},
        "startsAt": "2026-07-08T22:40:00Z",
        "endsAt": "2026-07-08T23:30:00Z",
        "status": {"state": "active", "silencedBy": [], "inhibitedBy": []},
    },
]
WEBHOOK_SHAPE = {
    "version": "4",
    "status": "resolved",
    "alerts": [
        {
            "status": "resolved",
            "labels": {"alertname": "DiskFull", "service": "c"},
            "startsAt": "2026-07-08T22:00:00Z",
            "endsAt": "2026-07-08T22:45:00Z",
        },
        {  # still marked firing, but its endsAt lies before the environment's clock
            "status": "firing",
            "labels": {"alertname": "Flapping", "service": "c"},
            "startsAt": "2026-07-08T22:10:00Z",
            "endsAt": "2026-07-08T22:20:00Z",
        },
    ],
}


def states(result) -> dict[str, str]:
    return {alert["alertname"]: alert["state"] for alert in result.alerts}


def test_prometheus_shape_firing_and_pending_are_active(tmp_path):
    snap = snapshot(tmp_path, {"env.toml": ENV, "alerts.json": json.dumps(PROMETHEUS_SHAPE)})

    assert states(query(snap)) == {"Hot": "firing", "Warm": "pending"}
    assert states(query(snap, state="firing")) == {"Hot": "firing"}
    assert states(query(snap, state="pending")) == {"Warm": "pending"}


def test_alertmanager_suppressed_alerts_keep_their_state_and_are_not_active(tmp_path):
    snap = snapshot(tmp_path, {"env.toml": ENV, "alerts.json": json.dumps(ALERTMANAGER_SHAPE)})

    default = query(snap)
    assert states(default) == {"Cause": "firing"}
    assert "2 suppressed alert(s) not shown (state=active)" in default.message
    shown = {alert["alertname"]: alert for alert in query(snap, state="suppressed").alerts}
    assert (shown["Noisy"]["state"], shown["Noisy"]["silenced_by"]) == ("suppressed", ["5b2f-silence"])
    assert (shown["Symptom"]["state"], shown["Symptom"]["inhibited_by"]) == ("suppressed", ["a9e3c5d71f20b864"])
    assert "inhibited_by" not in shown["Noisy"] and "silenced_by" not in query(snap).alerts[0]


def test_webhook_resolved_alerts_are_shown_only_when_asked_with_when_they_ended(tmp_path):
    snap = snapshot(tmp_path, {"env.toml": ENV, "alerts.json": json.dumps(WEBHOOK_SHAPE)})

    assert query(snap).alerts == []
    resolved = {alert["alertname"]: alert for alert in query(snap, state="resolved").alerts}
    assert resolved["DiskFull"]["state"] == resolved["Flapping"]["state"] == "resolved"
    assert (resolved["DiskFull"]["ends_at"], resolved["DiskFull"]["duration"]) == ("2026-07-08T22:45:00Z", "45m")
    assert resolved["Flapping"]["ends_at"] == "2026-07-08T22:20:00Z"  # endsAt before the clock: resolved
    # a range after DiskFull ended does not hold it; one that overlaps its activity does
    late = TimeRange(datetime(2026, 7, 8, 22, 50, tzinfo=UTC), None)
    assert query(snap, state="any", range=late).alerts == []
    early = TimeRange(datetime(2026, 7, 8, 22, 15, tzinfo=UTC), datetime(2026, 7, 8, 22, 16, tzinfo=UTC))
    assert set(states(query(snap, state="any", range=early))) == {"DiskFull", "Flapping"}


def test_env_check_counts_only_firing_alerts(tmp_path):
    alerts = ALERTMANAGER_SHAPE + [{**WEBHOOK_SHAPE["alerts"][0], "status": {"state": "active"}}]
    snapshot(tmp_path, {"env.toml": ENV, "alerts.json": json.dumps(alerts), "metrics/b.csv": "ts,x\n1783548000,1\n"})

    run = evcli("env", "check", str(tmp_path), "--json")

    report = run.json()["alerts"]
    assert (report["count"], report["firing"]) == (4, 1)
    assert {item["alertname"]: item["state"] for item in report["alerts"]} == {
        "Noisy": "suppressed",
        "Symptom": "suppressed",
        "Cause": "firing",
        "DiskFull": "resolved",
    }


def test_no_resolved_alert_is_a_no_evidence_ref_that_names_the_state_asked(tmp_path):
    snapshot(tmp_path, {"env.toml": ENV, "alerts.json": json.dumps(PROMETHEUS_SHAPE)})

    run = evcli("tool", "query_metrics", "--env", str(tmp_path), "--alertname", "Hot", "--state", "resolved", "--json")

    (ref,) = run.json()["retrieval_details"]["evidence_refs"]
    assert ref["raw_path"] == "$.no_evidence"
    assert "query=Hot; alert_state=resolved; range=" in ref["text"]
    assert "1 firing alert(s) not shown (state=resolved)" in ref["text"]


def test_a_past_range_shows_the_alerts_active_then_that_resolved_since(tmp_path):
    """ "what was firing between 22:10 and 22:20?": an alert firing then and resolved before the clock is
    shown (in its state now, resolved), not hidden as a resolved alert the active filter drops."""
    alerts = [
        {
            "labels": {"alertname": "PostgresDeadlocks", "service": "postgres"},
            "annotations": {},
            "startsAt": "2026-07-08T22:05:00Z",
            "endsAt": "2026-07-08T22:29:00Z",
            "status": {"state": "active", "silencedBy": [], "inhibitedBy": []},
            "fingerprint": "f1",
        }
    ]
    snap = snapshot(tmp_path, {"env.toml": ENV, "alerts.json": json.dumps(alerts)})
    assert query(snap).alerts == []  # no range: what is active now
    during = TimeRange(datetime(2026, 7, 8, 22, 10, tzinfo=UTC), datetime(2026, 7, 8, 22, 20, tzinfo=UTC))
    shown = query(snap, range=during).alerts
    assert [(alert["alertname"], alert["state"]) for alert in shown] == [("PostgresDeadlocks", "resolved")]
    after = TimeRange(datetime(2026, 7, 8, 22, 40, tzinfo=UTC), datetime(2026, 7, 8, 22, 50, tzinfo=UTC))
    assert query(snap, range=after).alerts == []


def test_series_from_the_cached_arrays_equal_the_rows_read_one_by_one(tmp_path):
    """query_metrics summarises from the file's cached arrays (evcli.backends.metric_arrays): on files
    with unsorted rows, ties, gaps, repeated extremes and millisecond times, every field of every series
    equals what the row-by-row summary gives, in the whole file and in a range."""
    import random

    from evcli.backends.metric_arrays import metric_arrays, summaries
    from evcli.backends.snapshot_metrics import find_columns, read_metric_file, summarise

    rng = random.Random(7)
    for case in range(30):
        rows = ["timestamp,a[%],b(ms),c"]
        for _ in range(rng.randrange(1, 1200)):
            moment = 1_780_000_000 + rng.randrange(0, 3600) + rng.choice([0, 0, 0.25, 0.125])
            cells = [rng.choice(["", "NaN", str(rng.randrange(5)), f"{rng.uniform(-9, 9):.3f}"]) for _ in range(3)]
            rows.append(f"{moment}," + ",".join(cells))
        directory = tmp_path / f"env{case}"
        backend = snapshot(directory, {"env.toml": ENV, "metrics/svc.csv": "\n".join(rows) + "\n"})
        path = directory / "metrics" / "svc.csv"
        arrays = metric_arrays(path, directory, SHANGHAI, backend._reading)
        middle = datetime.fromtimestamp(1_780_001_800, UTC)
        for searched in (None, TimeRange(middle, None), TimeRange(None, middle)):
            with backend._reading(path) as handle:
                columns, lines = read_metric_file(handle, SHANGHAI)
                wanted = find_columns(columns, None)
                plain = summarise(lines, columns, wanted, searched)
            fast = summaries(arrays, wanted, searched)
            assert (fast.first, fast.last) == (plain.first, plain.last)
            assert fast.summaries.keys() == plain.summaries.keys()
            for index, expected in plain.summaries.items():
                stated = searched or TimeRange(plain.first, plain.last)
                item = fast.summaries[index].item("svc", "m", "", stated, SHANGHAI)
                assert item == expected.item("svc", "m", "", stated, SHANGHAI)


def test_the_session_overview_reads_alerts_only(tmp_path):
    backend = snapshot(tmp_path, {"env.toml": ENV, "metrics/host.csv": HOST_CSV})
    assert backend.query_metrics(service=None, alertname=None, metric=None, series=False).series == []
    assert backend.query_metrics(service=None, alertname=None, metric=None).series
