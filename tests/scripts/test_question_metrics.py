"""scripts/question_metrics.py: the issue-24 numbers, run as a process on a made-up package whose
counts are known, and on the real tree."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from scripts.question_metrics import count_alternatives
from tests.conftest import REPO

SCRIPT = REPO / "scripts" / "question_metrics.py"

# A made-up evcli: one question-understanding file with one regex of 3 alternatives (used twice,
# counted once), a word table, two branches and a cap; a circle between evcli/scope/reader.py and
# evcli/text.py whose back edge sits in a function (the scope folder imports text twice, text
# imports scope once: text is the lower layer and its import is the upward arrow); a circle through
# a package __init__ (agents/__init__ -> run -> agents, named in run's from-clause); an import for
# type checkers only (no edge); two files being written (one of them imported); and a grammar data file.
MADE_UP = {
    "evcli/__init__.py": "",
    "evcli/text.py": (
        "def fold(text):\n"
        "    from evcli.scope.reader import WORDS\n"
        "\n"
        "    return [word for word in text.split() if word in WORDS]\n"
    ),
    "evcli/scope/__init__.py": "from evcli.text import fold\n",
    "evcli/scope/reader.py": (
        "import re\n"
        "\n"
        "from evcli.text import fold\n"
        "\n"
        'WORDS = frozenset({"when", "how", "why"})\n'
        "MAX_WORDS = 12\n"
        'KIND = re.compile(r"\\b(?:when|how many|why)\\b")\n'
        "\n"
        "\n"
        "def kind(text):\n"
        '    if fold(text) and re.search(r"\\b(?:when|how many|why)\\b", text):\n'
        '        return "cue"\n'
        "    return None\n"
    ),
    "evcli/scope/broken.py": "def half_written(\n",
    "evcli/scope/grammar/en.toml": '[[kinds]]\nname = "count"\nen = ["how many", "count of"]\n',
    "evcli/agents/__init__.py": "from evcli.agents.run import go\n",
    "evcli/draft.py": "WORDS = (\n",
    "evcli/agents/run.py": "from evcli import draft\nfrom evcli.agents import tables\n\n\ndef go():\n    return tables\n",
    "evcli/agents/tables.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from evcli.text import fold\n",
}


def run_script(root: Path, *options: str) -> str:
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(root), *options],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def made_up_tree(tmp_path: Path) -> Path:
    for rel, text in MADE_UP.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return tmp_path


def test_counts_of_a_made_up_package(tmp_path):
    result = json.loads(run_script(made_up_tree(tmp_path)))
    understanding = result["question_understanding"]
    assert understanding["files"]["evcli/scope/reader.py"] == {
        "lines": 13,
        "regexes": 1,
        "dynamic_regexes": 0,
        "alternatives": 3,
        "word_tables": 1,
        "table_words": 3,
        "branches": 2,
        "caps": 1,
    }
    assert set(understanding["files"]) == {"evcli/scope/__init__.py", "evcli/scope/reader.py"}
    assert understanding["data"] == {"evcli/scope/grammar/en.toml": {"lines": 3, "rows": 1, "words": 2}}
    assert [note.split(":")[0] for note in result["skipped"]] == ["evcli/draft.py", "evcli/scope/broken.py"]

    imports = result["imports"]
    assert imports["file_circles"] == {
        "count": 2,
        "module_level_count": 1,
        "circles": [
            ["evcli/agents/__init__.py", "evcli/agents/run.py"],
            ["evcli/scope/reader.py", "evcli/text.py"],
        ],
    }
    assert imports["graph"]["evcli/text.py"] == {"module_level": [], "in_functions": ["evcli/scope/reader.py"]}
    assert imports["graph"]["evcli/agents/tables.py"] == {"module_level": [], "in_functions": []}
    assert imports["folder_circles"] == {"count": 1, "circles": [["evcli/scope/", "evcli/text.py"]]}
    assert imports["layers"].index("evcli/text.py") < imports["layers"].index("evcli/scope/")
    assert imports["upward_arrows"] == {
        "count": 1,
        "arrows": [{"from": "evcli/text.py", "to": "evcli/scope/reader.py", "in_function": True}],
    }


def test_text_table_names_the_upward_arrow(tmp_path):
    table = run_script(made_up_tree(tmp_path), "--text")
    assert "upward arrows: 1\n  evcli/text.py -> evcli/scope/reader.py (inside a function)" in table
    assert "skipped evcli/scope/broken.py: SyntaxError" in table


def test_alternatives_outside_classes_and_escapes():
    assert count_alternatives(r"a|b\|c|[|]|[]|]|(?:d|e)") == 6


def test_runs_on_the_real_tree():
    result = json.loads(run_script(REPO))
    assert set(result) == {"root", "question_understanding", "imports", "skipped"}
    assert set(result["question_understanding"]) == {"files", "total", "data", "data_total"}
    assert set(result["imports"]) == {
        "files",
        "edges",
        "unresolved",
        "dynamic",
        "file_circles",
        "folder_circles",
        "layers",
        "upward_arrows",
        "graph",
    }
    assert result["question_understanding"]["total"]["regexes"] > 0
    assert "evcli/scope/__init__.py" in result["question_understanding"]["files"]
    assert "evcli/__init__.py" in result["imports"]["graph"]
