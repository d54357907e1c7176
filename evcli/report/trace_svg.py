"""Inline SVG drawings of trace evidence: a span waterfall and a table of call edges with arrows.

Waterfall (`<svg class="waterfall">`): one `<g class="span">` per row (evcli.report.traces bounds them), its
label indented by depth (at most MAX_INDENT levels shown), one `<rect class="bar">` from its start
to its end on a time axis in milliseconds from the first drawn start, whose ticks are round values
(1, 2, 2.5 or 5 × 10ⁿ ms, evcli.report.svg.value_ticks); `<g class="x-axis">` has a grid line and a
`<text class="tick-label">` per tick. An error span's group has class `error` and a text marker
"✕ error", so it reads without colour; a cited span's group has class `cited`, a highlight band and
a `[n]` link per citation (the first CITE_MARKS, then "+k"). Spans not drawn are stated in a `<text class="more">`.
Call edges (`<svg class="calls">`): one `<g class="edge">` per row, caller → callee with a drawn arrow, calls,
errors ("✕ n" when there are any) and p99; cited rows are highlighted and link their citations.
Every text is escaped, a long name is cut (the whole name is in the row's `<title>`); the SVG
loads nothing and needs no script. Colours come from the report's CSS (html.TRACE_STYLE).
"""

from __future__ import annotations

from html import escape

from evcli.core.console import visible
from evcli.report.svg import value_ticks
from evcli.report.traces import CallGraph, EdgeRow, SpanRow, Waterfall

WIDTH = 760
ROW = 18  # the height of a row
LABEL_END, BAR_START, BAR_END, MARKS = 296, 304, 620, 628  # x: labels | bars | error and citation marks
CITE_MARKS = 3  # `[n]` links drawn on a row
TOP, BOTTOM = 30, 34  # room for the tick labels above, the axis label and the note below
INDENT, MAX_INDENT = 10, 8
CHAR = 5.6  # the width of a 10px character, to cut labels to their column
CALLER_END, ARROW_START, ARROW_END, CALLEE_START = 236, 242, 306, 312
CALLS_END, ERRORS_END, P99_END = 560, 620, 690  # right-aligned number columns


