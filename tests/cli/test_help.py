"""Every command's help: each option says what it does, flags show no type, choices are listed,
shell completion is offered (walks the whole Typer app, so a new option is checked too)."""

from __future__ import annotations

import shlex
from pathlib import Path

import typer.main

from evcli.cli import app
from scripts.readme_reference import _walk
from tests.cli._util import evcli


def _commands():
    return list(_walk(typer.main.get_command(app), "evcli"))


def test_every_option_and_argument_has_help_text():
    missing = [
        f"{path} {param.name}"
        for path, command in _commands()
        for param in command.params
        if not param.hidden and not (getattr(param, "help", None) or "").strip()
    ]
    assert missing == []
    assert len(_commands()) > 25


def test_help_of_every_command_shows_no_bool_metavar():
    for path, _ in _commands():
        run = evcli(*path.split()[1:], "--help")
        assert run.exit_code == 0, (path, run)
        assert "<bool>" not in run.stdout and "BOOLEAN" not in run.stdout, path
        assert "--help" in run.stdout


def test_fail_on_lists_its_choices_and_rejects_others():
    for command in ("ask", "aiops"):
        assert "<low_confid|reject>" in evcli(command, "--help").stdout
    run = evcli("ask", "Is payment-service CPU high?", "--fail-on", "pass")
    assert run.exit_code == 2 and "'low_confid', 'reject'" in run.stderr, run


def test_completion_is_offered():
    help_text = evcli("--help").stdout
    assert "--install-completion" in help_text and "--show-completion" in help_text


# --- examples (issue 26) ---------------------------------------------------------------------------------

RUNS_ELSEWHERE = ("http", "--model", "--kubeconfig", "$(", "evcli eval", "evcli aiops", "evcli mcp", "evcli serve")


def _tree(command, path: str = "evcli"):
    """Every command and group of the tree, with its path."""
    yield path, command
    if hasattr(command, "list_commands"):
        context = command.context_class(command)
        for name in sorted(command.list_commands(context)):
            yield from _tree(command.get_command(context, name), f"{path} {name}")


def _shape(example: str) -> str:
    """The path of the command an example runs, after Click parsed its words as that command would (unknown
    options, bad values and choices, missing or extra arguments raise); nothing is run."""
    from evcli.cli._common import EXAMPLE_COMMENT

    words = shlex.split(example.partition(EXAMPLE_COMMENT)[0])
    assert words[0] == "evcli", example
    command, path, rest = typer.main.get_command(app), ["evcli"], words[1:]
    while hasattr(command, "list_commands") and rest and not rest[0].startswith("-"):
        subcommand = command.get_command(command.context_class(command), rest[0])
        assert subcommand is not None, example
        path.append(rest.pop(0))
        command = subcommand
    command.make_context(" ".join(path), rest)
    return " ".join(path)


def test_every_command_and_group_has_one_or_two_examples_and_every_example_parses():
    from evcli.cli._common import examples

    paths = [path for path, _ in _tree(typer.main.get_command(app))]
    table = examples()
    assert [path for path in paths if not 1 <= len(table.get(path, [])) <= 2] == []
    assert sorted(set(table) - set(paths)) == []  # no examples of a command that is gone
    for path, lines in table.items():
        for example in lines:
            ran = _shape(example)
            assert ran == path or (ran.startswith(path + " ") and path != "evcli ask"), (path, example)


def test_help_ends_with_the_commands_examples():
    run = evcli("kb", "search", "--help")
    assert run.exit_code == 0, run
    lines = [line.strip() for line in run.stdout.splitlines() if line.strip()]
    at = lines.index("Examples")
    assert lines[at + 1 :] == [
        'evcli kb search "heap dump OOMKilled"  # the runbooks kb index indexed last, else the demo runbooks',
        'evcli kb search "consumer lag" --env edge',
    ]
    assert evcli("tool", "query_logs", "--help").stdout.count("evcli tool query_logs --service") == 2
    assert "evcli trace last" in evcli("--help").stdout


def test_the_examples_that_need_no_server_run(tmp_path, monkeypatch):
    """In order, in one store and directory (a later example may use the session or file an earlier one
    made): each example that needs no server, model account, shell or file it does not find."""
    from evcli.cli._common import EXAMPLE_COMMENT, examples

    monkeypatch.chdir(tmp_path)
    ran: list[str] = []
    for lines in examples().values():
        for example in [line for line in lines if line not in ran]:  # a group shows its commands' examples
            words = shlex.split(example.partition(EXAMPLE_COMMENT)[0])
            files = [word for word in words[1:] if "/" in word or Path(word).suffix in (".json", ".toml")]
            if any(marker in example for marker in RUNS_ELSEWHERE) or not all(Path(f).exists() for f in files):
                continue
            run = evcli(*words[1:])
            assert run.exit_code == 0, (example, run)
            ran.append(example)
    assert len(ran) >= 35, ran


def test_no_argument_is_hidden_and_asks_follow_up_is_documented():
    """A hidden argument still shows in the usage line, unexplained (`ask … [follow_up]`)."""
    hidden = [
        f"{path} {param.name}"
        for path, command in _tree(typer.main.get_command(app))
        for param in getattr(command, "params", [])
        if param.param_type_name == "argument" and param.hidden
    ]
    assert hidden == []
    shown = evcli("ask", "--help").stdout
    usage = next(line.strip() for line in shown.splitlines() if "Usage:" in line)
    assert usage.endswith("ask [OPTIONS] {QUESTION} [FOLLOW_UP]"), usage
    assert "FOLLOW_UP" in shown.split("Arguments", 1)[1].split("Options", 1)[0]
    assert "Only with --continue: the follow-up question" in " ".join(shown.split())


def test_no_help_text_loses_words_to_rich_markup():
    """Help is rendered as Rich markup: `[profiles.NAME]` in a help text vanished from the terminal."""
    from rich.markup import render

    lost = [
        f"{path} {param.name}: {param.help}"
        for path, command in _tree(typer.main.get_command(app))
        for param in getattr(command, "params", [])
        if getattr(param, "help", None) and render(param.help).plain != param.help
    ]
    assert lost == []
