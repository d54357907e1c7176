"""The Composer's answer read once into blocks, so every report format writes the same structure.

The Composer writes text with a little Markdown: the offline one a line ending in ":" over "- "
items, a model maybe headings, lists, code and emphasis. `answer_blocks(text)` reads it into
headings, paragraphs, lists and code blocks whose inline content is a list of spans (text, code,
strong, emphasis, `[n]` citation); each renderer writes them in its medium's syntax and escapes
span text for that medium. Invariants:
  - span text is verbatim (never escaped here); only the markup read is dropped: fences, list
    markers, `#`s, the `**`/`*`/`_` around emphasis and the backticks around code;
  - what is not well-formed markup (an unclosed `**`, a lone backtick, `_` inside a word such as
    `no_evidence`) stays text;
  - a line ending in ":" (or "：") directly over a list item is a heading of that list: the shape
    of a labelled list, whatever its words;
  - every `[digits]` is a citation span; a renderer links it only when the report cites that number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

SpanKind = Literal["text", "code", "strong", "emphasis", "cite"]


@dataclass(frozen=True)
class Span:
    kind: SpanKind
    text: str  # verbatim; for a citation, its number


@dataclass(frozen=True)
class Heading:
    level: int  # 1..6 as written with `#`s; a labelled list's heading is 1
    spans: list[Span]


@dataclass(frozen=True)
class Paragraph:
    lines: list[list[Span]]  # the answer's own line breaks are kept


@dataclass(frozen=True)
class ListBlock:
    ordered: bool
    items: list[list[Span]]
    start: int = 1


@dataclass(frozen=True)
class CodeBlock:
    text: str
    language: str = ""


Block = Heading | Paragraph | ListBlock | CodeBlock


@dataclass
class _Reader:
    blocks: list[Block] = field(default_factory=list)
    paragraph: list[list[Span]] = field(default_factory=list)
    items: list[str] = field(default_factory=list)
    ordered: bool = False
    start: int = 1

    def flush(self) -> None:
        if self.paragraph:
            self.blocks.append(Paragraph(self.paragraph))
            self.paragraph = []
        if self.items:
            self.blocks.append(ListBlock(self.ordered, [spans(item) for item in self.items], self.start))
            self.items = []


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_BULLET = re.compile(r"^\s*[-*+•][ \t]+(\S.*)$")
_NUMBERED = re.compile(r"^\s*(\d{1,9})[.)][ \t]+(\S.*)$")
_LABEL_END = (":", "：")


def answer_blocks(text: str) -> list[Block]:
    """The blocks of an answer, in order (an empty answer has none)."""
    reader = _Reader()
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        fence = _FENCE.match(line)
        if fence:
            reader.flush()
            index = _code_block(lines, index, fence.group(1), fence.group(2), reader.blocks)
            continue
        _line(reader, line, lines[index + 1] if index + 1 < len(lines) else "")
        index += 1
    reader.flush()
    return reader.blocks


def _line(reader: _Reader, line: str, following: str) -> None:
    heading = _HEADING.match(line)
    item = _BULLET.match(line) or _NUMBERED.match(line)
    if not line.strip():
        reader.flush()
    elif heading:
        reader.flush()
        reader.blocks.append(Heading(len(heading.group(1)), spans((heading.group(2) or "").strip())))
    elif item:
        ordered = item.re is _NUMBERED
        if reader.paragraph or (reader.items and reader.ordered != ordered):
            reader.flush()
        if not reader.items:
            reader.ordered, reader.start = ordered, int(item.group(1)) if ordered else 1
        reader.items.append(item.group(item.lastindex or 1).strip())
    elif reader.items and line[:1].isspace():  # an indented line continues the item above it
        reader.items[-1] += " " + line.strip()
    elif line.rstrip().endswith(_LABEL_END) and (_BULLET.match(following) or _NUMBERED.match(following)):
        reader.flush()
        reader.blocks.append(Heading(1, spans(line.strip())))
    else:
        if reader.items:
            reader.flush()
        reader.paragraph.append(spans(line.strip()))


def _code_block(lines: list[str], index: int, fence: str, language: str, blocks: list[Block]) -> int:
    """Read the fenced block opening at `index` (to its closing fence, else to the end); the next index."""
    closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
    body = []
    index += 1
    while index < len(lines) and not closing.match(lines[index]):
        body.append(lines[index])
        index += 1
    blocks.append(CodeBlock("\n".join(body), language))
    return index + 1


# Code first (nothing inside code is markup), then strong before emphasis, then citations.
_INLINE = re.compile(
    r"(?P<ticks>`+)(?P<code>.+?)(?<!`)(?P=ticks)(?!`)"
    r"|\*\*(?P<strong>[^\s*](?:.*?[^\s*])?)\*\*"
    r"|(?<![\w_])__(?P<strong_>[^\s_](?:.*?[^\s_])?)__(?![\w_])"
    r"|\*(?P<emphasis>[^\s*](?:.*?[^\s*])?)\*"
    r"|(?<![\w_])_(?P<emphasis_>[^\s_](?:.*?[^\s_])?)_(?![\w_])"
    r"|\[(?P<cite>\d{1,4})\]"
)
_EMPHASIS: tuple[tuple[SpanKind, str], ...] = (
    ("strong", "strong"),
    ("strong", "strong_"),
    ("emphasis", "emphasis"),
    ("emphasis", "emphasis_"),
)


def spans(text: str) -> list[Span]:
    """One line of answer text as spans; adjacent text is one span."""
    found: list[Span] = []
    last = 0
    for match in _INLINE.finditer(text):
        found.append(Span("text", text[last : match.start()]))
        found.append(_span(match))
        last = match.end()
    found.append(Span("text", text[last:]))
    merged: list[Span] = []
    for span in found:
        if span.kind == "text" and merged and merged[-1].kind == "text":
            merged[-1] = Span("text", merged[-1].text + span.text)
        elif span.text or span.kind != "text":
            merged.append(span)
    return merged


def _span(match: re.Match[str]) -> Span:
    groups = match.groupdict()
    if groups["code"] is not None:
        code = groups["code"]
        # CommonMark: one space each side is padding when both are there and the code is not all spaces
        if len(code) > 2 and code[0] == code[-1] == " " and code.strip():
            code = code[1:-1]
        return Span("code", code)
    for kind, name in _EMPHASIS:
        if groups[name] is not None:
            return Span(kind, groups[name])
    return Span("cite", groups["cite"])


def plain(line: list[Span]) -> str:
    """A line of spans as plain text: the words a reader sees, citations as `[n]`."""
    return "".join(f"[{span.text}]" if span.kind == "cite" else span.text for span in line)
