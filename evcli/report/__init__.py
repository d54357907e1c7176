"""Reports of a session to open or paste: `report_model` reads a session, a renderer writes a format.

`render(document, format, brief=...)` is the one entry point; FORMATS names the formats a renderer
exists for (html, md). Pure: no store, no environment, no network.
"""

from __future__ import annotations

from evcli.contracts import SessionDocument

FORMATS = ("html", "md")


def render(document: SessionDocument, format: str, *, brief: bool = False) -> str:
    """The report of `document` in `format` (one of FORMATS); `brief` (md): the answer and its citations only."""
    from evcli.report.model import report_model

    model = report_model(document)
    if format == "html":
        from evcli.report.html import render_html

        return render_html(model)
    if format == "md":
        from evcli.report.markdown import render_markdown

        return render_markdown(model, brief=brief)
    raise ValueError(f"unknown report format {format!r}; expected one of {', '.join(FORMATS)}")
