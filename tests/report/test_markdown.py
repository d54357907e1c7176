"""The Markdown report, parsed with markdown-it-py for its structure.

Three parsers: CommonMark alone (what every chat app and GitHub share), CommonMark + GFM tables
(the full report's evidence table), and CommonMark + tables + footnotes + strikethrough (GitHub's
own extensions), to show the chat form means the same with and without them.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from mdit_py_plugins.footnote import footnote_plugin

from evcli.report import render
from evcli.report.markdown import code, text
from evcli.report.model import report_model
from tests.conftest import sample
from tests.report.conftest import RAW_CONTROLS, control_export, load, with_answer

COLUMNS = ["#", "claim", "tool", "ref", "source", "excerpt", "facts"]
# Every token the chat form may produce: CommonMark core blocks and inlines, nothing an extension adds.
CHAT_TOKENS = {
    "paragraph_open",
    "paragraph_close",
    "bullet_list_open",
    "bullet_list_close",
    "ordered_list_open",
    "ordered_list_close",
    "list_item_open",
    "list_item_close",
    "inline",
    "text",
    "code_inline",
    "fence",
    "softbreak",
    "hardbreak",
    "em_open",
    "em_close",
    "strong_open",
    "strong_close",
}


def _commonmark() -> MarkdownIt:
    return MarkdownIt("commonmark")


def _github() -> MarkdownIt:
    """CommonMark + GFM tables, strikethrough and footnotes (GitHub's flavour, without linkify)."""
    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).use(footnote_plugin)


def _tokens(parsed):
    for token in parsed:
        yield token
        yield from _tokens(token.children or [])


def _table(tokens) -> list[list[str]]:
    """The rendered text of each cell, row by row."""
    rows, row = [], None
    for token in tokens:
        if token.type == "tr_open":
            row = []
        elif token.type == "inline" and row is not None:
            row.append("".join(child.content for child in token.children or []))
        elif token.type == "tr_close":
            rows.append(row)
            row = None
    return rows


def _sources(tokens) -> list[str]:
    """The text of each item of the list under "Sources" (code spans as their content)."""
    items, inside, after = [], False, False
    for token in tokens:
        if token.type == "inline" and token.content in ("Sources", "Sources:"):
            after = True
        elif after and token.type == "list_item_open":
            inside = True
        elif after and inside and token.type == "inline":
            items.append("".join(child.content for child in token.children or []))
            inside = False
        elif after and token.type == "bullet_list_close":
            break
    return items


def test_markers_stay_inline_with_a_sources_list_and_no_footnote(hostile_session):
    document = load(hostile_session)
    markdown = render(document, "md")
    tokens = _github().parse(markdown)
    assert not [t for t in _tokens(tokens) if t.type.startswith("footnote")]
    assert "[^" not in markdown
    cited = report_model(document).citations
    answer = "".join(t.content for t in tokens if t.type == "inline")
    assert len(cited) >= 3 and all(f"[{c.number}]" in answer for c in cited)
    sources = _sources(tokens)
    assert [item.split(" ", 1)[0] for item in sources] == [f"[{c.number}]" for c in cited]
    hostile = next(item for item in sources if "onerror" in item)
    assert "(logs/web.log:3)" in hostile and 'bad file <img src=x onerror="alert(2)"> </style><b>bold</b>' in hostile


def test_the_evidence_table_has_the_right_columns_and_literal_cells(hostile_session):
    document = load(hostile_session)
    tokens = _github().parse(render(document, "md"))
    rows = _table(tokens)
    assert rows[0] == COLUMNS
    evidence = sum(len(citation.evidence) for citation in report_model(document).citations)
    assert len(rows) == 1 + evidence and all(len(row) == len(COLUMNS) for row in rows)  # `|` splits no cell
    hostile = next(row for row in rows if "onerror" in row[5])
    assert hostile[4] == "logs/web.log:3" and hostile[5].endswith("`tick` | pipe [1]")  # the `|` is text
    html = _github().render(render(document, "md"))
    assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in html


def test_each_evidence_row_lists_the_facts_the_gate_matched_without_backslashes():
    markdown = render(load(sample("broad-order-service")), "md")
    rows = {row[3]: row[6] for row in _table(_github().parse(markdown))[1:]}
    assert rows["$.alerts[0]"] == (
        "firing = $.alerts[0].state firing; 91% = $.alerts[0].value 91.0%; 18 minutes = $.alerts[0].duration 18m"
    )
    assert rows["$.no_evidence"] == "-"
    assert " = $.alerts" not in render(load(sample("broad-order-service")), "md", brief=True)


def test_brief_is_commonmark_that_means_the_same_with_or_without_extensions(hostile_session):
    for document in (
        load(hostile_session),
        load(sample("broad-order-service")),
        load(sample("narrow-payment-highcpu")),
    ):
        brief = render(document, "md", brief=True)
        types = {token.type for token in _tokens(_commonmark().parse(brief))}
        assert types <= CHAT_TOKENS, types - CHAT_TOKENS  # no heading, table, footnote, HTML, link or image
        assert _commonmark().render(brief) == _github().render(brief)
        assert len(brief) < len(render(document, "md"))


