"""Sessions to report on, made by the real chain (offline engine) on real snapshot environments.

`hostile_session`: an environment whose cited log lines hold `<script>`, an `onerror` attribute,
`</style>`, backticks, `|` and `[1]`, and a metric series with 31 samples.
`demo_session`: the packaged demo environment's payment-service question.
`control_export`: the demo environment with an order-service error line holding terminal controls
(CONTROL_LINE: CSI, OSC title and OSC 8 link, a C1 CSI, a bidi override), cited by the answer.
Each is an exported session file (module-scoped fixtures: the chain runs once per test module).
`browser`: a real headless Chromium (Debian `chromium` + `chromium-driver`); selenium drives
/usr/bin/chromedriver directly (Service(executable_path=...)), so selenium-manager never downloads a
browser or a driver. Tests that use it are marked `needs_chromium`: skipped only when Chromium is
not installed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evcli.contracts import SessionDocument
from evcli.report import render
from tests.cli._util import evcli

HOSTILE_LINES = [
    "2026-05-01T10:00:01Z INFO started web",
    '2026-05-01T10:05:00Z ERROR upload failed for name=<script>alert("xss")</script> in "quotes" & amp',
    '2026-05-01T10:06:00Z ERROR bad file <img src=x onerror="alert(2)"> </style><b>bold</b> `tick` | pipe [1]',
    "2026-05-01T10:07:00Z WARN retrying upload",
]
SAMPLES = 31
CONTROL_LINE = (
    "2026-07-08 23:09:48.003 ERROR [order-service-5c8d7f9b-qm4tz] c.e.order.api.OrderController - status=503 "
    "\x1b[2J\x1b]0;PWNED\x07 \x1b]8;;https://attacker.example\x1b\\click\x1b]8;;\x1b\\ \x9b2J \u202eevil\u202c\n"
)
# What no report, export or terminal output may carry raw: ESC, BEL, C1 CSI, bidi overrides.
RAW_CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e", "\u202c")


def _hostile_env(root: Path) -> Path:
    (root / "logs").mkdir(parents=True)
    (root / "metrics").mkdir()
    (root / "env.toml").write_text('name = "hostile"\ntimezone = "UTC"\nnow = "2026-05-01T10:30:00Z"\n')
    (root / "logs" / "web.log").write_text("\n".join(HOSTILE_LINES) + "\n")
    rows = [f"2026-05-01T10:{i:02d}:00Z,{40 + i * 1.5:.1f}" for i in range(SAMPLES)]
    (root / "metrics" / "web.csv").write_text("timestamp,cpu_usage (%)\n" + "\n".join(rows) + "\n")
    return root


def _exported(root: Path, *ask_args: str) -> Path:
    db, exported = root / "evcli.db", root / "session.json"
    run = evcli("ask", *ask_args, "--db", db, "--json")
    assert run.exit_code == 0, run
    assert evcli("export", run.json()["session_id"], "-o", exported, "--db", db).exit_code == 0
    return exported


def hostile_export(tmp_path_factory) -> Path:
    """A hostile session exported to a file (also used by tests/cli/test_report.py)."""
    root = tmp_path_factory.mktemp("hostile")
    env = _hostile_env(root / "env")
    return _exported(root, "why is web failing? check cpu metrics and error logs", "--env", str(env))


def control_export(tmp_path_factory) -> Path:
    """A session of the demo environment whose cited order-service error line is CONTROL_LINE, exported."""
    from evcli.backends.snapshot import demo_env_dir

    root = tmp_path_factory.mktemp("control")
    env = root / "env"
    shutil.copytree(demo_env_dir(), env)
    with (env / "logs" / "order-service.log").open("a", encoding="utf-8") as log:
        log.write(CONTROL_LINE)
    exported = _exported(root, "why is order-service failing?", "--env", str(env))
    assert "PWNED" in exported.read_text(encoding="utf-8"), "the control line is not in the session"
    return exported


@pytest.fixture(scope="module")
def hostile_session(tmp_path_factory) -> Path:
    return hostile_export(tmp_path_factory)


@pytest.fixture(scope="module")
def demo_session(tmp_path_factory) -> Path:
    return _exported(tmp_path_factory.mktemp("demo"), "why is payment-service CPU high?")


def load(path: Path) -> SessionDocument:
    return SessionDocument.model_validate_json(path.read_text(encoding="utf-8"))


def with_answer(document: SessionDocument, answer: str) -> SessionDocument:
    """A copy of `document` whose composed answer is `answer` (its citations stay those of the session)."""
    changed = document.model_copy(deep=True)
    compose = changed.latest_stage("compose")
    assert compose is not None and compose.output is not None, "the session has no composed answer"
    compose.output["user_facing_answer"] = answer
    return changed


CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
needs_chromium = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
    reason="needs the Debian packages chromium and chromium-driver (/usr/bin/chromium, /usr/bin/chromedriver)",
)


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1000,700",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    yield driver
    driver.quit()


def open_report(browser, session: Path | SessionDocument, tmp_path: Path, name: str = "report.html") -> str:
    """Open the HTML report of `session` (a session file or document) in `browser`; its file URI."""
    page = tmp_path / name
    page.write_text(render(load(session) if isinstance(session, Path) else session, "html"), encoding="utf-8")
    browser.get_log("browser"), browser.get_log("performance")  # drop what earlier pages logged
    browser.get(page.as_uri())
    return page.as_uri()
