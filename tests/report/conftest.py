"""Sessions to report on, made by the real chain (offline engine) on real snapshot environments.

`hostile_session`: an environment whose cited log lines hold `<script>`, an `onerror` attribute,
`</style>`, backticks, `|` and `[1]`, and a metric series with 31 samples.
`demo_session`: the packaged demo environment's payment-service question.
`control_export`: the demo environment with an order-service error line holding terminal controls
(CONTROL_LINE: CSI, OSC title and OSC 8 link, a C1 CSI, a bidi override), cited by the answer.
Each is an exported session file (module-scoped fixtures: the chain runs once per test module).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evcli.contracts import SessionDocument
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