def test_brief_of_clean_sessions_has_no_backslash_at_all():
    """The samples' answers and refs hold `$.no_evidence`, `[0]`, `#3`, `50/50`, `_`, `|`: none is escaped."""
    for name in ("broad-order-service", "narrow-payment-highcpu", "negative-inventory-hikaricp"):
        brief = render(load(sample(name)), "md", brief=True)
        assert "\\" not in brief, name
        assert "$.no_evidence" in brief or name != "broad-order-service"


def test_the_answers_structure_is_kept(hostile_session):
    answer = (
        "## Summary\n"
        "The pool is exhausted [1] and `-Xmx` is **small**; see *below*.\n"
        "Second line of the same paragraph.\n\n"
        "Findings:\n- first [2]\n- second\n\n"
        "3. third\n4. fourth\n\n"
        "```sh\nkubectl get pods\n# not a heading\n```"
    )
    brief = render(with_answer(load(hostile_session), answer), "md", brief=True)
    html = _commonmark().render(brief)
    assert "<p>Summary</p>" in html  # a heading is a line of its own (chat apps have no headings)
    assert "exhausted [1] and <code>-Xmx</code> is <strong>small</strong>; see <em>below</em>.<br />" in html
    assert "<p>Findings:</p>\n<ul>\n<li>first [2]</li>\n<li>second</li>\n</ul>" in html
    assert '<ol start="3">\n<li>third</li>\n<li>fourth</li>\n</ol>' in html
    assert '<pre><code class="language-sh">kubectl get pods\n# not a heading\n</code></pre>' in html


def test_a_log_lines_markup_stays_literal_text(hostile_session):
    answer = "web logged: <script>alert(1)</script> <img src=x> [x](http://a) &amp; # 1. | ~~s~~ [3](y) \\*"
    brief = render(with_answer(load(hostile_session), answer), "md", brief=True)
    paragraph = _github().parse(brief)[1]
    assert "".join(child.content for child in paragraph.children) == answer
    assert {child.type for child in paragraph.children} == {"text"}  # no em, link, HTML or strikethrough
    assert "<script>" not in _github().render(brief)


@pytest.mark.parametrize(
    "ordinary", ["$.no_evidence", "#3", "$.alerts[0]", "a|b", "50/50", "order_service", "a * b", "3 < 4", "AT&T"]
)
def test_ordinary_characters_are_not_escaped(ordinary):
    assert text(ordinary) == ordinary


@pytest.mark.parametrize(
    "special, escaped",
    [
        ("<b>x</b>", "\\<b>x\\</b>"),
        ("&amp;", "\\&amp;"),
        ("*x*", "\\*x\\*"),
        ("_x_", "\\_x\\_"),
        ("# x", "\\# x"),
        ("1. x", "1\\. x"),
        ("- x", "\\- x"),
        ("> x", "\\> x"),
        ("[a](b)", "[a\\](b)"),
        ("`x`", "\\`x\\`"),
        ("a\\*", "a\\\\\\*"),
    ],
)
def test_only_what_would_be_markup_is_escaped(special, escaped):
    assert text(special) == escaped


# Text made of the characters Markdown gives a meaning to, and some letters and spaces.
MARKUP_TEXT = st.lists(
    st.sampled_from([*"*_~`<>&#[]()!|\\-+=.:;/1aZé ", "&amp;", "&#35;", "<b>", "](x)", "1. ", "\n", "www.a.b", "[^1]"]),
    max_size=25,
).map("".join)


def _shown(markdown: str) -> tuple[str, set[str]]:
    """What a CommonMark (+ GitHub extensions) reader shows of `markdown` as one paragraph, and the token types."""
    tokens = _github().parse(markdown)
    inline = [token for token in tokens if token.type == "inline"]
    children = [child for token in inline for child in token.children or []]
    content = "".join(child.content for child in children if child.type in ("text", "code_inline"))
    return content, {token.type for token in tokens} | {child.type for child in children}


@given(MARKUP_TEXT)
def test_any_text_reads_back_as_written(value):
    value = " ".join(value.split())
    shown, types = _shown(text(value))
    assert shown == value
    assert types <= {"paragraph_open", "paragraph_close", "inline", "text"}


@given(MARKUP_TEXT)
def test_any_code_reads_back_as_written_also_in_a_table_cell(value):
    value = " ".join(value.split())
    if not value:
        return
    shown, types = _shown(code(value))
    assert shown == value and "code_inline" in types
    cells = _table(_github().parse(f"| a |\n|---|\n| {code(value, cell=True)} |\n"))
    assert cells[1] == [value]


@pytest.fixture(scope="module")
def control_session(tmp_path_factory):
    return control_export(tmp_path_factory)


def test_control_characters_are_shown_visibly_not_written_raw(control_session):
    shown = "status=503 \\x1b[2J\\x1b]0;PWNED\\x07 \\x1b]8;;https://attacker.example\\x1b\\click"
    markdown = render(load(control_session), "md")
    html = render(load(control_session), "html")

    for output in (markdown, html):
        assert not [c for c in RAW_CONTROLS if c in output], output
    assert shown in _github().render(markdown) and "\\x9b2J \\u202eevil\\u202c" in _github().render(markdown)
    assert shown in html and "\\x9b2J \\u202eevil\\u202c" in html
    assert re.search(r"\\x1b\\\]", markdown) is None  # `]` is not escaped: nothing makes it a link
