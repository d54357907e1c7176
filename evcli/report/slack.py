"""The Slack form of a report: one Block Kit message, its text in Slack's mrkdwn.

`slack_message(report, report_url=None)` returns the message as a dict (`text` for notifications,
`blocks`), ready for chat.postMessage or an incoming webhook. Blocks, in order: a header (the
question); a section whose fields are the verdict and the gate; the answer as sections (a heading in
*bold*, list items after "•" or "1.", code in backticks or ``` blocks, `[n]` as the answer wrote
them); a divider; the sources, one line per cited claim (`*[n]*`, its text, and each ref as a short
reference: tool #invocation raw_path · source); a context block naming the session, linked
`<url|text>` to the HTML report when `report_url` is given (each known `[n]` then links to its
evidence there too).

Slack's rules, which tests/report/test_slack.py checks on every text:
  - `&`, `<` and `>` are written `&amp;`, `&lt;`, `&gt;` in every mrkdwn text, code included; the
    only `<…>` are links built here (http and https only; `|`, `<`, `>` and spaces percent-encoded);
  - mrkdwn has no escape for `*`, `_`, `~` and the backtick: one in session text that could open or
    close formatting (not inside a word, not between spaces) is written as a look-alike (∗ ＿ ∼ ˋ);
    inside code only the backtick is; a line starting with `>` (a quote) starts with `＞`; an
    `:emoji:` shortcode's first colon is `∶`, so "root:x:0" stays text;
  - no backslash escapes, no footnotes; every text object is `verbatim`, so Slack links no URL,
    channel or mention found in session text;
  - limits: header 150 characters, a section's text 3000, a field 2000, at most 10 fields and 10
    context elements, at most 50 blocks. What does not fit is cut between lines, or inside one span
    of a line too long, and ends with TRUNCATED; sections past the block limit are replaced by one
    that says how many were left out and how to see them all.
Control characters are made visible (`console.visible`) first, as in every report.
"""

from __future__ import annotations

import re
from typing import Any, Literal, NamedTuple
from urllib.parse import quote, urlsplit

from evcli.core.console import visible
from evcli.report.answer import Block, CodeBlock, Heading, ListBlock, Span, answer_blocks, plain
from evcli.report.cited import Citation, CitedEvidence
from evcli.report.model import ReportModel

HEADER_LIMIT, TEXT_LIMIT, FIELD_LIMIT, MAX_BLOCKS = 150, 3000, 2000, 50
TRUNCATED = " … [truncated: Slack shows at most {limit} characters here]"
LEFT_OUT = "… [{count} more sections not shown: Slack shows at most {limit} blocks. Full report: {where}]"
LOOK_ALIKES = {"*": "∗", "_": "＿", "~": "∼", "`": "ˋ"}
_EMOJI = re.compile(r":(?=[a-z0-9_+'-]*[a-z][a-z0-9_+'-]*:)")


PieceKind = Literal["text", "code", "strong", "emphasis", "codeblock", "cite", "link", "raw"]


class Piece(NamedTuple):
    """One part of a line: session text to escape (text, code, strong, emphasis, codeblock), a
    citation number, a link, or markup written as is (raw)."""

    kind: PieceKind
    text: str
    url: str = ""


Line = list[Piece]


def slack_message(report: ReportModel, *, report_url: str | None = None) -> dict[str, Any]:
    """The report as a Block Kit message; `report_url` (http or https, else ignored) links the HTML report."""
    url = report_url if report_url and urlsplit(report_url).scheme in ("http", "https") else None
    cited = {str(citation.number) for citation in report.citations} if url else set()
    answer = _sections(_answer_lines(report.answer, cited, url))
    sources = _sections([_source_line(citation, url) for citation in report.citations])
    body = [*answer, {"type": "divider"}, *sources] if sources else answer
    context = _context(report, url)
    room = MAX_BLOCKS - 3  # the header, the verdict and the context
    if len(body) > room:
        where = f"<{_url(url)}|the HTML report>" if url else f"`evcli report {mrkdwn_code(report.session_id)}`"
        notice = LEFT_OUT.format(count=len(body) - room + 1, limit=MAX_BLOCKS, where=where)
        body = [*body[: room - 1], _section(notice)]
    return {"text": _fallback(report), "blocks": [_header(report), _verdict(report), *body, context]}


