"""Span files that are wrong the ways real ones are (issue 25's bad input): each is read, what is wrong is stated
(by `env check` and in the stats of query_traces), the work stays bounded, and nothing crashes or turns into an
edge that the spans do not show. Each case goes through the index (a snapshot) and, where it concerns the call
graph, through the in-memory `SpanGraph` a live backend uses, which must agree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC
from pathlib import Path

from evcli.backends.envcheck import check_env
from evcli.backends.snapshot import SnapshotBackend
from evcli.backends.trace_graph import SpanGraph, SpanSource, TraceQuery, answer
from evcli.backends.traceformats import Span
from tests.cli._util import evcli

T0_NS = 1_777_912_800 * 10**9  # 2026-05-04T16:40:00Z
HEADER = "trace_id,span_id,parent_id,service,operation,start_ms,duration_ms,status\n"


def snapshot(tmp_path: Path, rows: list[str], name: str = "spans.csv") -> Path:
    """A snapshot whose traces/ holds one span table: (trace, span, parent, service, operation, start ms after
    T0, duration ms, status) a row."""
    (tmp_path / "traces").mkdir(exist_ok=True)
    table = ""
    for row in rows:
        trace, span, parent, service, operation, start, duration, status = row.split(",")
        table += f"{trace},{span},{parent},{service},{operation},{T0_NS // 10**6 + int(start)},{duration},{status}\n"
    (tmp_path / "traces" / name).write_text(HEADER + table)
    return tmp_path


def graph_of(env: Path) -> SpanGraph:
    """The same spans in memory, as a live backend answers them."""
    found = []
    for file in SnapshotBackend(env).traces.files:
        assert file.found is not None
        found += [SpanSource(span, file.relative) for span in file.found.spans]
    return SpanGraph(found)


def edges(env: Path, **query) -> list[tuple[str, str, int]]:
    found = SnapshotBackend(env).traces.query(TraceQuery(**query)).answer
    in_memory = answer(graph_of(env), TraceQuery(**query), UTC)
    assert (found.edges, found.stats) == (in_memory.edges, in_memory.stats)
    return [(edge["caller"], edge["callee"], edge["calls"]) for edge in found.edges]


def warnings(env: Path) -> list[str]:
    report = check_env(env)
    return [problem.message for problem in report.problems if problem.path == "traces/"]


def stats_ref(env: Path, *args: str) -> str:
    run = evcli("tool", "query_traces", "--env", env, "--json", *args)
    assert run.exit_code == 0, run
    return next(ref["text"] for ref in run.json()["retrieval_details"]["evidence_refs"] if ref["raw_path"] == "$.stats")


def test_cyclic_parents_are_on_no_edge_and_stated(tmp_path):
    env = snapshot(
        tmp_path,
        [
            "t1,r,,gateway,GET /,0,100,ok",
            "t1,c,r,checkout,POST,10,50,ok",  # a real call
            "t2,a,b,web,x,0,10,ok",  # a → b → a, both starting together
            "t2,b,a,api,y,0,10,ok",
            "t3,p,q,web,x,0,10,ok",  # p → q → s → p: one link starts before its parent
            "t3,q,s,api,y,5,10,ok",
            "t3,s,p,db,z,9,10,ok",
            "t3,u,q,cache,get,7,1,ok",  # a child of a span on the cycle: its call was read
        ],
    )
    assert edges(env) == [("gateway", "checkout", 1), ("api", "cache", 1)]
    assert "5 spans are on a cycle of parents (each is its own ancestor): on no edge" in warnings(env)
    assert SnapshotBackend(env).traces.quality.cyclic == 5
    assert "; 5 spans on a cycle of parents (on no edge)" in stats_ref(env)


def test_missing_parents_are_orphans_counted_and_never_guessed(tmp_path):
    rows = ["t0,root,,gateway,GET /,0,100,ok"]
    rows += [f"t{index},s{index},gone{index},payment,charge,{index},5,error" for index in range(1, 13)]
    env = snapshot(tmp_path, rows)
    assert edges(env) == []
    assert "12 orphan spans (their parent span is in no file): no edge to them" in warnings(env)
    assert "; 12 orphan spans (parent not found)" in stats_ref(env, "--service", "payment")


def test_clock_skew_is_stated_and_the_edge_still_counted(tmp_path):
    env = snapshot(tmp_path, ["t1,a,,web,GET /,100,50,ok", "t1,b,a,api,load,90,20,ok", "t1,c,a,api,save,120,5,ok"])
    assert edges(env) == [("web", "api", 2)]
    assert "1 spans start before their parent (clock skew between hosts)" in warnings(env)
    assert "; 1 spans start before their parent (clock skew)" in stats_ref(env, "--service", "api")


def test_a_repeated_span_id_is_stated_and_not_counted_twice_as_a_call(tmp_path):
    call = ["t1,a,,web,GET /,0,50,ok", "t1,b,a,api,load,1,20,error"]
    env = snapshot(tmp_path, [*call, call[1], call[1]])  # the same span exported three times
    assert edges(env) == [("web", "api", 1)]
    found = SnapshotBackend(env).traces.query(TraceQuery(service="api")).answer
    assert found.edges[0]["errors"] == 1 and found.stats["repeated"] == 2
    assert "2 spans repeat a span id of their trace (the first is kept as parent): on no edge" in warnings(env)


def test_spans_without_a_service_are_on_no_edge_and_stated(tmp_path):
    env = snapshot(tmp_path, ["t1,a,,web,GET /,0,50,ok", "t1,b,a,,load,1,20,ok", "t1,c,b,db,query,2,5,ok"])
    assert edges(env) == []
    assert "2 spans name no service: they are on no call edge" not in warnings(env)
    assert "1 spans name no service: they are on no call edge" in warnings(env)
    found = SnapshotBackend(env).traces.query(TraceQuery(count_by="service")).answer
    assert found.stats["by_service"] == {"web": 1, "(none)": 1, "db": 1}


_MEASURED = (
    "import json, sys; from pathlib import Path; from evcli.backends.envcheck import check_env;"
    "from evcli.backends.snapshot import SnapshotBackend; from evcli.backends.trace_graph import TraceQuery;"
    "from evcli.core.errors import BackendError; env = Path(sys.argv[1])\n"
    "try:\n    SnapshotBackend(env).traces.query(TraceQuery())\n    failed = ''\n"
    "except BackendError as error:\n    failed = str(error)\n"
    "problems = [(p.path, p.severity, p.message) for p in check_env(env).problems if p.path.startswith('traces')]\n"
    # VmHWM: this process's own peak (ru_maxrss keeps the peak of the process it was forked from across exec,
    # the whole test run's when the suite is big)
    "peak = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')) * 1024\n"
    "print(json.dumps([failed, problems, peak]))"
)


def test_a_2_gb_single_line_json_document_is_refused_naming_its_size_in_bounded_memory(tmp_path):
    """A Jaeger or Zipkin export is one JSON document, read whole: past 64 MiB it is refused in one line that
    names the file and its size, after reading at most that much of it. The file is sparse (no 2 GB written)."""
    (tmp_path / "traces").mkdir()
    big = tmp_path / "traces" / "zipkin-export.json"
    with big.open("wb") as handle:
        handle.write(b'[{"traceId": "' + b"a" * 32 + b'", "id": "b", "timestamp": 1777912800000000, "name": "')
        handle.truncate(2 << 30)
        handle.seek((2 << 30) - 3)
        handle.write(b'"}]')
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, str(tmp_path)],
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        check=True,
    )
    failed, problems, peak_rss = json.loads(done.stdout)
    size = "2147483648 bytes, 2.0 GiB"
    assert failed.startswith("traces/zipkin-export.json: refused: line 1 holds a JSON document of more than 64 MiB")
    assert size in failed and "\n" not in failed
    assert len(problems) == 1 and problems[0][:2] == ["traces/zipkin-export.json", "error"] and size in problems[0][2]
    assert peak_rss < 400 << 20  # read up to the limit, never the whole document
    assert big.stat().st_blocks * 512 < 1 << 20  # still sparse: nothing wrote the 2 GB


def test_a_file_that_is_not_traces_is_an_error_naming_it_and_the_others_still_read(tmp_path):
    env = snapshot(tmp_path, ["t1,a,,web,GET /,0,50,ok", "t1,b,a,api,load,1,20,ok"])
    (env / "traces" / "notes.json").write_text("these are my notes, not spans\n")
    (env / "traces" / "metrics.csv").write_text("time,cpu\n1,0.5\n")
    (env / "traces" / "config.json").write_text('{"server": {"port": 8080}}')
    (env / "traces" / "binary.jsonl").write_bytes(bytes(range(256)) * 64)
    problems = {(p.path, p.severity): p.message for p in check_env(env).problems}
    assert problems[("traces/notes.json", "error")].startswith("not a span table: the header")
    assert problems[("traces/metrics.csv", "error")].startswith("not a span table: the header 'time,cpu' has no trace")
    assert problems[("traces/config.json", "error")].startswith("line 1: JSON of an unknown shape")
    assert problems[("traces/binary.jsonl", "error")].startswith("not a span table")
    result = SnapshotBackend(env).traces.query(TraceQuery())
    assert [(edge["caller"], edge["callee"]) for edge in result.answer.edges] == [("web", "api")]
    assert sorted(error.split(":")[0] for error in result.errors) == [
        "traces/binary.jsonl",
        "traces/config.json",
        "traces/metrics.csv",
        "traces/notes.json",
    ]
    assert list(result.digests) == sorted(result.digests) and len(result.digests) == 5


def test_a_cycle_in_memory_is_bounded_and_on_no_edge():
    """The in-memory graph walks each parent chain once: a long cycle ends, and none of it is an edge."""
    spans = [
        Span("t", f"s{index}", f"s{(index + 1) % 5_000}", f"svc{index % 3}", "op", T0_NS, 1, "ok", 1)
        for index in range(5_000)
    ]
    graph = SpanGraph(SpanSource(span, "traces/x") for span in spans)
    assert graph.quality.cyclic == 5_000
    assert answer(graph, TraceQuery(), UTC).edges == []
