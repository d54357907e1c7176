"""A language is one data file: a German `de.toml` beside the packaged grammar — cue groups, time words and
forms, stop words — changes the whole reading of a German question, in a fresh process, with no code.

The readers read the packaged grammar directory only, so the process points it at a copy of the packaged
files plus `de.toml` before anything is read (the way `evcli` would see a language file shipped with it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from evcli.scope.grammar import GRAMMAR_DIR

GERMAN = """
[count]
phrases = ["wie viele", "wie oft", "Anzahl der"]

[level.error]
phrases = ["Fehler", "Fehlermeldungen"]

[time.units]
Minute = "m"
Minuten = "m"
Stunde = "h"
Stunden = "h"

[time.numbers]
zwanzig = 20

[time.window]
forms = ["{cue} [{count}] {unit}"]
cue = ["letzte", "letzten", "in den letzten"]

[word.stop]
phrases = ["hatte", "hat", "der", "die", "das", "den", "in", "wie", "gab", "es"]
"""

QUESTION = "Wie viele Fehler hatte nginx in den letzten zwanzig Minuten?"

# the words around a name: where it happened, the article between, a host's and a user's cue, a subject's cue
GERMAN_NAMES = """
[entity.where_before]
phrases = ["auf"]

[entity.article]
phrases = ["dem", "der", "den"]

[entity.host_before]
phrases = ["Knoten", "Rechner"]

[token.user_cue]
phrases = ["angemeldet als", "eingeloggt als"]

[software.subject_before]
phrases = ["bei"]
"""

NAMES_QUESTION = "Fehler von auth auf dem nginx, angemeldet als deploy, auf Knoten lager-b.lan, und bei kafka?"

READ = """
import json
from tests.scope._env import scope_of
query = scope_of({question!r})
print(json.dumps({{"language": query.language, "answer": query.answer, "levels": query.levels, "services": query.services,
                  "window": query.range.relative if query.range else None, "terms": query.terms,
                  "hosts": query.hosts, "tokens": query.tokens, "unknown_services": query.unknown_services}}))
"""


def read(question: str, grammar_dir: Path) -> dict:
    script = f"import pathlib, evcli.scope.grammar as g\ng.GRAMMAR_DIR = pathlib.Path({str(grammar_dir)!r})\n"
    script += READ.format(question=question)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_third_language_is_one_file(tmp_path: Path) -> None:
    packaged = tmp_path / "packaged"
    shutil.copytree(GRAMMAR_DIR, packaged, ignore=shutil.ignore_patterns("__pycache__"))
    without = read(QUESTION, packaged)
    assert without["answer"] != "count" and without["window"] is None  # the packaged languages cannot read it

    german = tmp_path / "with-german"
    shutil.copytree(packaged, german)
    (german / "de.toml").write_text(GERMAN, encoding="utf-8")
    reading = read(QUESTION, german)
    assert reading["answer"] == "count"  # a kind's cue words: a group of the file
    assert reading["levels"] == ["ERROR"]
    assert reading["services"] == ["nginx"]
    assert reading["window"] == "20m"  # time words and forms: the file's [time] tables
    assert not {"hatte", "den", "wie", "zwanzig", "Minuten"} & set(reading["terms"])  # its stop words, its window


def test_the_words_around_a_name_are_the_languages_file(tmp_path: Path) -> None:
    """Where something happened ("auf dem nginx": first), a host's and a user's cue and a subject's cue are
    groups of the language file too: the name shapes stay in code, the words come with the file."""
    packaged = tmp_path / "packaged"
    shutil.copytree(GRAMMAR_DIR, packaged, ignore=shutil.ignore_patterns("__pycache__"))
    without = read(NAMES_QUESTION, packaged)
    assert without["services"] == ["auth", "nginx"]  # in question order: "auf" says nothing
    assert (without["hosts"], without["tokens"], without["unknown_services"]) == ([], [], [])

    german = tmp_path / "with-german"
    shutil.copytree(packaged, german)
    (german / "de.toml").write_text(GERMAN + GERMAN_NAMES, encoding="utf-8")
    reading = read(NAMES_QUESTION, german)
    assert reading["services"] == ["nginx", "auth"]  # entity.where_before and entity.article
    assert reading["hosts"] == ["lager-b.lan"]  # entity.host_before: no host by its shape alone
    assert reading["tokens"] == ["deploy"]  # token.user_cue
    assert reading["unknown_services"] == ["kafka"]  # software.subject_before, beside a known service


GERMAN_MESSAGES = """
from evcli.messages.en import MESSAGES as ENGLISH

LANGUAGE = "de"
CJK = False
MESSAGES = {key: "[de] " + text for key, text in ENGLISH.items()}  # a stand-in translation, every id of en.py
"""

ANSWER = """
import json, pathlib
import evcli.messages
evcli.messages.__path__.append({messages!r})  # a catalogue module shipped beside en.py and zh.py
from evcli.backends.snapshot import demo_env_dir
from evcli.gatekeeper.rules import load_rules
from evcli.pipeline import Pipeline
from evcli.store.db import TraceStore
result = Pipeline(store=TraceStore(pathlib.Path({db!r})), rules=load_rules()).ask({question!r})
print(json.dumps({{"language": result.query.language if getattr(result, "query", None) else None,
                  "answer": result.answer.user_facing_answer}}))
"""


def test_a_question_in_the_new_language_is_answered_in_it(tmp_path: Path) -> None:
    """The language file says which language a question is written in (its words cover the question), and its
    messages module, found beside the packaged ones, words the answer: no code names the language."""
    german = tmp_path / "with-german"
    shutil.copytree(GRAMMAR_DIR, german, ignore=shutil.ignore_patterns("__pycache__"))
    (german / "de.toml").write_text(GERMAN, encoding="utf-8")
    messages = tmp_path / "messages"
    messages.mkdir()
    (messages / "de.py").write_text(GERMAN_MESSAGES, encoding="utf-8")
    question = "Wie viele Fehler hatte payment-service in den letzten zwanzig Minuten?"
    script = f"import pathlib, evcli.scope.grammar as g\ng.GRAMMAR_DIR = pathlib.Path({str(german)!r})\n"
    script += ANSWER.format(messages=str(messages), db=str(tmp_path / "evcli.db"), question=question)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    answered = json.loads(done.stdout)
    assert answered["language"] == "de"
    assert answered["answer"].startswith("[de] ")  # the chain's sentences come from the German catalogue
    assert "Counted 18 matching lines" in answered["answer"]  # the count asked, in the window asked
    assert read(question, german)["language"] == "de"
    assert read("How many errors did payment-service log?", german)["language"] == "en"  # English stays English
