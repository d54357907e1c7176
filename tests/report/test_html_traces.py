"""Trace evidence in the report: a waterfall per cited trace and the call edges of a cited edge, drawn as
inline SVG and checked in a real headless Chromium (the `browser` fixture of tests/report/conftest.py).

The sessions are made by the real chain on span tables written here: `evcli tool query_traces --session`
records the invocations, an Executor output cites a span and an edge by the refs the tool wrote, and
`evcli gate`, `evcli verify` and `evcli compose` (offline) gate, verify and compose it. A report of a
session without traces is compared with what the report code wrote before traces were drawn
(tests/report/golden: the sample sessions rendered by commit b98954b; regenerate them only for an
intended change to such reports).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from evcli.contracts import SessionConfig, StageOutput
from evcli.report import render
from evcli.report.traces import MAX_ROWS
from evcli.store.db import TraceStore
from tests.cli._util import evcli
from tests.conftest import sample
from tests.report.conftest import load, needs_chromium
from tests.report.conftest import open_report as _open

GOLDEN = Path(__file__).parent / "golden"
HOSTILE_SERVICE = 'svc"><img src=x onerror="alert(1)">'
HOSTILE_OPERATION = '<script>alert("op")</script> \u202eevil\u202c'
BASE_US = 1_777_914_000_000_000  # 2026-05-04T17:00:00Z
HEADER = ["trace_id", "span_id", "parent_id", "service", "operation", "start_us", "end_us", "status"]
# (trace, span, parent, service, operation, start and end in µs after BASE_US, status)
SHOP = [
    ("ab1", "a1", "", "gateway", "GET /checkout", 0, 900_000, "OK"),
    ("ab1", "a2", "a1", "checkout", "POST /checkout", 10_000, 860_000, "OK"),
    ("ab1", "a3", "a2", "payment", HOSTILE_OPERATION, 20_000, 820_000, "ERROR"),
    ("ab1", "a4", "a2", HOSTILE_SERVICE, "lookup", 830_000, 850_000, "OK"),
    ("ab1", "a5", "ff", "audit", "write", 870_000, 880_000, "OK"),  # its parent was never read: an orphan
    ("ab2", "b1", "", "gateway", "GET /checkout", 2_000_000, 2_100_000, "OK"),
    ("ab2", "b2", "b1", "checkout", "POST /checkout", 2_010_000, 2_090_000, "OK"),
    ("ab2", "b3", "b2", "payment", "charge", 2_020_000, 2_080_000, "OK"),
]
BIG_SPANS, BIG_CITED = 250, 150  # one trace of 250 spans; the 151st in start order is cited


def _environment(root: Path, rows: list[tuple[Any, ...]]) -> Path:
    env = root / "env"
    (env / "traces").mkdir(parents=True)
    (env / "env.toml").write_text('name = "traces-report"\ntimezone = "UTC"\nnow = "2026-05-04T18:00:00Z"\n')
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(HEADER)
    for trace, span, parent, service, operation, start, end, status in rows:
        writer.writerow([trace, span, parent, service, operation, BASE_US + start, BASE_US + end, status])
    (env / "traces" / "spans.csv").write_text(table.getvalue(), encoding="utf-8")
    return env


def _claim(number: int, invocation: dict[str, Any], raw_path: str) -> dict[str, Any]:
    """A claim that restates the cited ref as the tool wrote it (less the file:line a span ref ends with)."""
    text = next(ref["text"] for ref in invocation["retrieval_details"]["evidence_refs"] if ref["raw_path"] == raw_path)
    binding = {
        "source_type": "tool_trace",
        "source_id": "",
        "tool_name": "query_traces",
        "source_invocation_id": invocation["invocation_id"],
        "raw_path": raw_path,
        "evidence_excerpt": text,
    }
    return {
        "claim_id": f"c{number}",
        "claim_type": "observation",
        "claim_text": text.rsplit(" (traces/", 1)[0],
        "support_level": "direct",
        "evidence_bindings": [binding],
    }


def _session(root: Path, rows: list[tuple[Any, ...]], calls: list[list[str]], cited: list[tuple[int, str]]) -> Path:
    """A session on a span table: `calls` recorded, the refs `cited` ((call index, raw_path)) claimed, then
    gated, verified and composed by the offline chain; exported to a file."""
    env, db, exported = _environment(root, rows), root / "evcli.db", root / "session.json"
    with TraceStore(db) as store:
        config = SessionConfig.model_validate({"task_scope": "broad", "env": {"env_dir": str(env)}})
        session_id = store.create_session("why does checkout fail?", config=config).session_id
    invocations = []
    for args in calls:
        recorded = evcli("tool", "query_traces", *args, "--session", session_id, "--db", db, "--json")
        assert recorded.exit_code == 0, recorded
        invocations.append(recorded.json())
    claims = [_claim(n, invocations[call], path) for n, (call, path) in enumerate(cited, start=1)]
    executor = {"answer_version": "executor_evidence_v2", "claims": claims}
    with TraceStore(db) as store:
        store.record_stage_output(session_id, StageOutput(stage="execute", output=executor))
    for stage in ("gate", "verify", "compose"):
        assert evcli(stage, session_id, "--db", db, "--json").exit_code == 0, stage
    assert evcli("export", session_id, "-o", exported, "--db", db).exit_code == 0
    return exported


@pytest.fixture(scope="module")
def shop_session(tmp_path_factory) -> Path:
    """payment's spans (the slowest, of trace ab1, cited) and trace ab1 whole (its first edge cited)."""
    calls = [["--service", "payment"], ["--trace-id", "ab1"]]
    return _session(tmp_path_factory.mktemp("shop"), SHOP, calls, [(0, "$.spans[0]"), (1, "$.edges[0]")])


