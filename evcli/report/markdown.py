"""The Markdown report (GitHub-flavoured): short enough to paste into a ticket or a chat.

The answer keeps its `[n]` markers as footnote references `[^n]`; each footnote names the cited
tool call, ref and excerpt. The full report adds verdict and gate badges in one line and an
evidence table, with the facts the gate matched in each ref; `brief` is the answer and its
footnotes only. Session text is escaped for Markdown: `<`, `>` and `&` become entities (a log line
never turns into HTML), link brackets and backticks are backslash-escaped, and in table cells `|`
is too and newlines become spaces.
"""

from __future__ import annotations

import re

from evcli.report.model import Citation, ReportModel, fact_text

_CITE = re.compile(r"\\\[(\d+)\\\]")
_SPECIAL = re.compile(r"([\\`*_\[\]#|~])")


def render_markdown(report: ReportModel, *, brief: bool = False) -> str:
    lines = [] if brief else _head(report)
    lines += [_answer(report), ""]
    lines += [_footnote(citation) for citation in report.citations]
    if not brief and report.citations:
        lines += ["", "### Evidence", "", *_table(report.citations)]
    return "\n".join(lines).rstrip() + "\n"


def text(value: str) -> str:
    """Session text as literal Markdown inline text."""
    escaped = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", escaped)


def cell(value: str) -> str:
    """Session text as one table cell: literal, on one line."""
    return text(" ".join(value.split()))


def _head(report: ReportModel) -> list[str]:
    gate = f"{report.gate_status or '-'}/{report.gate_severity or '-'}"
    return [
        f"## {text(report.question) or '(no question)'}",
        "",
        f"**Verdict** `{report.verdict or 'none'}` · **gate** `{gate}` · session `{report.session_id}`",
        "",
    ]


def _answer(report: ReportModel) -> str:
    known = {citation.number for citation in report.citations}
    answer = "\n".join(line.rstrip() + "  " for line in text(report.answer).splitlines()).rstrip()

    def footnote(found: re.Match[str]) -> str:
        number = int(found.group(1))
        return f"[^{number}]" if number in known else found.group(0)

    return _CITE.sub(footnote, answer) or "(no answer was composed)"


def _footnote(citation: Citation) -> str:
    refs = "; ".join(
        f"{text(e.tool_name)} \\#{e.invocation_id} {text(e.raw_path)}"
        + (f" ({text(e.source)})" if e.source else "")
        + f": “{text(' '.join(e.excerpt.split()))}”"
        for e in citation.evidence
    )
    return f"[^{citation.number}]: {refs}"


def _table(citations: list[Citation]) -> list[str]:
    rows = ["| # | claim | tool | ref | source | excerpt | facts |", "|---|---|---|---|---|---|---|"]
    for citation in citations:
        for evidence in citation.evidence:
            facts = "; ".join(fact_text(fact) for fact in evidence.facts) or "-"
            rows.append(
                f"| {citation.number} | {cell(citation.claim_text)} | {cell(evidence.tool_name)} \\#{evidence.invocation_id} "
                f"| {cell(evidence.raw_path)} | {cell(evidence.source or '-')} | {cell(evidence.excerpt)} | {cell(facts)} |"
            )
    return rows
