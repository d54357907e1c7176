"""`evcli report SESSION|FILE --format html|md|slack`: a report to open in a browser, paste into a
ticket or a chat, or post to Slack; and `ask --format`, the answer printed in one of those forms."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from evcli.cli._common import DbOption, err, handles_errors, load_source, safe
from evcli.core.errors import BadInput

FormatOption = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="html (one self-contained file), md (Markdown: with --brief, the form for chat) or slack"
        " (a Slack Block Kit message, JSON).",
    ),
]


class AnswerFormat(StrEnum):
    text = "text"
    md = "md"
    slack = "slack"


AnswerFormatOption = Annotated[
    AnswerFormat,
    typer.Option(
        "--format",
        help="text (the answer, its evidence and the verdict), md (the answer and its sources in Markdown for chat)"
        " or slack (a Slack Block Kit message, JSON).",
    ),
]


@handles_errors
def report_command(
    source: Annotated[
        str,
        typer.Argument(help="A stored session id, a unique prefix of it, `last`, or an exported session JSON file."),
    ],
    format: FormatOption = "html",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", dir_okay=False, help="Write the report here (default: stdout).")
    ] = None,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the HTML report in the browser (a temporary file unless -o names one).")
    ] = False,
    brief: Annotated[
        bool,
        typer.Option(
            "--brief",
            help="md: the answer and its sources only, in Markdown that Slack, Teams and GitHub render (for chat).",
        ),
    ] = False,
    db: DbOption = None,
) -> None:
    """Write a session's report: answer, cited evidence, timeline, charts, plan, tool calls, gate and verifier."""
    from evcli.report import FORMATS

    if format not in FORMATS:
        raise BadInput(f"--format must be one of {', '.join(FORMATS)}, not {format!r}")
    if open_browser and format != "html":
        raise BadInput("--open opens an HTML report", hint="use --format html")
    document, _ = load_source(source, db)
    if open_browser and output is None:
        import tempfile

        output = Path(tempfile.mkdtemp(prefix="evcli-report-")) / f"{document.run.session_id}.html"
    written = write_report(document, format, output, brief=brief)
    if written is None:
        sys.stdout.write(_rendered(document, format, brief))
        return
    err.print(f"report written to {safe(str(written))}", highlight=False)
    if open_browser:
        import webbrowser

        webbrowser.open(written.resolve().as_uri())


def check_answer_format(answer_format: AnswerFormat, json_output: bool) -> None:
    """`ask --format md|slack` prints a report form of the answer: it cannot be combined with --json."""
    if json_output and answer_format is not AnswerFormat.text:
        raise BadInput(f"--format {answer_format.value} and --json both choose the output", hint="use one of them")


def print_answer(document, answer_format: AnswerFormat) -> None:
    """The answer of a finished run as `ask --format md|slack` prints it (md: the brief form for chat)."""
    sys.stdout.write(_rendered(document, answer_format.value, True))


def _rendered(document, format: str, brief: bool) -> str:
    from evcli.report import render

    return render(document, format, brief=brief)


def write_report(document, format: str, output: Path | None, *, brief: bool = False) -> Path | None:
    """Write the report to `output` (None: nothing written), replacing a symlink there rather than
    writing through it. Used by `report`, `ask --report` and `aiops --report-dir`."""
    from evcli.core.userfiles import write_output

    if output is None:
        return None
    try:
        write_output(output, _rendered(document, format, brief))
    except OSError as exc:
        raise BadInput(f"cannot write {output}: {exc.strerror or exc}") from exc
    return output


def format_of(path: Path) -> str:
    """The report format a file name asks for: .md/.markdown → md, anything else → html."""
    return "md" if path.suffix.lower() in (".md", ".markdown") else "html"
