"""What every command shares: error handling, the store, session sources, the examples in its help."""

from __future__ import annotations

import functools
import inspect
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperCommand, TyperGroup

from evcli.core.console import err, json_safe, out, safe
from evcli.core.errors import EXIT_INTERRUPTED, EXIT_RUNTIME, expected_failure
from evcli.resources import packaged_envs_text

DbOption = Annotated[
    Path | None,
    typer.Option("--db", help="Trace store file (default: $EVCLI_HOME/evcli.db or the user data dir).", dir_okay=False),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON to stdout.")]
NoPagerOption = Annotated[
    bool, typer.Option("--no-pager", help="Print long output straight to the terminal, without $PAGER.")
]
EnvOption = Annotated[
    Path | None,
    typer.Option(
        "--env",
        file_okay=False,
        help=f"Environment snapshot directory, or a packaged one: {packaged_envs_text()} (default: demo).",
    ),
]
RunbooksOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--runbooks",
        file_okay=False,
        help="Runbook directory to search for guidance; repeatable (default: the configured runbooks, else the --env"
        " directory; live backends: none).",
    ),
]

ConfigFileOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        dir_okay=False,
        help="Configuration file (default: $EVCLI_CONFIG, else evcli.toml in $EVCLI_HOME or the user config dir).",
    ),
]
ProfileOption = Annotated[
    str | None,
    typer.Option(
        "--profile", help="Profile of the configuration file, its profiles.NAME table (default: $EVCLI_PROFILE)."
    ),
]


