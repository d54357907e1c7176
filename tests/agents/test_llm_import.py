"""litellm's first import (evcli/agents/llm.py `_litellm`): no cyclic collection during it, what it built frozen
after it, the collector on again; a caller that turned the collector off keeps it off and nothing is frozen."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CHECK = """
import gc, json, sys
if sys.argv[1] == "off":
    gc.disable()
from evcli.agents.llm import _litellm
_litellm()
print(json.dumps({"enabled": gc.isenabled(), "frozen": gc.get_freeze_count(), "imported": "litellm" in sys.modules}))
"""


@pytest.mark.parametrize(("collector", "enabled_after", "frozen"), [("on", True, True), ("off", False, False)])
def test_the_first_import_freezes_what_it_built_and_restores_the_collector(collector, enabled_after, frozen):
    completed = subprocess.run(
        [sys.executable, "-c", CHECK, collector], capture_output=True, text=True, check=True, timeout=120
    )

    state = json.loads(completed.stdout)
    assert state["imported"] and state["enabled"] is enabled_after
    assert (state["frozen"] > 100_000) is frozen  # litellm alone leaves ~0.5M tracked objects
