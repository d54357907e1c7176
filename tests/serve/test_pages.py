"""The session list and a report page of a real `evcli serve`, opened in headless Chromium: no console
errors, no request to anything but the server itself."""

from __future__ import annotations

import json

import pytest

from tests.report.conftest import CHROMEDRIVER, CHROMIUM, browser  # noqa: F401  (the fixture)
from tests.report.test_html import _requests
from tests.serve.conftest import delivery

pytestmark = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
    reason="needs the Debian packages chromium and chromium-driver (/usr/bin/chromium, /usr/bin/chromedriver)",
)


def test_session_list_and_report_pages_load_cleanly_in_chromium(start_serve, browser):  # noqa: F811
    server = start_serve()
    payload = delivery({"alertname": "SSHBruteForce", "summary": '<script>alert("x")</script> & more'})
    assert server.request("/alerts", payload)[0] == 202
    server.wait_for(lambda: server.rows("SELECT id FROM alert_queue WHERE state = 'done'"), "the diagnosis")
    [row] = server.rows("SELECT session_id FROM alert_queue")
    for path in ("/", "/?verdict=PASS&q=SSH", f"/sessions/{row['session_id']}"):
        browser.get_log("browser"), browser.get_log("performance")  # drop what earlier pages logged
        browser.get(server.url + path)
        errors = [entry for entry in browser.get_log("browser") if entry["level"] in ("SEVERE", "ERROR")]
        assert errors == [], (path, errors)
        assert all(url.startswith(server.url) for url in _requests(browser)), path
        assert "SSHBruteForce" in browser.page_source
    browser.get(server.url + "/")
    link = browser.find_element("css selector", f'a[href="/sessions/{row["session_id"]}"]')
    link.click()
    assert browser.current_url == f"{server.url}/sessions/{row['session_id']}"
    assert json.loads(server.request(f"/sessions/{row['session_id']}.json")[1])["run"]["mode"] == "aiops"