@pytest.fixture(scope="module")
def big_session(tmp_path_factory) -> Path:
    """One trace of 250 spans, 200 of them recorded, the 151st cited."""
    rows = [("cafe", "c0", "", "gateway", "GET /batch", 0, 3_000_000, "OK")]
    rows += [
        ("cafe", f"c{n}", "c0", "worker", f"step {n}", n * 10_000, n * 10_000 + 5_000 + n, "OK")
        for n in range(1, BIG_SPANS)
    ]
    cited = f"$.spans[{BIG_CITED}]"
    return _session(tmp_path_factory.mktemp("big"), rows, [["--trace-id", "cafe", "--limit", "200"]], [(0, cited)])


def _drawn(browser, selector: str) -> list[dict[str, Any]]:
    """Each element `selector` matches: its classes, text, rendered box and fill."""
    return browser.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]), e => {var box = e.getBoundingClientRect();"
        " return {cls: e.getAttribute('class'), text: e.textContent, width: box.width, height: box.height,"
        " x: Number(e.getAttribute('x')), fill: getComputedStyle(e).fill}})",
        selector,
    )


@needs_chromium
def test_the_cited_trace_is_a_waterfall_of_every_recorded_span_with_the_cited_error_span_marked(
    browser, shop_session, tmp_path
):
    _open(browser, shop_session, tmp_path)
    assert len(_drawn(browser, "svg.waterfall")) == 1  # trace ab2 has recorded spans, none cited
    groups = _drawn(browser, "svg.waterfall g.span")
    assert [g["cls"] for g in groups] == ["span", "span", "span error cited", "span", "span"]
    bars = _drawn(browser, "svg.waterfall rect.bar")
    assert len(bars) == 5 and all(bar["width"] > 0 and bar["height"] > 0 for bar in bars)
    # 900, 850, 800, 20 and 10 ms on a 0..1000 ms axis: the bars' rendered widths keep the ratios
    assert bars[0]["width"] / bars[2]["width"] == pytest.approx(900 / 800, rel=0.02)
    assert bars[2]["fill"] != bars[0]["fill"]  # the error bar has its own colour ...
    assert [m["text"] for m in _drawn(browser, "svg.waterfall g.error .error-mark")] == ["✕ error"]  # ... and a word
    ticks = [t["text"] for t in _drawn(browser, "svg.waterfall .tick-label")]
    assert ticks == ["0 ms", "200 ms", "400 ms", "600 ms", "800 ms", "1000 ms"]
    # indented by the parent service: gateway > checkout > payment and the lookup; the orphan at depth 0
    assert [label["x"] for label in _drawn(browser, "svg.waterfall .label")] == [4, 14, 24, 24, 4]
    assert [m["text"] for m in _drawn(browser, "svg.waterfall g.cited .cite-mark")] == ["[1]"]
    browser.execute_script("document.querySelector('svg.waterfall g.cited a').dispatchEvent(new MouseEvent('click'))")
    assert browser.execute_script("return location.hash") == "#cite-1"
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []


