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


def test_login_outcomes_as_on_call_engineers_write_them():
    """ "successful login" is logged "Accepted …" (sshd) or "session opened" (pam), never as the words asked."""
    for question in ("when was the last successful login?", "did anyone log in successfully?",
                     "any successful ssh logins after 08:00?", "login succeeded for deploy?"):  # fmt: skip
        assert [words for _, _, words in translate(question)] == [("Accepted", "session opened")], question
    assert translate("is someone brute forcing sshd?")[0][2] == ("Failed password", "Invalid user")
    assert translate("failed ssh logins from 10.0.0.1")[0][2] == ("Failed password", "authentication failure")
    assert scope_of("有没有登录成功的记录？").terms[:2] == ["Accepted", "session opened"]
