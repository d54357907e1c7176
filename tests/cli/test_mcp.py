"""`evcli mcp` (evcli/cli/mcp.py): the options refused before anything is served, the SDK imported by this
command alone. Serving is tested through the SDK's client in tests/mcp/."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.cli._util import assert_clean_error, evcli
from tests.conftest import SAMPLES


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--http", "--host", "0.0.0.0"], "--host 0.0.0.0 is reachable from other hosts: give --token-env NAME"),
        (["--token-env", "EVCLI_TEST_TOKEN"], "--host and --token-env go with --http"),
        (["--host", "10.0.0.1"], "--host and --token-env go with --http"),
        (["--http", "--token-env", "EVCLI_TEST_UNSET"], "--token-env EVCLI_TEST_UNSET: the variable is not set"),
        (["--env", "/nonexistent/env"], "no such environment directory: /nonexistent/env"),
        (["--http", "--port", "0"], "Invalid value for '--port'"),
    ],
)
def test_refused_before_serving_in_one_line(args, message, monkeypatch):
    monkeypatch.delenv("EVCLI_TEST_UNSET", raising=False)
    assert_clean_error(evcli("mcp", *args), 2, message)


def test_without_the_sdk_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` fails as if it were not installed
    monkeypatch.delitem(sys.modules, "evcli.mcp.server", raising=False)
    monkeypatch.delattr("evcli.mcp.server", raising=False)  # `from evcli.mcp import server` reads it first
    assert_clean_error(evcli("mcp"), 1, "evcli mcp needs the MCP SDK", "pip install 'evcli[mcp]'")


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["gate", str(SAMPLES / "narrow-payment-highcpu.json")],
        ["trace", str(SAMPLES / "broad-order-service.json")],
    ],
)
def test_other_commands_do_not_import_the_sdk(args, evcli_home):
    code = (
        "import sys, runpy; sys.argv = ['evcli'] + sys.argv[1:]\n"
        "try:\n    runpy.run_module('evcli', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('LOADED', sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')), file=sys.stderr)\n"
    )
    env = dict(os.environ, EVCLI_HOME=str(evcli_home))
    completed = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env)
    assert "LOADED []" in completed.stderr, completed.stderr
