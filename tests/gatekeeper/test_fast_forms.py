"""Each faster form the Gatekeeper uses gives exactly what the plain form it replaced gives: the plain forms
are written out here as the reference (a regular expression that starts with a lookbehind, a loop over every
word length, rendering every ref of a call), and compared on generated texts and on the shipped sessions."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from evcli.contracts import NO_EVIDENCE_PATH
from evcli.core.text import NEGATION, NEGATION_WORDS, comparable, has_negation, normalize
from evcli.gatekeeper import clocks, facts, lookalike, provenance, typed, wordtables
from evcli.gatekeeper.checks import _ATTRIBUTED, _QUOTED
from evcli.gatekeeper.facts import _HYPHENATED
from evcli.resources import data_path
from evcli.store.documents import read_document


def _texts(*pieces: str) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(pieces), max_size=12).map("".join)


_NEGATION_PIECES = (*sorted(NEGATION_WORDS), "n't", "don't", "'", "''", "a", "x", "no", "de", " ", "-", "不", "没", "9")


@settings(max_examples=3000, deadline=None)
@given(_texts(*_NEGATION_PIECES))
def test_has_negation_is_negation_search(text):
    assert has_negation(text) == (NEGATION.search(text) is not None)


class _PlainWords:
    """The word lookup as first written: every length, longest first, at every position."""

    def __init__(self, words):
        self.words = frozenset(words)
        self.lengths = sorted({len(word) for word in self.words}, reverse=True)

    def ending(self, text, end):
        for length in self.lengths:
            start = end - length
            if start >= 0 and text[start:end] in self.words and not wordtables._inside_word(text, start, start - 1):
                return start
        return None

    def starting(self, text, start):
        for length in self.lengths:
            end = start + length
            if end <= len(text) and text[start:end] in self.words and not wordtables._inside_word(text, end - 1, end):
                return end
        return None


_WORD_TABLES = [
    wordtables.tables().connectors,
    wordtables.tables().approximate,
    wordtables.tables().role_after,
    *wordtables.tables().role_before.values(),
]


@settings(max_examples=400, deadline=None)
@given(_texts("peak", " of ", "about", "exit code", "p99", "=", ":", "峰值", "为", "不到", "x", "7", " "), st.data())
def test_word_lookups_find_what_every_length_finds(text, data):
    for table in _WORD_TABLES:
        plain = _PlainWords(table.words)
        for position in range(len(text) + 1):
            assert table.ending(text, position) == plain.ending(text, position)
            if position < len(text):
                assert table.starting(text, position) == plain.starting(text, position)


_PATTERN_PIECES = ("2026-03-18", "T09:11:23.231", "+01:00", " Mar 18", "3月18日", "10.0.0.12", "1.4.2", "v2.0.1",
                   "'x'", "a'b", '"q"', "“q”", ":", "-", ".", " ", "9", "ab", "x-y-z", "a1-b2", "Z", "_")  # fmt: skip


@settings(max_examples=3000, deadline=None)
@given(_texts(*_PATTERN_PIECES))
def test_patterns_rewritten_to_start_with_a_literal_match_as_before(text):
    hint = re.compile(rf":\d|\d{{4}}-\d\d-\d\d|月|(?:{'|'.join(clocks.MONTHS)})")
    assert (clocks._TIME_HINT.search(text) is None) == (hint.search(text) is None)
    versions = re.compile(r"(?<![\w.])\d+(?:\.\d+){2,}(?![\w.])")
    assert [m.span() for m in typed._IP_OR_VERSION.finditer(text)] == [m.span() for m in versions.finditer(text)]
    quoted = re.compile(r'"[^"]*"|“[^”]*”|「[^」]*」|‘[^’]*’|(?<!\w)\'[^\']*\'(?!\w)')
    assert [m.span() for m in _QUOTED.finditer(text)] == [m.span() for m in quoted.finditer(text)]
    hyphenated = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+")
    assert _HYPHENATED.findall(text.lower()) == hyphenated.findall(text.lower())
    times = re.compile(clocks.time_pattern().pattern.split(")", 1)[1])  # without its leading lookahead
    assert [m.groupdict() for m in clocks.time_pattern().finditer(text)] == [
        m.groupdict() for m in times.finditer(text)
    ]
    colon = re.compile(r"(?<=[^\d\s]):(?=\S)|:(?=[^\d\s])")
    assert comparable(text) == colon.sub(": ", normalize(text))


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=st.sampled_from([*"abcXYZ019 ßİı\u115f", *list(lookalike._ascii_of())[:200]]), max_size=10))
def test_a_skeleton_replaces_each_look_alike(word):
    mapping = lookalike._ascii_of()
    assert lookalike.skeleton(word) == (word if word.isascii() else "".join(mapping.get(c, c) for c in word))


def _expected(invocation, raw_path):
    """The plain re-derivation: every ref of the call rendered, the cited one looked up."""
    status, refs = provenance.derived_evidence(invocation)
    return status, next((ref.text for ref in refs if ref.raw_path == raw_path), None)


def test_deriving_the_cited_ref_alone_gives_what_deriving_every_ref_gives():
    documents = [read_document(path) for path in sorted(Path(data_path("sample_sessions")).glob("*.json"))]
    invocations = [invocation for document in documents for invocation in document.invocations]
    # hand-edited outputs: an array that is not a list, an empty one, a list of one item
    edited = []
    for invocation in invocations:
        for name, value in list(invocation.output.items()):
            if isinstance(value, list) and value:
                edited += [
                    invocation.model_copy(update={"output": {**invocation.output, name: change}}, deep=True)
                    for change in ({"0": value[0]}, "text", [], value[:1])
                ]
    checked = 0
    for invocation in [*invocations, *edited]:
        recorded = invocation.retrieval_details.evidence_refs if invocation.retrieval_details else None
        names = [key for key, value in invocation.output.items() if isinstance(value, list | dict)]
        paths = {ref.raw_path for ref in recorded or []} | {NO_EVIDENCE_PATH, "$.stats", "$.logs[01]", "$.logs[]"}
        paths |= {f"$.{name}[{index}]" for name in names for index in (0, 1, 99)} | {f"$.{name}" for name in names}
        for raw_path in sorted(paths):
            expected: object
            try:
                expected = _expected(invocation, raw_path)
            except Exception as exc:  # a malformed item: the plain derivation fails on it
                expected = type(exc)
            derived: object
            try:
                derived = provenance.derived_ref(invocation, raw_path)
            except Exception as exc:
                derived = type(exc)
            assert derived == expected, (invocation.tool_name, raw_path)
            checked += 1
    assert checked > 1000


_NUMBER_PIECES = ("12", "3.5", "1,200", "-", "−", "ms", "GB", " ", "h", "20m", "and", ",", ".", ":", "x", "=", "_", "k")


@settings(max_examples=3000, deadline=None)
@given(_texts(*_NUMBER_PIECES, *_PATTERN_PIECES))
def test_number_patterns_with_a_lookahead_match_as_without_it(text):
    """The number and compound-duration patterns start with a lookahead for their first character."""
    for pattern in (wordtables.tables().number, wordtables.tables().compound):
        plain = re.compile(pattern.pattern.split(")", 1)[1])  # without its leading lookahead
        assert [m.span() + m.groups() for m in pattern.finditer(text)] == [
            m.span() + m.groups() for m in plain.finditer(text)
        ]


@settings(max_examples=2000, deadline=None)
@given(
    _texts("logged", "Logs", "SAYS", "ſaid", "wrote", "printed", "记录了", "写道", ":", "：", " ", "x", "; ", ". ", "a")
)
def test_attribution_pattern_with_a_lookahead_matches_as_without_it(text):
    plain = re.compile(_ATTRIBUTED.pattern.split(")", 1)[1], _ATTRIBUTED.flags)
    assert [m.span() for m in _ATTRIBUTED.finditer(text)] == [m.span() for m in plain.finditer(text)]


@settings(max_examples=3000, deadline=None)
@given(_texts(*_PATTERN_PIECES, "0", "7.", ".7", "10.0", "1."))
def test_addresses_and_versions_are_blanked_as_without_the_hint(text):
    plain = typed._IP_OR_VERSION.sub(typed._blank, text) if "." in text else text
    assert typed._blank_ips_and_versions(text) == plain


def _plain_clocks(text):
    """clocks() as first written: each group read by name."""
    if clocks._TIME_HINT.search(text) is None:
        return []
    found = []
    for match in clocks.time_pattern().finditer(text):
        group = match.groupdict()
        hour, minute = group["hour"] or group["c_hour"], group["minute"] or group["c_minute"]
        month_name = group["month_name"] or group["month_name_d"]
        month = clocks.MONTHS.index(month_name[:3]) + 1 if month_name else group["month"] or group["month_zh"]
        day = group["day"] or group["day_m"] or group["day_d"] or group["day_zh"]
        if hour is not None and (int(hour) > 23 or int(minute) > 59):
            continue
        if month is not None and not (1 <= int(month) <= 12 and 1 <= int(day) <= 31):
            continue
        year = group["year"] or group["year_m"] or group["year_d"] or group["year_zh"]
        second = group["second"] or group["c_second"]
        found.append(
            (
                match.span(),
                *(None if part is None else int(part) for part in (year, month, day, hour, minute, second)),
                group["fraction"] or group["c_fraction"],
                clocks._offset(group["zone"]) if hour is not None else None,
            )
        )
    return found


_TIME_PIECES = ("2026-03-18", "T09:11:23", ".231", "+01:00", "Z", " UTC+8", " Mar", " 18", ", 2026", "3月18日",
                "25:00", "13-45-99", "09:05", " ", "Sept", "12", ":")  # fmt: skip


@settings(max_examples=3000, deadline=None)
@given(_texts(*_TIME_PIECES))
def test_clocks_read_as_when_each_group_was_read_by_name(text):
    assert [(m.span(), *clock) for m, clock in clocks.clocks(text)] == _plain_clocks(text)


def _plain_negation_dropped(claim, evidence):
    """facts._negation_dropped as first written: every pair of the evidence's words built."""
    if not has_negation(evidence):
        return ""
    words = re.findall(r"[a-z0-9]+(?:'[a-z]+)?", evidence)
    negative = [word in NEGATION_WORDS or word.endswith("n't") for word in words]
    closed = {
        f"{words[index - 1]} {words[index + 1]}"
        for index in range(1, len(words) - 1)
        if negative[index] and not negative[index - 1]
    }
    if not closed:
        return ""
    written = {f"{a} {b}" for a, b in zip(words, words[1:], strict=False)}
    said = re.findall(r"[a-z0-9]+(?:'[a-z]+)?", claim)
    for a, b in zip(said, said[1:], strict=False):
        pair = f"{a} {b}"
        if pair in closed and pair not in written:
            return b
    return ""


_PAIR_WORDS = ("is ", "not ", "no ", "isn't ", "available ", "pool ", "never ", "ok ", "未", "不是", "x ")


@settings(max_examples=3000, deadline=None)
@given(_texts(*_PAIR_WORDS), _texts(*_PAIR_WORDS))
def test_a_dropped_negation_is_found_as_when_every_pair_was_built(claim, evidence):
    assert facts._negation_dropped(claim, evidence) == _plain_negation_dropped(claim, evidence)
