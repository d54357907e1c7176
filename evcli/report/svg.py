"""A small inline SVG chart of one cited metric series, with axes.

One `<circle>` in `<g class="samples">` per recorded sample (a line joins them in time order) and one
`<circle class="cited">` per value the citation names (min, max or last, at the time it occurred).
Without recorded samples (sessions from before issue 13) only the cited values are drawn.
Axes: `<g class="x-axis">` has a tick and a `<text class="tick-label">` per time tick, at round
steps (1 s … 7 days) on the incident's clock (the zone of the chart's range; UTC when it has none),
and its axis label names the zone; `<g class="y-axis">` has a tick, a grid line and a label per value
tick (1, 2, 2.5 or 5 × 10ⁿ, the value range widened to whole steps) and its axis label is the unit
("value" when the series has none). Every text is escaped; the SVG loads nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from html import escape

from evcli.report.cited import SeriesChart

WIDTH, HEIGHT = 480, 170
LEFT, RIGHT, TOP, BOTTOM = 46, 24, 20, 34  # room for the tick labels and the axis labels
TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800)
TIME_TICKS, VALUE_TICKS = 6, 6  # at most this many time ticks; about this many value ticks


def chart_svg(chart: SeriesChart) -> str:
    points = chart.samples
    marks = [(label, _seconds(time), value) for label, time, value in chart.marked]
    xs = [x for x, _ in points] + [x for _, x, _ in marks] + [_seconds(t) for t in (chart.start, chart.end) if t]
    ys = [y for _, y in points] + [y for _, _, y in marks]
    if not xs or not ys:
        return ""
    values = value_ticks(min(ys), max(ys))
    scale_x = _scale(min(xs), max(xs), LEFT, WIDTH - RIGHT)
    scale_y = _scale(values[0], values[-1], HEIGHT - BOTTOM, TOP)
    title = f"{chart.service} {chart.metric}" + (f" ({chart.unit})" if chart.unit else "")
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" data-samples="{len(points)}">',
        f"<title>{escape(title)}: {len(points)} samples</title>",
        _y_axis(values, scale_y, chart.unit),
        _x_axis(min(xs), max(xs), scale_x, _zone(chart)),
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


def value_ticks(low: float, high: float, count: int = VALUE_TICKS) -> list[float]:
    """Round values from a whole step at or below `low` to one at or above `high`, about `count` of them."""
    if high == low:
        low, high = low - (abs(low) / 10 or 1), high + (abs(high) / 10 or 1)
    wanted = (high - low) / (count - 1)
    magnitude = 10 ** math.floor(math.log10(wanted))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= wanted)
    first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    return [round(n * step, 12) for n in range(first, last + 1)]


def time_ticks(start: float, end: float, zone: tzinfo, count: int = TIME_TICKS) -> tuple[list[float], int]:
    """Times (unix seconds) at a round step in `zone` from `start` to `end`, at most `count` + 1 of them, and the step."""
    if end <= start:
        return [start], TIME_STEPS[0]
    step = next((s for s in TIME_STEPS if (end - start) / s <= count), TIME_STEPS[-1])
    offset = _offset(start, zone)
    first = math.ceil((start + offset) / step) * step - offset
    return [first + n * step for n in range(int((end - first) // step) + 1)], step


def time_label(moment: float, step: int, zone: tzinfo, same_day: bool) -> str:
    shown = datetime.fromtimestamp(moment, zone)
    if step >= 86400:
        return shown.strftime("%m-%d")
    clock = shown.strftime("%H:%M:%S" if step < 60 else "%H:%M")
    return clock if same_day else shown.strftime("%m-%d ") + clock


def _x_axis(start: float, end: float, scale: Callable[[float], float], zone: tzinfo) -> str:
    bottom = HEIGHT - BOTTOM
    ticks, step = time_ticks(start, end, zone)
    same_day = len({datetime.fromtimestamp(t, zone).date() for t in (start, end)}) == 1
    parts = [f'<g class="x-axis"><line class="axis" x1="{LEFT}" y1="{bottom}" x2="{WIDTH - RIGHT}" y2="{bottom}"/>']
    for tick in ticks:
        x = scale(tick)
        parts.append(
            f'<line class="tick" x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 4}"/>'
            f'<text class="tick-label" x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">'
            f"{escape(time_label(tick, step, zone, same_day))}</text>"
        )
    day = datetime.fromtimestamp(start, zone).strftime("%Y-%m-%d")
    parts.append(
        f'<text class="axis-label" x="{(LEFT + WIDTH - RIGHT) / 2:.1f}" y="{HEIGHT - 4}" text-anchor="middle">'
        f"{escape(f'time ({_zone_name(zone, start)}), {day}')}</text></g>"
    )
    return "".join(parts)


def _y_axis(values: list[float], scale: Callable[[float], float], unit: str) -> str:
    parts = [f'<g class="y-axis"><line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}"/>']
    for value in values:
        y = scale(value)
        parts.append(
            f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}"/>'
            f'<line class="tick" x1="{LEFT - 4}" y1="{y:.1f}" x2="{LEFT}" y2="{y:.1f}"/>'
            f'<text class="tick-label" x="{LEFT - 6}" y="{y + 3:.1f}" text-anchor="end">{escape(_number(value))}</text>'
        )
    parts.append(f'<text class="axis-label" x="4" y="{TOP - 8}">{escape(unit or "value")}</text></g>')
    return "".join(parts)


def _zone(chart: SeriesChart) -> tzinfo:
    """The zone the chart's range was written in (the incident's clock), else UTC."""
    for text in (chart.start, chart.end):
        zone = datetime.fromisoformat(text.replace("Z", "+00:00")).tzinfo if text else None
        if zone is not None:
            return zone
    return UTC


def _offset(moment: float, zone: tzinfo) -> float:
    return (datetime.fromtimestamp(moment, zone).utcoffset() or timedelta()).total_seconds()


def _zone_name(zone: tzinfo, moment: float) -> str:
    offset = _offset(moment, zone)
    if offset == 0:
        return "UTC"
    sign, minutes = "+" if offset > 0 else "-", int(abs(offset)) // 60
    return f"UTC{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def _seconds(text: str | None) -> float:
    return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()


def _scale(low: float, high: float, out_low: float, out_high: float) -> Callable[[float], float]:
    span = (high - low) or 1.0
    middle = (out_low + out_high) / 2
    if high == low:
        return lambda value: middle
    return lambda value: out_low + (value - low) / span * (out_high - out_low)


def _number(value: float) -> str:
    return f"{value:g}"
