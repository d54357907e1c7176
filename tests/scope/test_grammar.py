"""evcli.scope.grammar: one engine matching the cue groups of any language file.

Each test writes its own small grammar into a temporary directory, so what is tested is how phrases
match (boundaries, CJK, anchors, `then`/`within`, case, standalone nouns), not the words of the packaged files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evcli.scope.grammar import GRAMMAR_DIR, Grammar
from evcli.scope.match import Spans

WORDS = """
[ask]
phrases = ["why", "root cause", "what changed"]

[count]
phrases = ["how many", "count", "多少"]

[follow]
phrases = ["and", "what about"]
at = "start"

[[follow.also]]
phrases = ["呢"]
at = "end"

[nth]
phrases = ["first", "last"]
then = "event"
within = 2

[event]
phrases = ["error", "errors"]

[rank]
phrases = ["前"]
then = "number"

[bare]
phrases = ["error"]
not_then = "measure"

[measure]
phrases = ["rate", "code"]

[upper]
phrases = ["ERROR"]
case = "exact"

[noun]
phrases = ["node", "ip", "source ip"]
standalone = true
"""


def grammar_of(tmp_path: Path, text: str = WORDS, name: str = "xx.toml") -> Grammar:
    (tmp_path / name).write_text(text, encoding="utf-8")
    return Grammar.load(tmp_path)


def found(grammar: Grammar, question: str, *groups: str) -> list[str]:
    return [hit.text for hit in grammar.hits(question, *groups)]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Why is nginx down?", ["Why"]),
        ("WHY", ["WHY"]),
        ("whyever", []),  # inside a word
        ("the why_count field", []),  # `_` joins words
        ("nginx为什么why", ["why"]),  # an ASCII phrase next to CJK still stands alone
        ("the root-cause", []),  # another word
        ("root   cause?", ["root   cause"]),  # any run of spaces
        ("root\tcause", ["root\tcause"]),
    ],
)
def test_ascii_phrases_match_whole_words_in_any_case(tmp_path, question, expected):
    assert found(grammar_of(tmp_path), question, "ask") == expected


def test_cjk_phrases_match_anywhere_and_positions_are_the_questions(tmp_path):
    grammar = grammar_of(tmp_path)
    question = "nginx  有多少次 502,  how   many?"
    hits = grammar.hits(question, "count")
    assert [(hit.text, question[hit.start : hit.end]) for hit in hits] == [
        ("多少", "多少"),
        ("how   many", "how   many"),
    ]


def test_spaces_next_to_han_are_ignored(tmp_path):
    grammar = grammar_of(tmp_path, '[noun]\nphrases = ["来源ip"]\n[count]\nphrases = ["有多少"]\n')
    assert found(grammar, "哪个来源 IP 最多", "noun") == ["来源 IP"]
    assert found(grammar, "有 多少", "count") == ["有 多少"]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("  and since 09:15?", ["and"]),
        ("what about web-02?", ["what about"]),
        ("errors and warnings", []),  # not at the start
        ("那 web-02 呢？", ["呢"]),  # at the end, final punctuation ignored
        ("那 web-02 呢 ?!", ["呢"]),
        ("呢称是什么", []),
    ],
)
def test_anchored_groups(tmp_path, question, expected):
    assert found(grammar_of(tmp_path), question, "follow") == expected


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("the first error today", ["first"]),
        ("the first 502 gateway errors", ["first"]),  # two words between
        ("the first three 502 gateway errors", []),  # three
        ("the first. Errors later", []),  # not across a sentence end
        ("errors since the first", []),  # before, not after
        ("last errors", ["last"]),
    ],
)
def test_then_within_words(tmp_path, question, expected):
    assert found(grammar_of(tmp_path), question, "nth") == expected


def test_then_number_and_not_then(tmp_path):
    grammar = grammar_of(tmp_path)
    assert found(grammar, "前 5 个 IP", "rank") == ["前"]
    assert found(grammar, "之前的 IP", "rank") == []
    assert found(grammar, "error rate and error logs", "bare") == ["error"]  # the second: not before a measure
    assert [hit.start for hit in grammar.hits("error rate and error logs", "bare")] == [15]


def test_exact_case(tmp_path):
    grammar = grammar_of(tmp_path)
    assert found(grammar, "ERROR lines or error lines", "upper") == ["ERROR"]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("which node?", ["node"]),
        ("which node.", ["node"]),  # a sentence end is no joint
        ("errors on node-3", []),  # part of a name
        ("the src.ip field", []),
        ("top source IPs", []),
        ("top source IP", ["source IP", "IP"]),  # every hit: the longest first, then the one inside it
    ],
)
def test_standalone_nouns(tmp_path, question, expected):
    assert found(grammar_of(tmp_path), question, "noun") == expected


def test_overlapping_hits_come_longest_first_so_claims_take_the_longest(tmp_path):
    grammar = grammar_of(tmp_path)
    spans = Spans()
    claimed = [hit.text for hit in grammar.hits("top source IP", "noun") if spans.claim(hit.start, hit.end)]
    assert claimed == ["source IP"]


def test_a_new_language_is_one_file(tmp_path):
    """A file beside the packaged ones adds its words to their groups and its own groups, with no code."""
    (tmp_path / "de.toml").write_text(
        '[count]\nphrases = ["wie viele", "wie oft"]\n\n[elliptical]\nphrases = ["und"]\nat = "start"\n',
        encoding="utf-8",
    )
    grammar = Grammar.load(GRAMMAR_DIR, tmp_path)
    assert found(grammar, "Wie viele Fehler hatte nginx?", "count") == ["Wie viele"]
    assert grammar.has("und seit 09:15?", "elliptical")
    assert not Grammar.load(GRAMMAR_DIR).has("Wie viele Fehler hatte nginx?", "count")


@pytest.mark.parametrize(
    "text",
    [
        '[ask]\nphrases = ["why"]\nwithin = 2\nthen = "nowhere"\n',  # a target no file declares
        '[ask]\nphrases = ["why"]\nat = "middle"\n',
        '[ask]\nphrases = ["why"]\nafter = "x"\n',  # an unknown option
    ],
)
def test_a_bad_group_is_refused_when_loaded(tmp_path, text):
    with pytest.raises(ValueError, match="grammar"):
        grammar_of(tmp_path, text)


def test_a_word_table_is_the_groups_folded_phrases_in_every_file(tmp_path):
    (tmp_path / "yy.toml").write_text('[count]\nphrases = ["How   Often"]\n', encoding="utf-8")
    assert grammar_of(tmp_path).words("count") == {"how many", "count", "多少", "how often"}
