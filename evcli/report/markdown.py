"""The Markdown report: the answer and its sources in Markdown that Slack, Teams and GitHub render.

`brief` is the form for chat: the answer and a "Sources:" list only, written with the CommonMark
core constructs those apps share (paragraphs, `- ` and `1.` lists, code spans, fenced code,
emphasis): no footnotes, no tables, no headings, no HTML. Citations stay inline `[n]`, as the
answer wrote them; each source line names the cited tool call, ref, source and excerpt. The full
report (for a GitHub ticket) adds the question as a heading, a verdict line, a GFM evidence table
with the facts the gate matched in each ref, and the drawn traces of evcli.report.traces as text: a
cited trace as an indented span list in a code block, call edges as `caller → callee: N calls, E
errors, p99 X ms` items (nothing when none is cited). The answer's own structure
(evcli.report.answer) is kept: a heading becomes a line of its own, lists stay lists, code stays code.

Escaping: session data (refs, excerpts, session id) is written in code spans, which every renderer
shows literally (a backtick inside gets a longer fence). Text is written as it is, with a backslash
only before a character that would start markup where it stands: `<` opening a tag or autolink, `&`
an entity, `*` `_` `~` that could open or close emphasis, a backtick, `]` before `(`, `\\` before
punctuation, a block marker at the start of a line; never before an ordinary character
(`$.no_evidence`, `#3`, `[0]`, `a|b`, `50/50`). In a table cell `|` is escaped as well (GFM splits
cells on it even inside code) and newlines become spaces. Control characters are made visible
(`console.visible`) before escaping, so their backslashes are text too.
"""

from __future__ import annotations

import re

from evcli.core.console import visible
from evcli.report.answer import Block, CodeBlock, Heading, ListBlock, Span, answer_blocks
from evcli.report.cited import Citation, CitedEvidence
from evcli.report.model import ReportModel, fact_text
from evcli.report.traces import EdgeRow, SpanRow, Waterfall

_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_DELIMITERS = frozenset("*_~")
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{0,31});")
_TAG_START = re.compile(r"[A-Za-z/!?]")
# what a line may not start with unescaped: ATX heading, quote, bullet or thematic break, ordered
# item, fence, setext underline, link reference definition
_LINE_START = re.compile(
    r"^(?:#{1,6}(?=[ \t]|$)|>|[-+*_](?=[ \t]|$)|\d{1,9}(?=[.)](?:[ \t]|$))|`{3}|~{3}|=+[ \t]*$|-+[ \t]*$|\[[^\]]*\]:)"
)


def render_markdown(report: ReportModel, *, brief: bool = False) -> str:
    lines = [] if brief else _head(report)
    lines += _answer(report)
    if report.citations:
        lines += ["", "Sources:" if brief else "### Sources", ""]
        lines += [_source(citation) for citation in report.citations]
    if not brief and report.citations:
        lines += ["", "### Evidence", "", *_table(report.citations)]
    if not brief:
        lines += _traces(report)
    return "\n".join(lines).rstrip() + "\n"


def text(value: str, *, line_start: bool = True) -> str:
    """Session text as literal Markdown inline text, escaped only where a character would be markup."""
    value = visible(value)
    shown = []
    for index, char in enumerate(value):
        # past the span's ends the neighbour is unknown (another span): taken as punctuation, the strict case
        before = value[index - 1] if index else (" " if line_start else "\0")
        after = value[index + 1] if index + 1 < len(value) else "\0"
        shown.append("\\" + char if _is_markup(char, before, after, value, index) else char)
    escaped = "".join(shown)
    start = _LINE_START.match(escaped) if line_start else None
    if start and not escaped.startswith("\\"):
        position = start.end() if start.group()[0].isdigit() else 0  # `1.` is escaped at its `.`
        escaped = escaped[:position] + "\\" + escaped[position:]
    return escaped


def _is_markup(char: str, before: str, after: str, value: str, index: int) -> bool:
    if char == "\\":
        return after in _PUNCTUATION or index + 1 == len(value)
    if char == "`":
        return True
    if char in _DELIMITERS:
        inside_word = char == "_" and before.isalnum() and after.isalnum()  # `*` and `~` work inside words
        return not inside_word and not (before.isspace() and after.isspace())
    if char == "<":
        return bool(_TAG_START.match(after))
    if char == "&":
        return bool(_ENTITY.match(value, index))
    return char == "]" and after == "("


def code(value: str, *, cell: bool = False) -> str:
    """Session data as a code span: shown literally (one line; in a table cell `|` is escaped)."""
    value = " ".join(visible(value).splitlines())
    if not value:
        return ""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", value)), default=0) + 1)
    pad = " " if value[0] == "`" or value[-1] == "`" or (value[0] == value[-1] == " " and value.strip()) else ""
    if cell:
        value = value.replace("|", "\\|")
    return f"{fence}{pad}{value}{pad}{fence}"


def cell(value: str) -> str:
    """Session text as one table cell: literal, on one line."""
    return text(" ".join(value.split()), line_start=False).replace("|", "\\|")


