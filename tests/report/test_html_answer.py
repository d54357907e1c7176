"""The HTML report's answer (headings, lists, code) and its charts (axes, ticks, units), checked in the
page a real headless Chromium renders (the `browser` fixture of tests/report/conftest.py)."""

from __future__ import annotations

from datetime import datetime

import pytest

from evcli.report.cited import SeriesChart
from evcli.report.svg import chart_svg, value_ticks
from tests.report.conftest import load, needs_chromium, with_answer
from tests.report.conftest import open_report as _open

ANSWER = (
    "## Summary\n"
    "The pool is exhausted [1] and `-Xmx` is **small**; see *below* [99].\n"
    "Quoted: <script>alert(5)</script> <img src=x onerror=alert(6)>\n"
    "Findings:\n- first [2]\n- second `<b>x</b>`\n"
    "3. third\n4. fourth\n"
    "```sh\nkubectl get pods\n<script>alert(7)</script>\n```"
)


@needs_chromium
def test_the_answer_is_headings_lists_and_code_and_stays_inert(browser, hostile_session, tmp_path):
    _open(browser, with_answer(load(hostile_session), ANSWER), tmp_path)
    found = browser.execute_script(
        "var answer = document.querySelector('#answer .answer');"
        "return {blocks: Array.from(answer.children, e => [e.tagName, e.textContent]),"
        " items: Array.from(answer.querySelectorAll('ul > li'), e => e.textContent),"
        " ordered: Array.from(answer.querySelectorAll('ol > li'), e => e.textContent),"
        " start: answer.querySelector('ol').start,"
        " code: Array.from(answer.querySelectorAll('p code, li code'), e => e.textContent),"
        " block: answer.querySelector('pre > code').textContent,"
        " language: answer.querySelector('pre > code').className,"
        " strong: answer.querySelector('strong').textContent, em: answer.querySelector('em').textContent,"
        " cites: Array.from(answer.querySelectorAll('a.cite'), e => [e.textContent, e.getAttribute('href')]),"
        " lines: answer.querySelector('p').innerText.split('\\n'),"
        " scripts: document.scripts.length, injected: document.querySelectorAll('img, #answer b').length,"
        " whiteSpace: getComputedStyle(answer).whiteSpace}"
    )
    assert [tag for tag, _ in found["blocks"]] == ["H4", "P", "H3", "UL", "OL", "PRE"]
    assert found["blocks"][0][1] == "Summary" and found["blocks"][2][1] == "Findings:"
    assert found["items"] == ["first [2]", "second <b>x</b>"]
    assert found["ordered"] == ["third", "fourth"] and found["start"] == 3
    assert found["code"] == ["-Xmx", "<b>x</b>"]
    assert found["block"] == "kubectl get pods\n<script>alert(7)</script>" and found["language"] == "language-sh"
    assert (found["strong"], found["em"]) == ("small", "below")
    assert found["cites"] == [["[1]", "#cite-1"], ["[2]", "#cite-2"]]  # [99] cites nothing: text
    assert found["lines"] == [
        "The pool is exhausted [1] and -Xmx is small; see below [99].",
        "Quoted: <script>alert(5)</script> <img src=x onerror=alert(6)>",
    ]
    assert (found["scripts"], found["injected"], found["whiteSpace"]) == (1, 0, "normal")
    assert browser.execute_script("return 1") == 1  # no alert() ran: a pending alert would raise here
    assert [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"] == []


@needs_chromium
def test_the_chart_has_time_and_value_axes_with_the_unit(browser, hostile_session, tmp_path):
    """The hostile series: 31 samples, one a minute from 10:00 to 10:30 UTC, 40% rising by 1.5 to 85%."""
    _open(browser, hostile_session, tmp_path)
    found = browser.execute_script(
        "var chart = document.querySelector('svg.chart'); var box = chart.viewBox.baseVal;"
        "function labels(axis) { return Array.from(chart.querySelectorAll(axis + ' text.tick-label'), t => {"
        "  var b = t.getBBox(); return [t.textContent, b.x + b.width / 2, b.y + b.height / 2, b.x, b.x + b.width]; }) }"
        "function centre(c) { return [c.cx.baseVal.value, c.cy.baseVal.value] }"
        "var circles = chart.querySelectorAll('g.samples circle');"
        "return {x: labels('g.x-axis'), y: labels('g.y-axis'),"
        " xTitle: chart.querySelector('g.x-axis text.axis-label').textContent,"
        " yTitle: chart.querySelector('g.y-axis text.axis-label').textContent,"
        " yTicks: Array.from(chart.querySelectorAll('g.y-axis line.tick'), l => l.y1.baseVal.value),"
        " xTicks: Array.from(chart.querySelectorAll('g.x-axis line.tick'), l => l.x1.baseVal.value),"
        " first: centre(circles[0]), last: centre(circles[circles.length - 1]),"
        " texts: Array.from(chart.querySelectorAll('text'), t => { var b = t.getBBox();"
        "  return [b.x, b.y, b.x + b.width, b.y + b.height, b.width] }),"
        " box: [box.width, box.height], axisLeft: chart.querySelector('g.y-axis line.axis').x1.baseVal.value}"
    )
    assert [label[0] for label in found["x"]] == ["10:00", "10:05", "10:10", "10:15", "10:20", "10:25", "10:30"]
    assert [label[0] for label in found["y"]] == ["40", "50", "60", "70", "80", "90"]
    assert found["xTitle"] == "time (UTC), 2026-05-01" and found["yTitle"] == "%"
    x_ticks, y_ticks = found["xTicks"], found["yTicks"]
    assert all(abs(label[1] - tick) < 1 for label, tick in zip(found["x"], x_ticks, strict=True))  # under its tick
    gaps = [b - a for a, b in zip(x_ticks, x_ticks[1:], strict=False)]
    assert min(gaps) > 30 and max(gaps) - min(gaps) < 0.5  # evenly spaced, room for "10:00"
    assert all(abs(label[2] - tick) < 2 for label, tick in zip(found["y"], y_ticks, strict=True))  # beside its tick
    assert all(label[4] <= found["axisLeft"] for label in found["y"])  # left of the axis
    # the first sample (10:00, 40%) sits on the 10:00 and 40 ticks; the last (10:30, 85%) on 10:30, half-way 80..90
    assert abs(found["first"][0] - x_ticks[0]) < 0.1 and abs(found["first"][1] - y_ticks[0]) < 0.1
    assert abs(found["last"][0] - x_ticks[-1]) < 0.1 and abs(found["last"][1] - (y_ticks[4] + y_ticks[5]) / 2) < 0.1
    width, height = found["box"]
    boxes = found["texts"]
    assert all(w > 0 and x0 >= 0 and y0 >= 0 and x1 <= width and y1 <= height for x0, y0, x1, y1, w in boxes)
    overlapping = [
        (a, b)
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
    ]
    assert overlapping == []  # every label readable: inside the chart, none on another


def _chart(start: str, end: str, values: list[float], unit: str = "") -> SeriesChart:
    first, last = (datetime.fromisoformat(moment).timestamp() for moment in (start, end))
    step = (last - first) / (len(values) - 1)
    return SeriesChart(
        service="s",
        metric="m",
        unit=unit,
        start=start,
        end=end,
        samples=[(first + index * step, value) for index, value in enumerate(values)],
    )


def test_time_ticks_are_on_the_incidents_clock_and_dates_show_across_days():
    shanghai = chart_svg(_chart("2026-05-01T18:00:00+08:00", "2026-05-01T20:00:00+08:00", [1, 2, 3], "ms"))
    assert (
        ">18:00</text>" in shanghai
        and ">20:00</text>" in shanghai
        and ">time (UTC+08:00), 2026-05-01</text>" in shanghai
    )
    assert ">ms</text>" in shanghai
    days = chart_svg(_chart("2026-05-01T00:00:00+00:00", "2026-05-04T00:00:00+00:00", [5, 6]))
    assert ">05-01 12:00</text>" in days or ">05-02</text>" in days
    assert ">value</text>" in days  # a series without a unit says so


@pytest.mark.parametrize(
    "low, high, ticks",
    [
        (40, 85, [40, 50, 60, 70, 80, 90]),
        (0.6, 3.8, [0, 1, 2, 3, 4]),
        (0.001, 0.0043, [0.001, 0.002, 0.003, 0.004, 0.005]),
        (-3, 12, [-5, 0, 5, 10, 15]),
        (0, 0, [-1, -0.5, 0, 0.5, 1]),
    ],
)
def test_value_ticks_are_round_and_cover_the_values(low, high, ticks):
    assert value_ticks(low, high) == ticks