def _header(report: ReportModel) -> dict[str, Any]:
    question = " ".join(visible(report.question).split()) or "(no question)"
    if len(question) > HEADER_LIMIT:
        question = question[: HEADER_LIMIT - 1] + "…"
    return {"type": "header", "text": {"type": "plain_text", "text": question, "emoji": False}}


def _verdict(report: ReportModel) -> dict[str, Any]:
    gate = f"{report.gate_status or '-'}/{report.gate_severity or '-'}"
    fields = [f"*Verdict*\n`{mrkdwn_code(report.verdict or 'none')}`", f"*Gate*\n`{mrkdwn_code(gate)}`"]
    fields.append(f"*Cited claims*\n{len(report.citations)}")
    return {"type": "section", "fields": [_mrkdwn(field) for field in fields]}


def _context(report: ReportModel, url: str | None) -> dict[str, Any]:
    session = f"session `{mrkdwn_code(report.session_id)}`"
    report_link = (
        f"<{_url(url)}|full report>" if url else f"full report: `evcli report {mrkdwn_code(report.session_id)}`"
    )
    return {"type": "context", "elements": [_mrkdwn(session), _mrkdwn(report_link)]}


def _fallback(report: ReportModel) -> str:
    """The notification text: the question and the verdict."""
    line = [Piece("text", report.question or "(no question)"), Piece("raw", " — verdict ")]
    return _fit([*line, Piece("code", report.verdict or "none")], TEXT_LIMIT)


def _answer_lines(answer: str, cited: set[str], url: str | None) -> list[Line]:
    blocks = answer_blocks(answer)
    if not blocks:
        return [[Piece("emphasis", "(no answer was composed)")]]
    lines: list[Line] = []
    for index, block in enumerate(blocks):
        if index and not isinstance(blocks[index - 1], Heading):
            lines.append([])  # a blank line between blocks, none under a heading
        lines += _block_lines(block, cited, url)
    return lines


def _block_lines(block: Block, cited: set[str], url: str | None) -> list[Line]:
    if isinstance(block, Heading):
        return [[Piece("strong", plain(block.spans))]]
    if isinstance(block, CodeBlock):
        return [[Piece("codeblock", block.text)]]
    if isinstance(block, ListBlock):
        return [
            [Piece("raw", f"{block.start + n}. " if block.ordered else "• "), *_pieces(item, cited, url)]
            for n, item in enumerate(block.items)
        ]
    return [_pieces(line, cited, url) for line in block.lines]


def _pieces(spans: list[Span], cited: set[str], url: str | None) -> Line:
    return [
        Piece("link", f"[{span.text}]", f"{url}#cite-{span.text}")
        if span.kind == "cite" and span.text in cited and url
        else Piece(span.kind, span.text)
        for span in spans
    ]


def _source_line(citation: Citation, url: str | None) -> Line:
    number = Piece("link", f"[{citation.number}]", f"{url}#cite-{citation.number}") if url else None
    line = [number or Piece("strong", f"[{citation.number}]"), Piece("raw", " "), Piece("text", citation.claim_text)]
    for index, evidence in enumerate(citation.evidence):
        line += [Piece("raw", " — " if index == 0 else ", "), Piece("code", _reference(evidence))]
    return line


def _reference(evidence: CitedEvidence) -> str:
    """A ref in a few words: `query_logs #3 $.logs[1] · logs/web.log:3`."""
    reference = f"{evidence.tool_name} #{evidence.invocation_id} {evidence.raw_path}"
    return f"{reference} · {evidence.source}" if evidence.source else reference