@needs_chromium
def test_a_cited_edge_is_drawn_with_the_other_edges_of_its_call(browser, shop_session, tmp_path):
    _open(browser, shop_session, tmp_path)
    graphs = _drawn(browser, "svg.calls")
    assert len(graphs) == 1  # the payment call's edges are not cited
    rows = browser.execute_script(
        "return Array.from(document.querySelectorAll('svg.calls g.edge'), g => [g.getAttribute('class'),"
        " Array.from(g.querySelectorAll('text'), t => t.textContent), g.querySelectorAll('.arrow').length])"
    )
    assert rows == [
        ["edge error cited", ["checkout", "payment", "1", "✕ 1", "800 ms", "[2]"], 2],
        ["edge", ["gateway", "checkout", "1", "0", "850 ms"], 2],
        ["edge", ["checkout", HOSTILE_SERVICE, "1", "0", "20 ms"], 2],
    ]
    links = browser.execute_script(
        "return Array.from(document.querySelectorAll('.ref a'), a => [a.closest('.ref').id, a.getAttribute('href')])"
    )
    assert links == [["ev-1-1", "#trace-1"], ["ev-2-1", "#calls-2"]]


@needs_chromium
def test_hostile_service_and_operation_names_stay_inert_text(browser, shop_session, tmp_path):
    _open(browser, shop_session, tmp_path)
    found = browser.execute_script(
        "return {scripts: document.scripts.length, injected: document.querySelectorAll('img, body style').length,"
        " labels: Array.from(document.querySelectorAll('svg .label'), t => t.textContent),"
        " titles: Array.from(document.querySelectorAll('svg g.span > title'), t => t.textContent)}"
    )
    assert (found["scripts"], found["injected"]) == (1, 0)
    assert f"{HOSTILE_SERVICE} lookup" in found["labels"]
    shown = '<script>alert("op")</script> \\u202eevil\\u202c'  # a bidi override is shown, never obeyed
    assert any(label.startswith("payment <script>alert(") for label in found["labels"])
    assert any(
        title.startswith(f"payment {shown}: starts +20 ms, lasts 800 ms, status error") for title in found["titles"]
    )
    assert "\u202e" not in (tmp_path / "report.html").read_text(encoding="utf-8")
    assert browser.execute_script("return 1") == 1  # no alert() ran


@needs_chromium
def test_a_long_trace_draws_at_most_the_row_cap_with_the_cited_span_and_says_how_many_more(
    browser, big_session, tmp_path
):
    _open(browser, big_session, tmp_path)
    groups = _drawn(browser, "svg.waterfall g.span")
    assert len(groups) == MAX_ROWS and len(_drawn(browser, "svg.waterfall rect.bar")) == MAX_ROWS
    cited = [g["text"] for g in groups if "cited" in g["cls"]]
    assert len(cited) == 1 and f"step {BIG_CITED}" in cited[0]  # span 150 starts after the first 60 drawn
    assert [m["text"] for m in _drawn(browser, "svg.waterfall .more")] == ["… and 140 more spans (not drawn)"]
    assert _drawn(browser, "svg.waterfall")[0]["height"] < 1300


