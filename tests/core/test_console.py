"""The console on a real terminal (a pseudo-terminal): long output pages through $PAGER unless
--no-pager or it fits, NO_COLOR turns colour off, and `ask`'s progress is a transient status line."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

import pytest

from tests.conftest import SAMPLES

EXTRA_IDS = 30  # more sessions than the 24-line screen below


def run_in_terminal(args, env, rows=24, cols=100, timeout=60):
    """Run `python -m evcli ARGS` with stdout and stderr on a pty of rows x cols; (exit code, what it showed)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    clean = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES", "NO_COLOR", "PAGER")}
    process = subprocess.Popen(
        [sys.executable, "-m", "evcli", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**clean, "TERM": "xterm-256color", **env},
        close_fds=True,
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the pty closes when the process and its children exit
            break
        if not chunk:
            break
        shown += chunk
    code = process.wait(timeout=timeout)
    os.close(leader)
    return code, shown.decode("utf-8", "replace")


@pytest.fixture
def busy_store(tmp_path):
    from tests.cli._util import import_sample
    from tests.conftest import sample

    db = tmp_path / "busy.db"
    for index in range(EXTRA_IDS):
        import_sample(sample("narrow-payment-highcpu"), db, "--new-id", f"s{index:02d}")
    return db


def test_long_output_goes_through_the_pager_on_a_terminal(busy_store, tmp_path, evcli_home):
    paged = tmp_path / "paged.txt"
    env = {"EVCLI_HOME": str(evcli_home), "PAGER": f"cat > {paged}"}
    code, shown = run_in_terminal(["sessions", "--db", str(busy_store), "-n", "40"], env)
    assert code == 0, shown
    text = paged.read_text()
    assert all(f"s{index:02d}" in text for index in range(EXTRA_IDS))
    assert "s00" not in shown  # all of it went to the pager, nothing to the screen


def test_no_pager_short_output_and_pipes_print_directly(busy_store, tmp_path, evcli_home):
    paged = tmp_path / "paged.txt"
    env = {"EVCLI_HOME": str(evcli_home), "PAGER": f"cat > {paged}"}
    code, shown = run_in_terminal(["sessions", "--db", str(busy_store), "-n", "40", "--no-pager"], env)
    assert code == 0 and "s29" in shown and "s00" in shown
    code, shown = run_in_terminal(["sessions", "--db", str(busy_store), "-n", "5"], env)
    assert code == 0 and "s29" in shown  # fits the screen
    assert not paged.exists()
    piped = subprocess.run(
        [sys.executable, "-m", "evcli", "sessions", "--db", str(busy_store), "-n", "40"],
        capture_output=True,
        text=True,
        env={**os.environ, "PAGER": f"cat > {paged}"},
    )
    assert "s00" in piped.stdout and not paged.exists()


def test_no_color_is_respected(evcli_home):
    sample_file = str(SAMPLES / "narrow-payment-highcpu.json")
    code, coloured = run_in_terminal(["trace", sample_file], {"EVCLI_HOME": str(evcli_home)})
    assert code == 0 and "\x1b[3" in coloured  # a colour (30-39) is set on a terminal
    code, plain = run_in_terminal(["trace", sample_file], {"EVCLI_HOME": str(evcli_home), "NO_COLOR": "1"})
    assert code == 0 and "sample-narrow-payment-highcpu" in plain
    assert "\x1b[3" not in plain and "\x1b[9" not in plain and "\x1b[38" not in plain


def test_ask_progress_is_a_transient_status_line_on_a_terminal(evcli_home):
    question = "Is payment-service CPU high?"
    env = {"EVCLI_HOME": str(evcli_home), "NO_COLOR": "1"}
    code, shown = run_in_terminal(["ask", question], env)
    assert code == 0, shown
    assert "verdict PASS" in shown
    assert "planner …\r" in shown and "\x1b[2K" in shown  # the status line shows a stage, then is cleared
    assert "· planner" not in shown  # no stage lines left behind
    code, verbose = run_in_terminal(["ask", question, "-v"], env)
    assert code == 0 and " planner …\r\n" in verbose and " composer done" in verbose


def test_ask_quiet_prints_only_the_answer(evcli_home):
    env = {**os.environ, "EVCLI_HOME": str(evcli_home)}
    question = "Is payment-service CPU high?"
    quiet = subprocess.run(
        [sys.executable, "-m", "evcli", "ask", question, "--quiet"], capture_output=True, text=True, env=env
    )
    full = subprocess.run([sys.executable, "-m", "evcli", "ask", question], capture_output=True, text=True, env=env)
    assert quiet.returncode == full.returncode == 0
    assert quiet.stderr == ""
    assert quiet.stdout.strip() and full.stdout.startswith(quiet.stdout.rstrip("\n"))
    assert "verdict" not in quiet.stdout and "Evidence" not in quiet.stdout
    assert "verdict PASS" in full.stdout
