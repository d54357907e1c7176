"""A small inline SVG chart of one cited metric series.

One `<circle>` in `<g class="samples">` per recorded sample (a line joins them in time order) and one
`<circle class="cited">` per value the citation names (min, max or last, at the time it
occurred). Without recorded samples (sessions from before issue 13) only the cited values are
drawn. Every text is escaped; the SVG loads nothing.
"""

from __future__ import annotations

from datetime import datetime
from html import escape

from evcli.report.model import SeriesChart

WIDTH, HEIGHT, PAD = 480, 120, 8


def chart_svg(chart: SeriesChart) -> str:
    points = chart.samples
    marks = [(label, _seconds(time), value) for label, time, value in chart.marked]
    xs = [x for x, _ in points] + [x for _, x, _ in marks] + [_seconds(t) for t in (chart.start, chart.end) if t]
    ys = [y for _, y in points] + [y for _, _, y in marks]
    if not xs or not ys:
        return ""
    scale_x = _scale(min(xs), max(xs), PAD, WIDTH - PAD)
    scale_y = _scale(min(ys), max(ys), HEIGHT - PAD, PAD)
    title = f"{chart.service} {chart.metric}" + (f" ({chart.unit})" if chart.unit else "")
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" data-samples="{len(points)}">',
        f"<title>{escape(title)}: {len(points)} samples</title>",
        f'<line class="axis" x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}"/>',
    ]
    if len(points) > 1:
        path = " ".join(f"{scale_x(x):.1f},{scale_y(y):.1f}" for x, y in points)
        parts.append(f'<polyline class="line" points="{path}"/>')
    # one bare circle per sample (radius and colour come from the report's CSS: 1,000 samples stay small)
    parts.append('<g class="samples">')
    parts += [f'<circle cx="{scale_x(x):.1f}" cy="{scale_y(y):.1f}"/>' for x, y in points]
    parts.append("</g>")
    parts += [
        f'<circle class="cited" cx="{scale_x(x):.1f}" cy="{scale_y(y):.1f}" r="4">'
        f"<title>{escape(label)}={escape(_number(y))}{escape(chart.unit)}</title></circle>"
        for label, x, y in marks
    ]
    parts.append("</svg>")
    return "".join(parts)


def _seconds(text: str | None) -> float:
    return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()


def _scale(low: float, high: float, out_low: float, out_high: float):
    span = (high - low) or 1.0
    middle = (out_low + out_high) / 2
    if high == low:
        return lambda value: middle
    return lambda value: out_low + (value - low) / span * (out_high - out_low)


def _number(value: float) -> str:
    return f"{value:g}"
