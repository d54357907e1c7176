"""evcli.scope.glossary: Chinese operations words and English idioms → the English words logs use.

The entries are data (evcli/scope/grammar/<language>.toml); `read_with` reads a question in a fresh
process whose packaged grammar is the packaged files plus one more language file, so a test shows that a file
alone changes the reading.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from evcli.scope.glossary import translate
from evcli.scope.grammar import GRAMMAR_DIR, tables
from tests.scope._env import scope_of

# a third language: one file, no code
GERMAN = """
[word.gloss.zeitueberschreitung]
phrases = ["Zeitüberschreitung", "Zeitüberschreitungen"]

[word.glossary]
zeitueberschreitung = ["timeout", "timed out"]
"""


def run_with(tmp_path: Path, name: str, text: str, code: str) -> subprocess.CompletedProcess[str]:
    """`code` run in a fresh process whose packaged grammar is a copy of the packaged files plus the file `name`
    (the readers read the packaged grammar only: the process points it at the copy before anything is read)."""
    grammar_dir = tmp_path / "grammar"
    shutil.copytree(GRAMMAR_DIR, grammar_dir, ignore=shutil.ignore_patterns("__pycache__"))
    (grammar_dir / name).write_text(text, encoding="utf-8")
    script = f"import pathlib, evcli.scope.grammar as g\ng.GRAMMAR_DIR = pathlib.Path({str(grammar_dir)!r})\n{code}"
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)


def read_with(tmp_path: Path, name: str, text: str, code: str) -> Any:
    """What `code` prints as JSON when run by `run_with`."""
    done = run_with(tmp_path, name, text, code)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_longest_key_wins_and_nothing_overlaps():
    assert translate("连接池满了，连接断开") == [
        (0, 3, ("pool",)),
        (6, 8, ("connection",)),
        (8, 10, ("disconnect", "reset")),
    ]


def test_english_idioms_made_of_stop_words():
    assert translate("requests time out")[0][2] == ("timeout", "timed out")
    assert translate("is it crash looping?")[0][2] == ("restart", "CrashLoopBackOff", "crash")


def test_chinese_question_terms_come_from_the_glossary():
    assert scope_of("登录失败和超时").terms == ["authentication failure", "Failed password", "timeout", "timed out"]


def test_the_glossary_stays_small():
    assert 30 <= len(tables("word")["zh"]["glossary"]) <= 60


def test_login_outcomes_as_on_call_engineers_write_them():
    """ "successful login" is logged "Accepted …" (sshd) or "session opened" (pam), never as the words asked."""
    for question in ("when was the last successful login?", "did anyone log in successfully?",
                     "any successful ssh logins after 08:00?", "login succeeded for deploy?"):  # fmt: skip
        assert [words for _, _, words in translate(question)] == [("Accepted", "session opened")], question
    assert translate("is someone brute forcing sshd?")[0][2] == ("Failed password", "Invalid user")
    assert translate("failed ssh logins from 10.0.0.1")[0][2] == ("Failed password", "authentication failure")
    assert scope_of("有没有登录成功的记录？").terms[:2] == ["Accepted", "session opened"]


def test_every_entry_of_the_data_reads_as_its_words():
    """Each way a language file writes an entry, alone, is that entry (a longer entry wins over its parts)."""
    assert {"en", "zh"} <= set(tables("word"))
    for language, table in tables("word").items():
        for entry, words in table["glossary"].items():
            for phrase in table["gloss"][entry]["phrases"]:
                assert translate(phrase) == [(0, len(phrase), tuple(words))], (language, phrase)


def test_a_third_language_is_one_more_file(tmp_path):
    question = "Zeitüberschreitungen bei shop-api?"
    assert translate(question) == []
    code = f"import json; from evcli.scope.glossary import translate; print(json.dumps(translate({question!r})))"
    assert read_with(tmp_path, "de_words.toml", GERMAN, code) == [[0, 20, ["timeout", "timed out"]]]


def test_an_entry_without_its_words_fails_loudly(tmp_path):
    unpaired = GERMAN.replace('zeitueberschreitung = ["timeout", "timed out"]', "")
    done = run_with(tmp_path, "de_words.toml", unpaired, "from evcli.scope.glossary import translate; translate('x')")
    assert done.returncode != 0
    assert "glossary entries of 'de' without a group or a row: ['zeitueberschreitung']" in done.stderr
