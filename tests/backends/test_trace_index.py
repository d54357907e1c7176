"""The persistent trace index (evcli.backends.traceindex): built once and reused by later processes while the
span files are unchanged, built again when one changes or the index is damaged, nothing kept by a build that
was stopped or killed, big files read in parts giving the rows of one read, the answers of the in-memory
`SpanGraph` on messy spans, a progress bar on a terminal only, and a first build that does not count against
query_traces' timeout."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from evcli.backends import tracebuild
from evcli.backends.snapshot import SnapshotBackend
from evcli.backends.trace_graph import SpanGraph, SpanSource, TraceQuery, answer
from evcli.backends.traceformats import TraceFileError, read_spans
from evcli.core.files import Deadline, DeadlineExceeded, deadline_scope
from tests.cli._util import evcli
from tests.terminal import stderr_on_a_terminal

ENV = Path(__file__).resolve().parent / "traces_env"
T0_NS = 1_777_912_800 * 10**9  # 2026-05-04T16:40:00Z
SERVICES = ("gateway", "checkout", "payment", "catalog-svc", "checkout-7c9f6d8b5-x2k4q", "", "Search")


def _otlp_line(trace: str, spans: list[tuple[str, str, str, str, int, int, bool]]) -> str:
    """One file-exporter line: a resource per service, each (service, span id, parent id, name, start, duration ns,
    error) under its own."""
    by_service: dict[str, list[dict]] = {}
    for service, span_id, parent, name, start, duration, error in spans:
        span = {"traceId": trace, "spanId": span_id, "parentSpanId": parent, "name": name}
        span |= {"startTimeUnixNano": str(start), "endTimeUnixNano": str(start + duration)}
        by_service.setdefault(service, []).append(span | {"status": {"code": 2 if error else 1}})
    resources = [
        {
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
            "scopeSpans": [{"spans": spans}],
        }
        for service, spans in by_service.items()
    ]
    return json.dumps({"resourceSpans": resources}, separators=(",", ":"))


def write_calls(path: Path, traces: int, seed: int = 3) -> int:
    """`traces` traces gateway → checkout → payment as OTLP lines; the number of spans written."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        for index in range(traces):
            start = T0_NS + index * 10**7
            calls = [("gateway", "a1", "", "GET /", start, 9 * 10**7, False)]
            calls.append(("checkout", "b2", "a1", "POST /checkout", start + 10**6, rng.randint(1, 80) * 10**6, False))
            calls.append(
                ("payment", "c3", "b2", "charge", start + 2 * 10**6, rng.randint(1, 60) * 10**6, rng.random() < 0.1)
            )
            handle.write(_otlp_line(f"{index + 1:032x}", calls) + "\n")
    return 3 * traces