def waterfall_svg(trace: Waterfall) -> str:
    ticks = value_ticks(0.0, max((row.offset_ms + row.duration_ms for row in trace.rows), default=0.0))
    total = ticks[-1] - ticks[0] or 1.0
    scale = (BAR_END - BAR_START) / total
    height = TOP + len(trace.rows) * ROW + BOTTOM
    errors = sum(row.error for row in trace.rows)
    summary = f"trace {trace.trace_id}: {len(trace.rows)} spans drawn, {errors} with errors"
    parts = [
        f'<svg class="waterfall" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
        f'aria-label="{escape(summary)}" data-rows="{len(trace.rows)}" data-more="{trace.more}">',
        f"<title>{escape(summary)}</title>",
        _time_axis(ticks, scale, height),
    ]
    parts += [_span_row(row, TOP + index * ROW, scale, ticks[0]) for index, row in enumerate(trace.rows)]
    parts.append(
        f'<text class="axis-label" x="{BAR_START}" y="{height - 18}">'
        f"{escape(f'ms since {trace.start} (the start of the first span drawn)')}</text>"
    )
    if trace.more:
        parts.append(f'<text class="more" x="4" y="{height - 4}">{escape(_more(trace.more, "span"))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _time_axis(ticks: list[float], scale: float, height: int) -> str:
    parts = ['<g class="x-axis">']
    for tick in ticks:
        x = BAR_START + (tick - ticks[0]) * scale
        parts.append(
            f'<line class="grid" x1="{x:.1f}" y1="{TOP - 6}" x2="{x:.1f}" y2="{height - BOTTOM}"/>'
            f'<text class="tick-label" x="{x:.1f}" y="{TOP - 10}" text-anchor="middle">{escape(_ms(tick))}</text>'
        )
    parts.append("</g>")
    return "".join(parts)


def _span_row(row: SpanRow, y: int, scale: float, zero: float) -> str:
    indent = min(row.depth, MAX_INDENT) * INDENT
    name = f"{row.service or '(no service)'} {row.operation}"
    x = BAR_START + (row.offset_ms - zero) * scale
    width = max(1.0, row.duration_ms * scale)
    classes = " ".join(["span", *(["error"] if row.error else []), *(["cited"] if row.citations else [])])
    title = (
        f"{name}: starts +{_ms(row.offset_ms)}, lasts {_ms(row.duration_ms)}, status {row.status}, "
        f"parent service {row.parent_service or '-'}, span {row.span_id}"
    )
    parts = [f'<g class="{classes}"><title>{escape(title)}</title>']
    if row.citations:
        parts.append(f'<rect class="row-hl" x="0" y="{y}" width="{WIDTH}" height="{ROW}"/>')
    parts.append(
        f'<text class="label" x="{4 + indent}" y="{y + 13}">{escape(_cut(name, LABEL_END - 4 - indent))}</text>'
        f'<rect class="bar" x="{x:.1f}" y="{y + 4}" width="{width:.1f}" height="{ROW - 8}"/>'
    )
    marks = MARKS
    if row.error:
        parts.append(f'<text class="error-mark" x="{marks}" y="{y + 13}">✕ error</text>')
        marks += 46
    parts.append(_cite_marks(row.citations, marks, y + 13))
    parts.append("</g>")
    return "".join(parts)


def call_graph_svg(graph: CallGraph) -> str:
    height = 24 + len(graph.rows) * ROW + (ROW if graph.more else 6)
    summary = f"call edges of {graph.tool_name} #{graph.invocation_id}: {len(graph.rows)} drawn"
    head = (
        f'<text class="head" x="{CALLER_END}" y="16" text-anchor="end">caller</text>'
        f'<text class="head" x="{CALLEE_START}" y="16">callee</text>'
        f'<text class="head" x="{CALLS_END}" y="16" text-anchor="end">calls</text>'
        f'<text class="head" x="{ERRORS_END}" y="16" text-anchor="end">errors</text>'
        f'<text class="head" x="{P99_END}" y="16" text-anchor="end">p99</text>'
    )
    parts = [
        f'<svg class="calls" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
        f'aria-label="{escape(summary)}" data-rows="{len(graph.rows)}" data-more="{graph.more}">',
        f"<title>{escape(summary)}</title>{head}",
    ]
    parts += [_edge_row(row, 24 + index * ROW) for index, row in enumerate(graph.rows)]
    if graph.more:
        parts.append(f'<text class="more" x="4" y="{height - 6}">{escape(_more(graph.more, "edge"))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _edge_row(row: EdgeRow, y: int) -> str:
    classes = " ".join(["edge", *(["error"] if row.errors else []), *(["cited"] if row.citations else [])])
    p99 = _ms(row.p99_ms) if row.p99_ms is not None else "-"
    title = f"{row.caller} → {row.callee}: {row.calls} calls, {row.errors} errors, p99 {p99}"
    middle, tip = y + 9, ARROW_END
    parts = [f'<g class="{classes}"><title>{escape(title)}</title>']
    if row.citations:
        parts.append(f'<rect class="row-hl" x="0" y="{y}" width="{WIDTH}" height="{ROW}"/>')
    errors = f"✕ {row.errors}" if row.errors else "0"
    parts.append(
        f'<text class="label" x="{CALLER_END}" y="{y + 13}" text-anchor="end">'
        f"{escape(_cut(row.caller, CALLER_END - 4))}</text>"
        f'<line class="arrow" x1="{ARROW_START}" y1="{middle}" x2="{tip - 6}" y2="{middle}"/>'
        f'<polygon class="arrow" points="{tip - 7},{middle - 4} {tip},{middle} {tip - 7},{middle + 4}"/>'
        f'<text class="label" x="{CALLEE_START}" y="{y + 13}">{escape(_cut(row.callee, CALLS_END - 40 - CALLEE_START))}</text>'
        f'<text class="number" x="{CALLS_END}" y="{y + 13}" text-anchor="end">{row.calls}</text>'
        f'<text class="{"error-mark" if row.errors else "number"}" x="{ERRORS_END}" y="{y + 13}" text-anchor="end">'
        f"{errors}</text>"
        f'<text class="number" x="{P99_END}" y="{y + 13}" text-anchor="end">{escape(p99)}</text>'
    )
    parts.append(_cite_marks(row.citations, P99_END + 8, y + 13))
    parts.append("</g>")
    return "".join(parts)


def _cite_marks(numbers: list[int], x: int, y: int) -> str:
    marks = [
        f'<a href="#cite-{number}"><text class="cite-mark" x="{x + index * 24}" y="{y}">[{number}]</text></a>'
        for index, number in enumerate(numbers[:CITE_MARKS])
    ]
    if len(numbers) > CITE_MARKS:
        marks.append(f'<text class="cite-mark" x="{x + CITE_MARKS * 24}" y="{y}">+{len(numbers) - CITE_MARKS}</text>')
    return "".join(marks)


def _cut(text: str, width: float) -> str:
    """`text` on one line, cut with "…" to the characters that fit `width` pixels (controls counted as shown)."""
    line = " ".join(visible(text).split())
    fits = max(1, int(width / CHAR))
    return line if len(line) <= fits else line[: fits - 1] + "…"


def _ms(value: float) -> str:
    return f"{value:g} ms"


def _more(count: int, noun: str) -> str:
    return f"… and {count} more {noun}{'s' * (count != 1)} (not drawn)"