def test_thousands_of_recorded_spans_of_one_trace_keep_the_report_small(big_session, tmp_path):
    document = json.loads(big_session.read_text(encoding="utf-8"))
    (invocation,) = document["invocations"]
    spans = invocation["output"]["spans"]
    spans += [dict(spans[1], span_id=f"extra{n}", operation=f"extra {n}") for n in range(5000 - len(spans))]
    page = render(load(_write(tmp_path / "many.json", document)), "html")
    drawing = page[page.index('<svg class="waterfall"') : page.index("</svg>", page.index('<svg class="waterfall"'))]
    assert f'data-rows="{MAX_ROWS}"' in drawing and f'data-more="{5000 - MAX_ROWS}"' in drawing
    assert len(drawing) < 40_000 and len(page) < 120_000


def test_markdown_lists_the_cited_trace_and_edges_as_text(shop_session):
    document = load(shop_session)
    full, brief = render(document, "md"), render(document, "md", brief=True)
    traces = full[full.index("### Traces") :]
    assert "- checkout → payment: 1 calls, 1 errors, p99 800 ms [2]" in traces
    assert "- gateway → checkout: 1 calls, 0 errors, p99 850 ms" in traces
    lines = traces.splitlines()
    listed = lines[lines.index("```text") + 1 : lines.index("```")]
    assert listed[1:] == [
        "       +0        900  gateway GET /checkout",
        "      +10        850    checkout POST /checkout",
        '      +20        800      payment <script>alert("op")</script> \\u202eevil\\u202c  ✕ error [1]',
        f"     +830         20      {HOSTILE_SERVICE} lookup",
        "     +870         10  audit write",
    ]
    assert "### Traces" not in brief and "svg" not in full


@pytest.mark.parametrize(
    ("name", "format", "brief", "suffix"),
    [
        ("broad-order-service", "html", False, "html"),
        ("broad-order-service", "md", False, "md"),
        ("broad-order-service", "md", True, "brief.md"),
        ("fault-claim-service-swapped", "html", False, "html"),
        ("fault-claim-service-swapped", "md", False, "md"),
    ],
)
def test_a_session_without_traces_renders_exactly_as_before(name, format, brief, suffix):
    golden = (GOLDEN / f"{name}.{suffix}").read_text(encoding="utf-8")
    assert render(load(sample(name)), format, brief=brief) == golden


def _write(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_a_span_is_drawn_under_its_parent_span_not_under_a_lookalike_of_its_service(tmp_path):
    """Each row is indented under the row of its recorded parent span id: p1's parent is c1 although the
    checkout span c2 (c1's own child) starts after c1 and encloses p1 too, and a span starting before its
    parent (clock skew) is still its child."""
    from evcli.report.model import report_model

    rows = [
        ("dd1", "g1", "", "gateway", "GET /", 0, 1_000_000, "OK"),
        ("dd1", "c1", "g1", "checkout", "POST /checkout", 10_000, 900_000, "OK"),
        ("dd1", "c2", "c1", "checkout", "retry", 20_000, 890_000, "OK"),
        ("dd1", "p1", "c1", "payment", "charge", 30_000, 100_000, "OK"),
        ("dd1", "s1", "g1", "audit", "write", -5_000, 2_000, "OK"),  # starts 5 ms before its parent
    ]
    exported = _session(tmp_path, rows, [["--trace-id", "dd1"]], [(0, "$.spans[0]")])

    (waterfall,) = report_model(load(exported)).waterfalls
    depths = {row.span_id: row.depth for row in waterfall.rows}
    assert depths == {"g1": 0, "c1": 1, "c2": 2, "p1": 2, "s1": 1}
