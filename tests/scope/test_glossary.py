"""evcli.scope.glossary: Chinese operations words → the English words logs use."""

from __future__ import annotations

from evcli.scope.glossary import GLOSSARY, translate
from tests.scope._env import scope_of


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
    assert 30 <= len(GLOSSARY) <= 60
