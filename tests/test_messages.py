"""The message catalogues: one per language, each with exactly the English ids and usable formats."""

from __future__ import annotations

import re

from evcli.messages import catalogue, catalogues, supported, unsupported_note
from evcli.messages import en as english
from evcli.messages import zh as chinese


def test_every_catalogue_has_the_english_message_ids_and_formats():
    """A template may use fewer of the values the code passes (a language words a sentence its own way)."""
    placeholders = re.compile(r"\{(\w+)\}")
    assert set(chinese.MESSAGES) == set(english.MESSAGES)
    for message_id in english.MESSAGES:
        values = {name: "x" for m in (english, chinese) for name in placeholders.findall(m.MESSAGES[message_id])}
        for module in (english, chinese):
            assert catalogue(module.LANGUAGE)(message_id, **values), message_id


def test_a_language_without_a_catalogue_reads_english_and_is_noted():
    assert [words.language for words in catalogues()] == ["en", "zh"]
    assert not supported("ja") and catalogue("ja") is catalogue("en")
    assert unsupported_note("ja") == "(Japanese is not supported yet; answering in English.)"
    assert unsupported_note("zh") is None and unsupported_note("en") is None