def _sections(lines: list[Line]) -> list[dict[str, Any]]:
    """The lines packed into sections of at most TEXT_LIMIT characters, each line whole unless it
    alone is longer (then cut, with TRUNCATED)."""
    texts: list[str] = []
    for line in lines:
        shown = _fit(line, TEXT_LIMIT)
        if texts and len(texts[-1]) + 1 + len(shown) <= TEXT_LIMIT:
            texts[-1] += "\n" + shown
        elif shown:  # a blank line does not start a section
            texts.append(shown)
    return [_section(text.rstrip("\n")) for text in texts]


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": _mrkdwn(text)}


def _mrkdwn(text: str) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": text, "verbatim": True}


def _fit(line: Line, limit: int) -> str:
    """The line in mrkdwn, cut inside the first span that does not fit when it is longer than `limit`."""
    whole = _quote_free("".join(_render(piece) for piece in line))
    if len(whole) <= limit:
        return whole
    marker = TRUNCATED.format(limit=limit)
    room = limit - len(marker)
    shown = ""
    for piece in line:
        rendered = _render(piece)
        if len(shown) + len(rendered) > room:
            shown += _longest(piece, room - len(shown))
            break
        shown += rendered
    return _quote_free(shown) + marker


def _quote_free(line: str) -> str:
    """A line that Slack would show as a quote (it starts with `>`, even escaped) starts with `＞`."""
    return "＞" + line.removeprefix("&gt;") if line.startswith("&gt;") else line


def _longest(piece: Piece, room: int) -> str:
    """The longest start of `piece` whose mrkdwn fits in `room` characters ("" when none does)."""
    if piece.kind in ("raw", "cite", "link"):
        return ""
    low, high = 0, len(piece.text)
    while low < high:  # the rendering grows with the prefix: a binary search finds the longest
        middle = (low + high + 1) // 2
        if len(_render(piece._replace(text=piece.text[:middle]))) <= room:
            low = middle
        else:
            high = middle - 1
    return _render(piece._replace(text=piece.text[:low])) if low else ""


def _render(piece: Piece) -> str:
    if piece.kind == "raw":
        return piece.text
    if piece.kind == "cite":
        return f"[{piece.text}]"
    if piece.kind == "link":
        return f"<{_url(piece.url)}|{_escape(piece.text)}>"
    if piece.kind == "codeblock":
        return f"```\n{mrkdwn_code(piece.text, lines=True)}\n```"
    if piece.kind == "code":
        code = mrkdwn_code(piece.text)
        return f"`{code}`" if code else ""
    wrap = {"strong": "*", "emphasis": "_"}.get(piece.kind, "")
    shown = mrkdwn_text(piece.text)
    return f"{wrap}{shown}{wrap}" if shown and wrap else shown


def _escape(value: str) -> str:
    return visible(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def mrkdwn_text(value: str) -> str:
    """Session text as mrkdwn that shows as written (on one line)."""
    value = " ".join(visible(value).splitlines())
    shown = []
    for index, char in enumerate(value):
        # past the piece's ends the neighbour is unknown (another piece): taken as punctuation, the strict case
        before = value[index - 1] if index else "\0"
        after = value[index + 1] if index + 1 < len(value) else "\0"
        between_spaces = before.isspace() and after.isspace()
        inside_word = char == "_" and before.isalnum() and after.isalnum()
        keep = char not in LOOK_ALIKES or between_spaces or inside_word
        shown.append(char if keep else LOOK_ALIKES[char])
    return _escape(_EMOJI.sub("∶", "".join(shown)))


def mrkdwn_code(value: str, *, lines: bool = False) -> str:
    """Session text inside code: only the backtick (which would end it) is replaced."""
    value = visible(value) if lines else " ".join(visible(value).splitlines())
    return _escape(value.replace("`", LOOK_ALIKES["`"]))


def _url(url: str | None) -> str:
    return quote(url or "", safe=":/?#[]@!$&'()*+,;=%-._~").replace("&", "&amp;")
