"""Answers built without the Composer speak the question's language from the catalogue."""

from __future__ import annotations

import pytest

from evcli.agents.actions import REVIEW_LABEL, flag
from evcli.agents.fallback import composer_fallback_answer, gate_reject_answer
from evcli.gatekeeper.engine import gate
from evcli.gatekeeper.rules import load_rules
from evcli.messages import catalogue

JAPANESE_NOTE = "(Japanese is not supported yet; answering in English.)"


def _rejected():
    result = gate({"answer_version": "bogus", "claims": []}, [], load_rules())
    assert result.status == "fail"
    return result


@pytest.mark.parametrize("language", ["en", "zh"])
def test_fallback_answers_use_the_catalogue_of_the_language(language):
    words = catalogue(language)
    rejected = gate_reject_answer(language, _rejected(), [])
    assert rejected["answer_summary"] == words("fallback.reject_summary")
    assert rejected["user_facing_answer"].splitlines()[0] == words("fallback.reject_summary")
    composed = composer_fallback_answer(language, "LOW_CONFID", [], ["the pod's events"], ["kubectl delete pod x"])
    lines = composed["user_facing_answer"].splitlines()
    assert lines[0] == words("fallback.incomplete") and words("fallback.none") in lines
    assert lines[-1] == f"- [{REVIEW_LABEL[language]}: kubectl delete] kubectl delete pod x"
    assert composed["answer_summary"] == words("fallback.summary", n=0)
    assert composed["recommended_actions"][0]["reason"] == words("fallback.reason")


def test_fallback_answers_to_an_unsupported_language_are_english_and_say_so():
    rejected = gate_reject_answer("ja", _rejected(), [])["user_facing_answer"].splitlines()
    assert rejected[:2] == [JAPANESE_NOTE, catalogue("en")("fallback.reject_summary")]
    composed = composer_fallback_answer("ja", "PASS", [], [], ["rm -rf /data"])["user_facing_answer"].splitlines()
    assert composed[0] == JAPANESE_NOTE
    assert composed[-1] == f"- [{REVIEW_LABEL['en']}: rm -rf] rm -rf /data"


def test_a_flag_in_any_catalogued_language_is_recognised():
    chinese = flag("DROP TABLE orders", "zh")
    assert chinese.startswith(f"[{REVIEW_LABEL['zh']}: DROP]")
    assert flag(chinese, "en") == chinese  # idempotent across languages
