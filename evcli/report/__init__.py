"""Reports of a session to open or paste: `report_model` reads a session, a renderer writes a format.

`render(document, format, brief=...)` is the one entry point; FORMATS names the formats a renderer
exists for (html, md). Pure: no store, no environment, no network. A report holds no raw control
character (C0 but newline and tab, DEL, C1, bidi overrides): they are shown as `\\x1b`-style text
(`console.visible`), so a report printed to, or `cat` on, a terminal cannot drive it, and a
browser shows what a log line really held.
"""

from __future__ import annotations

from evcli.contracts import SessionDocument

FORMATS = ("html", "md")


def render(document: SessionDocument, format: str, *, brief: bool = False) -> str:
    """The report of `document` in `format` (one of FORMATS); `brief` (md): the answer and its citations only."""
    from evcli.console import visible
    from evcli.report.model import report_model

    model = report_model(document)
    if format == "html":
        from evcli.report.html import render_html

        return visible(render_html(model))
    if format == "md":
        from evcli.report.markdown import render_markdown

        return visible(render_markdown(model, brief=brief))
    raise ValueError(f"unknown report format {format!r}; expected one of {', '.join(FORMATS)}")
