"""CLI tests read whole lines of Rich output: let the console width follow $COLUMNS.

The consoles are created at import time; if $COLUMNS happened to be set then,
Rich would have frozen that width. The runner sets COLUMNS=4000 per call.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _console_width_from_env(monkeypatch):
    from evcli.console import err, out

    for console in (out, err):
        monkeypatch.setattr(console, "_width", None, raising=False)
