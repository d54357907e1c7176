"""evcli.scope.time_language: a language's time words and forms are data (grammar/<language>.toml).

The third-language tests write a German file into a temporary directory beside the packaged grammar and read
questions with it: windows, ranges, cued times, day words and day parts are read with no code of German.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from evcli.core.time import zone_named
from evcli.scope.grammar import GRAMMAR_DIR
from evcli.scope.match import Spans
from evcli.scope.time_language import TimeWords, alternation, compile_form, packaged
from evcli.scope.times import find_range
from evcli.scope.windows import window_matches

GERMAN = """
[time]
connector = ["bis"]
start = ["zwischen", "von"]

[time.numbers]
zwei = 2
zwanzig = 20

[time.units]
Minute = "m"
Minuten = "m"
Stunde = "h"
Stunden = "h"
Tag = "d"
Tage = "d"

[time.window]
forms = ["{cue} [{count}] {unit}", "[{count}] {unit} {cue_after}"]
cue = ["letzte", "letzten", "in den letzten", "vergangene"]
cue_after = ["zuvor"]

[time.days]
heute = 0
gestern = 1

[time.range]
forms = ["[{start}] {time} {connector} {end_time}"]
connector = ["bis", "und"]

[time.one_time]
forms = ["{cue} {time}"]
since = ["seit", "nach"]
before = ["vor", "bis"]
around = ["um", "gegen"]

[time.day_parts]
Morgen = [6, 12]
Abend = [18, 24]

[time.day_part]
forms = ["{day} {part}"]
"""
CLOCK = datetime.fromisoformat("2026-03-18T09:30:00+01:00")


@pytest.fixture
def with_german(tmp_path: Path) -> TimeWords:
    (tmp_path / "de_time.toml").write_text(GERMAN, encoding="utf-8")
    return TimeWords.load(GRAMMAR_DIR, tmp_path)


def asked(question: str, words: TimeWords | None) -> tuple[str, str, str | None] | None:
    found = find_range(question, Spans(), clock=CLOCK, tz=zone_named("Europe/Berlin"), words=words)
    return None if found is None else (found.text, found.range, found.relative)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Fehler in den letzten 20 Minuten?", ("in den letzten 20 Minuten", "20m")),
        ("letzte Stunde", ("letzte Stunde", "1h")),
        ("zwei Stunden zuvor", ("zwei Stunden zuvor", "2h")),
        ("vergangene zwanzig Minuten", ("vergangene zwanzig Minuten", "20m")),
    ],
)
def test_a_third_languages_windows_are_read_from_its_file_alone(with_german, question, expected):
    assert [(match.group(), label) for match, label in window_matches(question, with_german)] == [expected]
    text, _, relative = asked(question, with_german) or ("", "", None)
    assert (text, relative) == expected
    assert asked(question, packaged()) is None  # the packaged languages read none of it


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "Fehler zwischen 14:20 und 14:35?",
            ("zwischen 14:20 und 14:35", "2026-03-17T14:20:00+01:00..2026-03-17T14:35:00+01:00"),
        ),
        ("seit 08:15 langsam", ("seit 08:15", "2026-03-18T08:15:00+01:00..2026-03-18T09:30:00+01:00")),
        ("vor 09:00", ("vor 09:00", "..2026-03-18T09:00:00+01:00")),
        ("gestern Abend", ("gestern Abend", "2026-03-17T18:00:00+01:00..2026-03-18T00:00:00+01:00")),
        ("Logs von gestern", ("gestern", "2026-03-17T00:00:00+01:00..2026-03-18T00:00:00+01:00")),
    ],
)
def test_a_third_languages_ranges_cues_and_days_are_its_data(with_german, question, expected):
    found = asked(question, with_german)
    assert found is not None and found[:2] == expected


def test_the_packaged_languages_read_the_same_with_a_third_beside_them(with_german):
    for question in ("between 14:20 and 14:35", "最近 20 分钟", "昨天下午", "since 9 o'clock"):
        assert asked(question, with_german) == asked(question, packaged()) is not None


def test_a_table_written_twice_for_one_language_is_an_error(tmp_path):
    (tmp_path / "de_time.toml").write_text('[time.units]\nTag = "d"\n', encoding="utf-8")
    (tmp_path / "de_more.toml").write_text('[time.units]\nTag = "d"\n', encoding="utf-8")
    with pytest.raises(ValueError, match="'Tag' is written twice"):
        TimeWords.load(tmp_path)


def test_a_form_naming_a_slot_without_words_fails_loudly():
    with pytest.raises(ValueError, match="no words for slot 'cue'"):
        compile_form("{cue} {unit}", {"unit": alternation(["min"])})


@pytest.mark.parametrize(
    ("template", "text", "expected"),
    [
        ("{cue} [{count}] {unit}", "last   5 m", "last   5 m"),
        ("{cue} [{count}] {unit}", "last hour", "last hour"),
        ("{time} [[on] {day}]", "09:00 on ", "09:00"),  # an optional tail leaves no whitespace behind
        ("[{day}] {time}", "  09:00", "09:00"),  # nor an optional head
        ("{cue} [{count}] {unit}", "20m lastm", None),  # a letter word touches no letter
        ("{count}{unit}", "20m", "20m"),  # digits run into the unit after them
        ("{cue}", "之前左右", "之前"),
    ],
)
def test_a_form_compiles_to_words_with_their_edges_and_optional_gaps(template, text, expected):
    slots = {
        "cue": alternation(["last", "之前", "前"]),
        "count": alternation(["5", "20"]),
        "unit": alternation(["m", "hour"]),
        "time": r"\d\d:\d\d",
        "day": alternation(["today", "Mar 3"]),
    }
    found = compile_form(template, slots).search(text)
    assert (found.group() if found else None) == expected


def test_words_are_tried_longest_first():
    pattern = compile_form("{cue}", {"cue": alternation(["前", "前后", "jan", "jan.", "january"])})
    matched = [pattern.match(text) for text in ("前后", "january", "jan. 3", "jan 3")]
    assert [match.group() if match else None for match in matched] == [
        "前后",
        "january",
        "jan.",
        "jan",
    ]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("20", 20),
        ("两", 2),
        ("十", 10),
        ("十五", 15),
        ("二十", 20),
        ("三十五", 35),
        ("一二", None),
        ("十十", None),
        ("半", 0.5),
    ],
)
def test_numbers_are_digits_words_or_runs_of_numerals(text, value):
    chinese = next(language for language in packaged().languages if language.name == "zh")
    assert chinese.number(text) == value