def messy(root: Path, seed: int) -> Path:
    """A snapshot whose spans are everything spans get wrong, in four formats and across files: repeated ids,
    orphans, spans naming themselves, clock skew, cycles, ids with leading zeros or in upper case, pods and
    aliases, spans without a service, Zipkin shared server spans, lines and rows that are no span."""
    rng = random.Random(seed)
    (root / "traces").mkdir(parents=True)
    (root / "env.toml").write_text('timezone = "Europe/Berlin"\n[services.catalog]\naliases = ["catalog-svc"]\n')
    spans = []
    for _ in range(120):
        trace = f"{rng.getrandbits(64):x}"
        trace = rng.choice([trace, trace.upper(), "000" + trace])
        base, ids = T0_NS + rng.randrange(600) * 10**9, []
        for index in range(rng.randint(1, 7)):
            span_id = rng.choice(ids) if ids and rng.random() < 0.06 else f"{rng.getrandbits(28):x}"
            parent = (
                ""
                if index == 0
                else rng.choice([*ids, f"{rng.getrandbits(28):x}", span_id] if rng.random() < 0.1 else ids)
            )
            start = base + rng.choice([rng.randrange(-50, 400), 0, 0]) * 10**6
            spans.append(
                (
                    trace,
                    span_id,
                    parent,
                    rng.choice(SERVICES),
                    rng.choice(["GET /", "POST /Checkout", ""]),
                    start,
                    rng.choice([10**8, rng.randrange(1, 900) * 10**6]),
                    rng.choice(["error", "ok", "unset"]),
                    False,
                )
            )
            ids.append(span_id)
        if len(ids) > 1 and rng.random() < 0.3:  # the server half of a call
            spans.append(
                (
                    trace,
                    rng.choice(ids),
                    rng.choice(ids),
                    rng.choice(SERVICES),
                    "server",
                    base,
                    7 * 10**6,
                    "error",
                    True,
                )
            )
    rng.shuffle(spans)
    lines, rows, zipkin = [], ["trace_id,span_id,parent_id,pod,operation,start_us,end_us,status"], []
    for trace, span_id, parent, service, name, start, duration, status, shared in spans:
        where = "zipkin" if shared else rng.choice(["otlp", "csv", "zipkin"])
        if where == "otlp":
            code = {"error": 2, "ok": 1, "unset": 0}[status]
            span = {"traceId": trace, "spanId": span_id, "parentSpanId": parent, "name": name, "status": {"code": code}}
            span |= {"startTimeUnixNano": str(start), "endTimeUnixNano": str(start + duration)}
            resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]} if service else {}
            lines += [json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span]}]}]})]
            lines += ["not json"] if rng.random() < 0.03 else []
        elif where == "csv":
            rows.append(
                f"{trace},{span_id},{parent},{service},{name},{start // 1000},{(start + duration) // 1000},{status}"
            )
        else:
            item = {"traceId": trace, "id": span_id, "parentId": parent, "name": name, "timestamp": start // 1000}
            item |= {"duration": duration // 1000, "localEndpoint": {"serviceName": service}, "shared": shared}
            zipkin.append(item | ({"tags": {"error": "x"}} if status == "error" else {}))
    (root / "traces" / "a.jsonl").write_text("\n".join(lines) + "\n")
    (root / "traces" / "b.csv").write_text("\n".join([*rows, "x,,,,,,"]) + "\n")
    (root / "traces" / "c-zipkin.json").write_text(json.dumps(zipkin, indent=1))
    return root


def queries(backend: SnapshotBackend) -> list[TraceQuery]:
    traces = backend.traces
    found = []
    for service in [None, *traces.services()]:
        found += [TraceQuery(service=service, limit=200), TraceQuery(service=service, count_by="service")]
        found += [TraceQuery(service=service, count_by="operation", errors_only=True, operation="check")]
        found += [
            TraceQuery(service=service, start_ns=T0_NS + 10**11, end_ns=T0_NS + 3 * 10**11, min_duration_ns=10**8)
        ]
    ids = sorted({span["trace_id"] for span in traces.query(TraceQuery(limit=200)).answer.spans})[:10]
    return found + [TraceQuery(trace_id=trace.upper().lstrip("0") or "0", limit=200) for trace in ids]


def answers(backend: SnapshotBackend) -> list[tuple]:
    return [
        (found.spans, found.stats, found.edges, found.total)
        for found in map(lambda query: backend.traces.query(query).answer, queries(backend))
    ]


def file_facts(backend: SnapshotBackend) -> list[tuple]:
    """What the index holds of each file: its tally, traces, services, first and last start, every span."""
    found = []
    for file in backend.traces.files:
        read = file.found
        facts = read and (read.format, read.records, read.read, read.unread_reasons, read.traces(), read.services)
        found.append(
            (file.relative, file.digest, file.error, facts, read and (read.first, read.last, list(read.spans)))
        )
    return found


def index_files(home: Path) -> list[Path]:
    return sorted((home / "logindex").glob("traces-*.db"))


# --- built once, reused, built again -----------------------------------------------------------------


_QUERY = (
    "import json, sys; from pathlib import Path; from evcli.backends.snapshot import SnapshotBackend;"
    "from evcli.backends.trace_graph import TraceQuery;"
    "found = SnapshotBackend(Path(sys.argv[1])).traces.query(TraceQuery(service='payment')).answer;"
    "print(json.dumps([found.edges, found.stats]))"
)


def test_the_index_is_built_once_and_reused_by_a_later_process_while_the_files_are_unchanged(tmp_path, evcli_home):
    env = Path(shutil.copytree(ENV, tmp_path / "env"))
    first = SnapshotBackend(env).traces.query(TraceQuery(service="payment")).answer
    (index,) = index_files(evcli_home)
    built = index.stat()
    later = subprocess.run(
        [sys.executable, "-c", _QUERY, str(env)],
        env={**os.environ, "EVCLI_HOME": str(evcli_home)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(later.stdout) == [first.edges, first.stats]
    assert index_files(evcli_home) == [index]
    assert (index.stat().st_ino, index.stat().st_mtime_ns) == (built.st_ino, built.st_mtime_ns)  # read, not rebuilt
    assert not list((evcli_home / "logindex").glob(".*"))  # no temporary file left


def test_a_changed_added_or_removed_file_is_indexed_again(tmp_path, evcli_home):
    env = tmp_path / "env"
    write_calls(env / "traces" / "calls.jsonl", 10)
    before = SnapshotBackend(env).traces.query(TraceQuery(service="payment")).answer
    with (env / "traces" / "calls.jsonl").open("a") as handle:
        handle.write(
            _otlp_line(
                "ff",
                [
                    ("checkout", "x1", "", "POST", T0_NS, 10**6, False),
                    ("payment", "x2", "x1", "charge", T0_NS, 10**9, True),
                ],
            )
            + "\n"
        )
    after = SnapshotBackend(env).traces.query(TraceQuery(service="payment")).answer
    assert (before.total, after.total) == (10, 11)
    assert after.edges[0]["calls"] == 11 and after.edges[0]["p99_ms"] == 1000.0
    shutil.copy(ENV / "traces" / "zipkin.json", env / "traces")
    assert "inventory" in SnapshotBackend(env).traces.services()
    (env / "traces" / "zipkin.json").unlink()
    assert "inventory" not in SnapshotBackend(env).traces.services()
    assert len(index_files(evcli_home)) == 3  # one per state; after the removal it is the second again: reused


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_index_is_built_again(tmp_path, evcli_home, damage):
    env = tmp_path / "env"
    write_calls(env / "traces" / "calls.jsonl", 2_000)
    expected = SnapshotBackend(env).traces.query(TraceQuery(service="payment")).answer
    (index,) = index_files(evcli_home)
    if damage == "garbage":
        index.write_bytes(b"this is no SQLite file" * 100)
    else:
        with index.open("r+b") as handle:
            handle.truncate(index.stat().st_size // 3)
    found = SnapshotBackend(env).traces.query(TraceQuery(service="payment")).answer
    assert (found.edges, found.stats) == (expected.edges, expected.stats)
    assert index_files(evcli_home) == [index] and index.stat().st_size > 50_000


def test_the_deadline_stops_the_build_and_keeps_nothing(tmp_path, evcli_home):
    env = tmp_path / "env"
    write_calls(env / "traces" / "calls.jsonl", 3_000)
    with deadline_scope(Deadline(0.0)), pytest.raises(DeadlineExceeded):
        SnapshotBackend(env).traces.query(TraceQuery())
    assert index_files(evcli_home) == [] and not list((evcli_home / "logindex").glob(".*traces*"))
    assert SnapshotBackend(env).traces.query(TraceQuery()).answer.total == 9_000  # without one it is built


def test_a_killed_build_leaves_no_index_that_would_be_read(tmp_path, evcli_home):
    env = tmp_path / "env"
    write_calls(env / "traces" / "calls.jsonl", 40_000)
    child = subprocess.Popen(
        [sys.executable, "-c", _QUERY, str(env)],
        env={**os.environ, "EVCLI_HOME": str(evcli_home)},
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not list((evcli_home / "logindex").glob(".building-traces-*")) and time.monotonic() < deadline:
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert index_files(evcli_home) == []
    assert SnapshotBackend(env).traces.query(TraceQuery(service="payment")).answer.total == 40_000


def test_a_big_file_read_in_parts_gives_the_rows_of_one_read(tmp_path, monkeypatch):
    env = messy(tmp_path / "env", seed=5)
    write_calls(env / "traces" / "d.jsonl", 300)
    (env / "traces" / "e.csv").write_text(
        'trace_id,span_id,parent_id,service,operation,start_us,end_us\nab,1,,web,"GET, /",1,2\nab,2,1,api,q,1,2\n'
    )
    monkeypatch.setenv("EVCLI_HOME", str(tmp_path / "whole"))
    whole = answers(SnapshotBackend(env))
    whole_files = file_facts(SnapshotBackend(env))
    monkeypatch.setenv("EVCLI_HOME", str(tmp_path / "parts"))
    monkeypatch.setattr(tracebuild, "PART_MIN_BYTES", 1)
    started = []
    monkeypatch.setattr(
        tracebuild.Workers,
        "__enter__",
        lambda self, enter=tracebuild.Workers.__enter__: started.append(self.job[0].name) or enter(self),
    )
    assert answers(SnapshotBackend(env)) == whole
    parts_files = file_facts(SnapshotBackend(env))
    assert parts_files == whole_files
    assert {"a.jsonl", "b.csv", "d.jsonl"} <= set(started) and "e.csv" not in started  # a quoted table is read whole


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_index_answers_as_the_in_memory_graph_on_messy_spans(tmp_path, seed):
    """Every query answered from the index equals `trace_graph.answer` over the same files read into memory."""
    backend = SnapshotBackend(messy(tmp_path / "env", seed))
    traces, sources = backend.traces, []
    for path in traces.paths():
        try:
            found = read_spans(path.read_bytes(), csv_name=path.suffix == ".csv", tz=traces.zone)
        except TraceFileError:
            continue
        where = path.relative_to(backend.directory).as_posix()
        sources += [
            SpanSource(replace(span, service=backend.service_named(span.service) if span.service else ""), where)
            for span in found.spans
        ]
    graph = SpanGraph(sources)
    assert asdict(traces.quality) == asdict(graph.quality)
    assert graph.quality.duplicates and graph.quality.orphans and graph.quality.skewed and graph.quality.without_service
    for query in queries(backend):
        indexed, in_memory = traces.query(query).answer, answer(graph, query, traces.zone)
        assert (indexed.spans, indexed.stats, indexed.edges, indexed.total) == (
            in_memory.spans,
            in_memory.stats,
            in_memory.edges,
            in_memory.total,
        ), query


# --- the first build: a progress bar on a terminal, before query_traces' deadline ----------------------


_BUILD = "import sys; from pathlib import Path; from evcli.backends.snapshot import SnapshotBackend; SnapshotBackend(Path(sys.argv[1])).traces.prepare()"


def _stderr_of_build(env: Path, home: Path, *, terminal: bool) -> str:
    command = [sys.executable, "-c", _BUILD, str(env)]
    environment = {**os.environ, "EVCLI_HOME": str(home), "COLUMNS": "100"}
    if not terminal:
        return subprocess.run(command, env=environment, capture_output=True, text=True, check=True).stderr
    return stderr_on_a_terminal(command, environment)


def test_a_progress_bar_shows_while_a_big_file_is_indexed_on_a_terminal_only(tmp_path):
    env = tmp_path / "env"
    write_calls(env / "traces" / "calls.jsonl", 9_000)  # over 8 MiB
    assert "indexing traces/" in _stderr_of_build(env, tmp_path / "home-tty", terminal=True)
    assert _stderr_of_build(env, tmp_path / "home-pipe", terminal=False) == ""


def test_query_traces_builds_the_index_before_its_deadline_starts(tmp_path, monkeypatch):
    """A first build that takes longer than the call's timeout does not fail the call (it timed out before)."""
    env = tmp_path / "env"
    write_calls(env / "traces" / "calls.jsonl", 20_000)
    monkeypatch.setenv("EVCLI_TOOL_TIMEOUT_S", "0.2")
    run = evcli(
        "tool",
        "query_traces",
        "--env",
        env,
        "--service",
        "payment",
        "--since",
        "2026-05-04T16:40:00Z",
        "--until",
        "2026-05-04T16:41:00Z",
        "--json",
    )
    assert run.exit_code == 0, run
    output = run.json()["output"]
    assert "error" not in output, output
    assert [(edge["caller"], edge["callee"], edge["calls"]) for edge in output["edges"]] == [
        ("checkout", "payment", 6_000)
    ]