def environment_options(
    *, runbooks: bool = False, help: dict[str, str] | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The shared environment options in place of a command's `environment: EnvironmentSpec` parameter.

    `--env`, one `--NAME URL` per registered backend (evcli/backends/registry.py), `--runbooks`
    when asked, `--config FILE` and `--profile NAME`; `help` overrides a backend's help text for this
    command. The command is called with `environment=` the `EnvironmentSpec` of the configuration
    (evcli/config) with these flags on top, and with `settings=` that `evcli.config.Loaded` when it
    has a `settings` parameter. Nothing here imports a backend, pydantic or the configuration.
    """
    from evcli.backends.registry import live_backends

    options: list[tuple[str, Any]] = [("env", EnvOption)]
    options += [
        (kind.name, Annotated[str | None, typer.Option(kind.flag, help=(help or {}).get(kind.name, kind.help))])
        for kind in live_backends()
    ]
    if runbooks:
        options.append(("runbooks", RunbooksOption))
    options += [("config", ConfigFileOption), ("profile", ProfileOption)]

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        # The placeholders' annotations are for readers and mypy; they are replaced, so any object resolves them.
        signature = inspect.signature(command, eval_str=True, locals={"EnvironmentSpec": object, "Loaded": object})
        params = list(signature.parameters.values())
        at = [param.name for param in params].index("environment")
        added = [
            inspect.Parameter(name, params[at].kind, default=None, annotation=annotation)
            for name, annotation in options
        ]
        params[at : at + 1] = added
        wants_settings = "settings" in signature.parameters  # filled here, not an option
        params = [param for param in params if param.name != "settings"]

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = {param.name: kwargs.pop(param.name, None) for param in added}
            loaded = environment_settings(**values)
            kwargs["environment"] = loaded.settings.environment_spec()
            if wants_settings:
                kwargs["settings"] = loaded
            return command(*args, **kwargs)

        wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {param.name: param.annotation for param in params}
        return wrapper

    return decorate


def environment_settings(
    env: Path | None = None,
    runbooks: list[Path] | None = None,
    config: Path | None = None,
    profile: str | None = None,
    **backend_urls: str | None,
):
    """The configuration (`evcli.config.Loaded`) with the shared environment options as flags on top."""
    from evcli.config import load

    flags: dict[str, Any] = {}
    if env is not None:
        flags["env"] = str(env)
    if runbooks:
        flags["runbooks"] = [str(directory) for directory in runbooks]
    if urls := {name: {"url": url} for name, url in backend_urls.items() if url}:
        flags["backends"] = urls
    return load(config, profile, flags)


_state = {"debug": False}


def set_debug(enabled: bool) -> None:
    _state["debug"] = enabled


def handles_errors(command):
    """Turn expected failures into one stderr line and their exit code (see `errors.expected_failure`)."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            result = command(*args, **kwargs)
        except KeyboardInterrupt:
            _interrupted()
        except (typer.Exit, typer.Abort, SystemExit):
            _owned_runs("release_owned_runs")
            raise
        except Exception as exc:
            _owned_runs("interrupt_owned_runs")
            expected = expected_failure(exc)
            if expected is None and _state["debug"]:
                raise
            if expected is None:
                fail(f"unexpected {type(exc).__name__}: {exc}", "re-run with --debug for the traceback", EXIT_RUNTIME)
            fail(expected.message, expected.hint, expected.exit_code)
        _owned_runs("release_owned_runs")
        return result

    return wrapper


def _owned_runs(action: str) -> list[tuple[str, str]]:
    """Release (normal end) or interrupt (failure, Ctrl-C) the runs this process is writing."""
    if "evcli.store.db" not in sys.modules:  # no store opened: no run can be in progress
        return []
    from evcli.store import db

    return getattr(db, action)() or []


def _interrupted():
    """Ctrl-C: mark the runs this process was writing as interrupted, say what they keep, exit 130."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        kept = _owned_runs("interrupt_owned_runs")
    else:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the marking short
        try:
            kept = _owned_runs("interrupt_owned_runs")
        finally:
            signal.signal(signal.SIGINT, previous)
    if not kept:
        fail("interrupted; no diagnosis run was in progress (store writes are all-or-nothing)", None, EXIT_INTERRUPTED)
    fail(
        "interrupted; " + "; ".join(f"session {sid} kept as interrupted with {what}" for sid, what in kept),
        "inspect it with `evcli trace`",
        EXIT_INTERRUPTED,
    )


def fail(message: str, hint: str | None, code: int) -> NoReturn:
    """Print one `error:` line on stderr (data in it shown literally, secrets masked) and exit with `code`."""
    from evcli.core.redaction import Redactor  # an error can quote a URL or a line with a password in it

    message = Redactor().mask_text(message)
    line = f"[bold red]error:[/] {safe(message)}" + (f" [dim]({safe(hint)})[/]" if hint else "")
    err.print(line, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def required_text(value: str, what: str) -> str:
    """A text argument that must say something: empty or whitespace-only is a usage error."""
    from evcli.core.errors import BadInput

    if not value.strip():
        raise BadInput(f"{what} is empty", hint="give it some words")
    return value


def open_store(db: Path | None, *, must_exist: bool = False):
    """The trace store named by --db, else the default one.

    An explicitly named file must exist for commands that only read; the
    default store is created on first use so a fresh machine just works.
    """
    from evcli.core.paths import default_db_path
    from evcli.store.db import TraceStore

    return TraceStore(db or default_db_path(), must_exist=must_exist and db is not None)


def load_source(source: str, db: Path | None):
    """A session document from a file path, or a stored session named by its id, a unique prefix of it
    or `last`.

    Returns (document, store) where store is None for a file.
    """
    from evcli.store.documents import read_document

    if source.endswith(".json") or Path(source).is_file():
        return read_document(Path(source)), None
    store = open_store(db, must_exist=True)
    return store.load(store.resolve(source)), store


EXAMPLES_FILE = Path(__file__).with_name("examples.toml")
EXAMPLE_COMMENT = "  # "  # what follows it in an example is shown as a comment


@functools.cache
def examples() -> dict[str, list[str]]:
    """Each command's examples (examples.toml), keyed by its path: `evcli`, `evcli kb search`."""
    import tomllib

    return tomllib.loads(EXAMPLES_FILE.read_text(encoding="utf-8"))


def command_path(ctx: Any) -> str:
    """`evcli kb search`: the words that ran the command of `ctx` (the root as `evcli` whatever it was called)."""
    names = []
    while ctx is not None:
        names.append(ctx.info_name)
        ctx = ctx.parent
    return " ".join(["evcli", *reversed(names[:-1])])


def examples_epilog(path: str) -> str:
    """The end of a command's help: its examples, each with its comment dimmed (Rich markup)."""
    from rich.markup import escape

    shown = []
    for example in examples().get(path, []):
        command, _, comment = example.partition(EXAMPLE_COMMENT)
        shown.append(escape(command) + (f"  [dim]# {escape(comment)}[/]" if comment else ""))
    return "[bold]Examples[/]\n" + "\n".join(shown) if shown else ""


def _with_examples(format_help: Callable[..., None]) -> Callable[..., None]:
    """Help that ends with the command's examples. Set here, from one table, rather than in each command
    module: the tool subcommands are built from the tool registry at run time, and a command without
    an entry shows none (tests/cli/test_help.py asks every command for one)."""

    @functools.wraps(format_help)
    def format_with_examples(self: Any, ctx: Any, formatter: Any) -> None:
        if not self.epilog:
            self.epilog = examples_epilog(command_path(ctx))
        format_help(self, ctx, formatter)

    return format_with_examples


TyperCommand.format_help = _with_examples(TyperCommand.format_help)  # type: ignore[method-assign]
TyperGroup.format_help = _with_examples(TyperGroup.format_help)  # type: ignore[method-assign]


def print_json(data: Any) -> None:
    sys.stdout.write(json_safe(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True)) + "\n")


__all__ = [
    "ConfigFileOption",
    "DbOption",
    "EnvOption",
    "JsonOption",
    "NoPagerOption",
    "ProfileOption",
    "RunbooksOption",
    "environment_options",
    "environment_settings",
    "err",
    "examples",
    "fail",
    "handles_errors",
    "load_source",
    "open_store",
    "out",
    "print_json",
    "required_text",
    "safe",
]


# --- servers (serve, mcp) ------------------------------------------------------------------------


def bearer_token(name: str) -> str:
    """The bearer token a server requires, from the environment variable `--token-env` names."""
    import os

    from evcli.core.errors import BadInput

    token = os.environ.get(name, "").strip()
    if not token:
        raise BadInput(f"--token-env {name}: the variable is not set or empty", hint=f"export {name}=<a long secret>")
    return token


def loopback(host: str) -> bool:
    """Whether only this machine can reach `host`; a name other than localhost may resolve anywhere."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
