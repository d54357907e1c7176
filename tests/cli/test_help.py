"""Every command's help: each option says what it does, flags show no type, choices are listed,
shell completion is offered (walks the whole Typer app, so a new option is checked too)."""

from __future__ import annotations

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
