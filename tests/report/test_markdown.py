"""The Markdown report, parsed with markdown-it-py (GFM tables + footnotes) for its structure."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt
from mdit_py_plugins.footnote import footnote_plugin

from evcli.report import render
from evcli.report.model import report_model
from tests.conftest import sample
from tests.report.conftest import RAW_CONTROLS, control_export, load

COLUMNS = ["#", "claim", "tool", "ref", "source", "excerpt", "facts"]


def _parser() -> MarkdownIt:
    """CommonMark + GFM tables + footnotes (GitHub's own flavour, without linkify)."""
    return MarkdownIt("commonmark").enable("table").use(footnote_plugin)


def _tokens(text: str):
    return _parser().parse(text)


def _table(tokens) -> list[list[str]]:
    rows, row = [], None
    for token in tokens:
        if token.type == "tr_open":
            row = []
        elif token.type == "inline" and row is not None:
            row.append(token.content)
        elif token.type == "tr_close":
            rows.append(row)
            row = None
    return rows


def test_answer_markers_are_footnotes_and_the_evidence_table_has_the_right_columns(hostile_session):
    document = load(hostile_session)
    text = render(document, "md")
    tokens = _tokens(text)
    inline = [child for token in tokens if token.type == "inline" for child in token.children or []]
    references = {child.meta["label"] for child in inline if child.type == "footnote_ref"}
    definitions = {t.meta["label"] for t in tokens if t.type == "footnote_open"} | {
        t.meta.get("label") for t in tokens if t.type == "footnote_reference_open"
    }
    cited = report_model(document).citations
    numbers = {str(citation.number) for citation in cited}
    assert len(numbers) >= 3 and references == numbers and numbers <= definitions
    rows = _table(tokens)
    assert rows[0] == COLUMNS
    evidence = sum(len(citation.evidence) for citation in cited)
    assert len(rows) == 1 + evidence and all(len(row) == len(COLUMNS) for row in rows)  # `|` splits no cell
    hostile = next(row for row in rows if "onerror" in row[5])
    assert hostile[4] == "logs/web.log:3"
    html = _parser().render(text)
    assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in html


def test_each_evidence_row_lists_the_facts_the_gate_matched():
    text = render(load(sample("broad-order-service")), "md")
    rows = {row[3]: row[6] for row in _table(_tokens(text))[1:]}
    assert rows["$.alerts\\[0\\]"] == (
        "firing = $.alerts\\[0\\].state firing; 91% = $.alerts\\[0\\].value 91.0%; "
        "18 minutes = $.alerts\\[0\\].duration 18m"
    )
    assert rows["$.no\\_evidence"] == "-"
    assert " = $.alerts" not in render(load(sample("broad-order-service")), "md", brief=True)


def test_brief_is_the_answer_and_its_citations_only(hostile_session):
    text = render(load(hostile_session), "md", brief=True)
    tokens = _tokens(text)
    assert not any(t.type == "table_open" for t in tokens) and not any(t.type == "heading_open" for t in tokens)
    assert text.count("[^") >= 6 and len(text) < len(render(load(hostile_session), "md"))


def test_a_log_lines_backticks_and_brackets_stay_literal(hostile_session):
    html = _parser().render(render(load(hostile_session), "md"))
    assert "<code>tick</code>" not in html and "`tick`" in html
    assert "pipe [1]" in html


@pytest.fixture(scope="module")
def control_session(tmp_path_factory):
    return control_export(tmp_path_factory)


def test_control_characters_are_shown_visibly_not_written_raw(control_session):
    shown = "status=503 \\x1b[2J\\x1b]0;PWNED\\x07 \\x1b]8;;https://attacker.example\\x1b\\click"
    markdown = render(load(control_session), "md")
    html = render(load(control_session), "html")

    for text in (markdown, html):
        assert not [c for c in RAW_CONTROLS if c in text], text
    assert shown in _parser().render(markdown) and "\\x9b2J \\u202eevil\\u202c" in _parser().render(markdown)
    assert shown in html and "\\x9b2J \\u202eevil\\u202c" in html
