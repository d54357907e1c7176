"""`evcli kb index|search`: the runbook knowledge index."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evcli.cli._common import JsonOption, err, handles_errors, out, print_json, required_text, safe
from evcli.resources import packaged_envs_text

if TYPE_CHECKING:
    from evcli.kb.index import KnowledgeIndex

app = typer.Typer(help="Index runbooks and search them (SQLite FTS5).", no_args_is_help=True)

KbOption = Annotated[
    Path | None, typer.Option("--kb", dir_okay=False, help="Index file (default: kb.db next to the trace store).")
]


def _open(kb: Path | None):
    from evcli.kb.index import KnowledgeIndex

    return KnowledgeIndex(kb)  # None: kb.db next to the trace store


def _as_dict(item) -> dict:
    return item.model_dump(mode="json") if hasattr(item, "model_dump") else item.as_dict()


def _named(directory: Path) -> Path:
    """A directory, or the packaged environment a bare name stands for (`edge`), as `--env` takes it."""
    from evcli.backends.spec import resolve_env_dir

    return resolve_env_dir(directory)


def _default_directory(index: KnowledgeIndex) -> Path:
    """The directory `kb index` indexed last, else the packaged demo runbooks; said on stderr."""
    from evcli.backends.snapshot import demo_env_dir

    directory = index.default_directory()
    if directory is not None:
        err.print(f"searching {safe(directory)} (the directory `evcli kb index` indexed last)", highlight=False)
        return directory
    directory = demo_env_dir()
    why = "the packaged demo runbooks; `evcli kb index DIR` to search yours by default"
    err.print(f"searching {safe(directory)} ({why})", highlight=False)
    return directory


@app.command("index")
@handles_errors
def index_command(
    directory: Annotated[
        Path,
        typer.Argument(
            file_okay=False,
            help="Runbook directory, or an environment snapshot with runbooks/ (a packaged one by name: "
            f"{packaged_envs_text()}); `kb search` searches it from now on when it names no directory.",
        ),
    ],
    kb: KbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Index runbooks; unchanged files are skipped, changed ones re-indexed, deleted ones dropped."""
    report = _as_dict(_open(kb).index_dir(_named(directory), as_default=True))
    if json_output:
        print_json(report)
        return
    out.print(
        f"{safe(report['directory'])}: {report['added']} added, {report['updated']} updated, {report['removed']} removed, "
        f"{report['unchanged']} unchanged · {report['chunks']} blocks · {report['seconds']:.3f}s"
    )


@app.command("search")
@handles_errors
def search_command(
    query: Annotated[str, typer.Argument(help="What to look for (English or Chinese).")],
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            "--env",
            file_okay=False,
            help=f"Restrict to (and first index) this directory, or a packaged environment: {packaged_envs_text()}"
            " (default: the directory `kb index` indexed last, else the packaged demo runbooks; said on stderr).",
        ),
    ] = None,
    alertname: Annotated[str | None, typer.Option("--alertname", help="Alert name hint for L0.")] = None,
    service: Annotated[str | None, typer.Option("--service", help="Service hint for L0.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=50, help="How many blocks at most.")] = 5,
    kb: KbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Ranked runbook blocks with relevance level (PRECISE / HIGHLY_RELEVANT / REFERENCE) and layer (L0 / L1)."""
    required_text(query, "the query")
    index = _open(kb)
    directory = _named(directory) if directory is not None else _default_directory(index)
    index.index_dir(directory)
    blocks = [
        _as_dict(block)
        for block in index.search(query, limit=limit, alertname=alertname, service=service, directory=directory)
    ]
    if json_output:
        print_json(blocks)
        return
    if not blocks:
        err.print("no matching runbook blocks")
        return
    for rank, block in enumerate(blocks, start=1):
        out.print(
            f"[bold]{rank}. {safe(block['doc'])} › {safe(block['heading'])}[/] · {block['relevance_level']} · "
            f"{block['layer']} · score {block['score']}"
        )
        out.print(f"   {safe(block['text'][:400])}" + ("…" if len(block["text"]) > 400 else ""))