def _head(report: ReportModel) -> list[str]:
    gate = f"{report.gate_status or '-'}/{report.gate_severity or '-'}"
    question = re.sub(r"([ \t])(#+[ \t]*)$", r"\1\\\2", text(report.question, line_start=False))
    return [
        f"## {question or '(no question)'}",
        "",
        f"**Verdict** {code(report.verdict or 'none')} · **gate** {code(gate)} · session {code(report.session_id)}",
        "",
    ]


def _answer(report: ReportModel) -> list[str]:
    blocks = answer_blocks(visible(report.answer))
    if not blocks:
        return ["(no answer was composed)"]
    lines: list[str] = []
    for block in blocks:
        lines += [*_block(block), ""]
    return lines[:-1]


def _block(block: Block) -> list[str]:
    if isinstance(block, Heading):
        return [_inline(block.spans)]
    if isinstance(block, CodeBlock):
        fence = "`" * max([3, *(len(run) + 1 for run in re.findall(r"`{3,}", block.text))])
        language = block.language if re.fullmatch(r"[\w+.-]*", block.language) else ""
        return [f"{fence}{language}", *block.text.splitlines(), fence]
    if isinstance(block, ListBlock):
        number = block.start
        items = []
        for item in block.items:
            marker = f"{number}." if block.ordered else "-"
            items.append(f"{marker} {_inline(item)}")
            number += 1
        return items
    # two trailing spaces: the answer's line breaks are kept (CommonMark's hard break)
    return [line + "  " for line in map(_inline, block.lines[:-1])] + [_inline(block.lines[-1])]


def _inline(spans: list[Span]) -> str:
    shown = []
    for index, span in enumerate(spans):
        if span.kind == "code":
            shown.append(code(span.text))
        elif span.kind == "strong":
            shown.append(f"**{text(span.text, line_start=False)}**")
        elif span.kind == "emphasis":
            shown.append(f"*{text(span.text, line_start=False)}*")
        elif span.kind == "cite":
            following = spans[index + 1].text[:1] if index + 1 < len(spans) else ""
            shown.append(f"[{span.text}\\]" if following == "(" else f"[{span.text}]")  # not a link
        else:
            shown.append(text(span.text, line_start=index == 0))
    return "".join(shown)


def _source(citation: Citation) -> str:
    return f"- [{citation.number}] " + "; ".join(_reference(evidence) for evidence in citation.evidence)


def _reference(evidence: CitedEvidence) -> str:
    where = f"{text(evidence.tool_name, line_start=False)} #{evidence.invocation_id} {code(evidence.raw_path)}"
    if evidence.source:
        where += f" ({text(evidence.source, line_start=False)})"
    excerpt = code(evidence.excerpt)
    return f"{where}: {excerpt}" if excerpt else where


def _table(citations: list[Citation]) -> list[str]:
    rows = ["| # | claim | tool | ref | source | excerpt | facts |", "|---|---|---|---|---|---|---|"]
    for citation in citations:
        for evidence in citation.evidence:
            facts = "; ".join(fact_text(fact) for fact in evidence.facts) or "-"
            rows.append(
                f"| {citation.number} | {cell(citation.claim_text)} | {cell(evidence.tool_name)} #{evidence.invocation_id} "
                f"| {code(evidence.raw_path, cell=True)} | {code(evidence.source or '', cell=True) or '-'} "
                f"| {code(evidence.excerpt, cell=True) or '-'} | {cell(facts)} |"
            )
    return rows


def _traces(report: ReportModel) -> list[str]:
    """The cited traces and call edges (evcli.report.traces) as text; nothing when there are none."""
    lines = []
    for trace in report.waterfalls:
        lines += ["", f"Trace {code(trace.trace_id)}, ms since {code(trace.start)}:", "", *_block(_span_list(trace))]
    for graph in report.call_graphs:
        lines += ["", f"Call edges of {text(graph.tool_name, line_start=False)} #{graph.invocation_id}:", ""]
        lines += [_edge_line(row) for row in graph.rows]
        lines += [f"- … and {graph.more} more edges (not listed)"] if graph.more else []
    return ["", "### Traces", *lines] if lines else []


def _span_list(trace: Waterfall) -> CodeBlock:
    """One line per drawn span: its start offset and duration, indented by depth, errors and citations marked."""
    rows = [f"{'start ms':>9}  {'took ms':>9}  span", *(_span_line(row) for row in trace.rows)]
    rows += [f"… and {trace.more} more spans (not listed)"] if trace.more else []
    return CodeBlock("\n".join(rows), "text")


def _span_line(row: SpanRow) -> str:
    name = " ".join(f"{row.service or '(no service)'} {row.operation}".split())
    error = "  ✕ error" if row.error else ""
    start = f"+{row.offset_ms:g}"
    return f"{start:>9}  {row.duration_ms:>9g}  {'  ' * row.depth}{name}{error}{_cites(row.citations)}"


def _edge_line(row: EdgeRow) -> str:
    """`- caller → callee: N calls, E errors, p99 X ms [n]`."""
    p99 = "-" if row.p99_ms is None else f"{row.p99_ms:g} ms"
    edge = f"{text(row.caller, line_start=False)} → {text(row.callee, line_start=False)}"
    return f"- {edge}: {row.calls} calls, {row.errors} errors, p99 {p99}{_cites(row.citations)}"


def _cites(numbers: list[int]) -> str:
    return " " + "".join(f"[{number}]" for number in numbers) if numbers else ""
