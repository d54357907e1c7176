"""Reports of a session to open or paste: `report_model` reads a session, a renderer writes a format.

`render(document, format, brief=..., report_url=...)` is the one entry point; FORMATS names the
formats a renderer exists for: html (a file to open), md (Markdown; `brief`: the form for chat) and
slack (a Block Kit message as JSON; `slack_message` gives it as a dict to post). Pure: no store, no
environment, no network. A report holds no raw control character (C0 but newline and tab, DEL, C1,
bidi overrides): they are shown as `\\x1b`-style text (`console.visible`), so a report printed to,
or `cat` on, a terminal cannot drive it, and a browser or chat shows what a log line really held.
"""

from __future__ import annotations

from typing import Any

from evcli.contracts import SessionDocument

FORMATS = ("html", "md", "slack")


def render(document: SessionDocument, format: str, *, brief: bool = False, report_url: str | None = None) -> str:
    """The report of `document` in `format` (one of FORMATS); `brief` (md): the answer and its
    sources only; `report_url` (slack): where the HTML report is served, linked from the message."""
    from evcli.core.console import visible
    from evcli.report.model import report_model

    model = report_model(document)
    if format == "html":
        from evcli.report.html import render_html

        return visible(render_html(model))
    if format == "md":
        from evcli.report.markdown import render_markdown

        return visible(render_markdown(model, brief=brief))
    if format == "slack":
        import json

        from evcli.core.console import json_safe
        from evcli.report.slack import slack_message

        return json_safe(json.dumps(slack_message(model, report_url=report_url), ensure_ascii=False, indent=2)) + "\n"
    raise ValueError(f"unknown report format {format!r}; expected one of {', '.join(FORMATS)}")


def slack_message(document: SessionDocument, *, report_url: str | None = None) -> dict[str, Any]:
    """The session's report as a Slack Block Kit message (`text` and `blocks`), to post as JSON."""
    from evcli.report.model import report_model
    from evcli.report.slack import slack_message as message

    return message(report_model(document), report_url=report_url)
