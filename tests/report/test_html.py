"""The HTML report, opened in a real headless Chromium (the `browser` fixture of tests/report/conftest.py)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from evcli.report.model import report_model
from tests.conftest import sample
from tests.report.conftest import SAMPLES, load, needs_chromium
from tests.report.conftest import open_report as _open

pytestmark = needs_chromium


def _requests(browser) -> list[str]:
    messages = [json.loads(entry["message"])["message"] for entry in browser.get_log("performance")]
    return [m["params"]["request"]["url"] for m in messages if m["method"] == "Network.requestWillBeSent"]


def test_page_loads_with_no_console_error_and_no_request_but_itself(browser, hostile_session, tmp_path):
    uri = _open(browser, hostile_session, tmp_path)
    assert browser.title.startswith("evcli report")
    assert [entry for entry in browser.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")] == []
    assert _requests(browser) == [uri]


def test_clicking_a_citation_scrolls_to_and_highlights_its_evidence(browser, hostile_session, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    _open(browser, hostile_session, tmp_path)
    links = browser.find_elements(By.CSS_SELECTOR, "a.cite")
    assert len(links) >= 3
    last = links[-1]
    target = last.get_attribute("href").split("#", 1)[1]
    assert browser.execute_script("return window.scrollY") == 0
    last.click()
    # the page's script sets the class on the hash change: wait for it (a loaded machine runs it later)
    WebDriverWait(browser, 5).until(
        lambda page: (
            "highlight" in page.execute_script("return document.getElementById(arguments[0]).className", target)
        )
    )
    state = browser.execute_script(
        "var t = document.getElementById(arguments[0]); var box = t.getBoundingClientRect();"
        "return {target: document.querySelector(':target') && document.querySelector(':target').id,"
        " cls: t.className, focused: document.activeElement === t, top: box.top, height: innerHeight,"
        " scrolled: scrollY}",
        target,
    )
    assert state["target"] == target and "highlight" in state["cls"].split() and state["focused"]
    assert 0 <= state["top"] < state["height"] and state["scrolled"] > 0


def test_the_chart_has_one_point_per_series_sample_and_marks_the_cited_values(browser, hostile_session, tmp_path):
    from selenium.webdriver.common.by import By

    _open(browser, hostile_session, tmp_path)
    charts = browser.find_elements(By.CSS_SELECTOR, "svg.chart")
    assert len(charts) == 1
    samples = charts[0].find_elements(By.CSS_SELECTOR, "g.samples circle")
    assert len(samples) == SAMPLES and samples[0].size["width"] > 0  # drawn: the radius comes from the CSS
    assert len(charts[0].find_elements(By.CSS_SELECTOR, "circle.cited")) == 3  # min, max and last are cited


def test_a_hostile_log_line_stays_inert_text(browser, hostile_session, tmp_path):
    _open(browser, hostile_session, tmp_path)
    found = browser.execute_script(
        "return {scripts: document.scripts.length, injected: document.querySelectorAll('img, b, body style').length,"
        " styles: document.querySelectorAll('style').length, text: document.body.innerText}"
    )
    assert (found["scripts"], found["injected"], found["styles"]) == (1, 0, 1)
    assert '<script>alert("xss")</script>' in found["text"]
    assert '<img src=x onerror="alert(2)"> </style><b>bold</b>' in found["text"]
    # no alert() ran: a pending alert would make this call raise UnexpectedAlertPresentException
    assert browser.execute_script("return 1") == 1


def test_screenshot_of_the_demo_report(browser, demo_session, tmp_path):
    _open(browser, demo_session, tmp_path, "demo.html")
    assert _requests(browser) and [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
    artifacts = Path(os.environ.get("EVCLI_TEST_ARTIFACTS") or tmp_path)
    artifacts.mkdir(parents=True, exist_ok=True)
    shot = artifacts / "demo-report.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    shutil.copy(tmp_path / "demo.html", artifacts / "demo-report.html")


def test_a_matched_facts_value_is_marked_in_the_ref_text_titled_with_its_field(browser, tmp_path):
    _open(browser, sample("broad-order-service"), tmp_path)
    found = browser.execute_script(
        "var ref = document.getElementById('ev-1-1'); var fact = ref.querySelector('mark.fact');"
        "return {marks: Array.from(ref.querySelectorAll('pre > mark > mark.fact'), m => [m.title, m.textContent]),"
        " rows: Array.from(ref.querySelectorAll('table.facts tbody tr'), r => r.innerText.split('\\t')),"
        " line: getComputedStyle(fact).textDecorationLine, excerpt: ref.querySelector('pre > mark').textContent}"
    )
    assert found["marks"] == [
        ["$.alerts[0].state", "firing"],
        ["$.alerts[0].value", "91%"],
        ["$.alerts[0].duration", "18m"],
    ]
    assert found["rows"][1] == ["$.alerts[0].value", "91%", "91.0%", "ok"]
    assert found["line"] == "underline" and found["excerpt"].startswith("HighMemoryUsage, service=order-service")


def test_a_hostile_fact_stays_inert_text(browser, hostile_session, tmp_path):
    document = json.loads(hostile_session.read_text(encoding="utf-8"))
    cited = next(
        (c.claim_id, e.invocation_id, e.raw_path)
        for c in report_model(load(hostile_session)).citations
        for e in c.evidence
        if "<script>" in e.ref_text
    )
    hostile_field = '$.logs[1].message"><img src=x onerror="alert(4)">'
    for stored in document["gate_results"]:
        for binding in stored["result"]["checked_bindings"]:
            if (binding["claim_id"], binding["source_invocation_id"], binding["raw_path"]) == cited:
                binding["facts"] = [
                    {
                        "claim": "<script>alert(3)</script>",
                        "field": hostile_field,
                        "evidence": '<script>alert("xss")</script>',
                        "ok": True,
                    },
                    {"claim": "<b>bold</b>", "field": "$.logs[1].level", "evidence": "<b>x</b>", "ok": True},
                ]
    session = tmp_path / "hostile-facts.json"
    session.write_text(json.dumps(document), encoding="utf-8")

    _open(browser, session, tmp_path)
    found = browser.execute_script(
        "return {scripts: document.scripts.length, injected: document.querySelectorAll('img, b, body style').length,"
        " marks: Array.from(document.querySelectorAll('mark.fact'), m => [m.title, m.textContent]),"
        " text: document.body.innerText}"
    )
    assert (found["scripts"], found["injected"]) == (1, 0)
    assert [hostile_field, '<script>alert("xss")</script>'] in found["marks"]
    assert "<script>alert(3)</script>" in found["text"] and "<b>bold</b>" in found["text"]
    assert browser.execute_script("return 1") == 1  # no alert() ran
