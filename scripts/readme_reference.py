"""Sections of README.md generated from the code (run `cog -r README.md`)."""

from __future__ import annotations

import typer.main

from evcli.cli import app
from evcli.gatekeeper.rules import load_rules


def _walk(command, prefix: str):
    if hasattr(command, "list_commands"):  # a group (typer vendors its own click); `evcli tool` lists the tool registry
        if command.invoke_without_command:  # `evcli sessions` lists by itself, with its own options
            yield prefix, command
        context = command.context_class(command)
        for name in sorted(command.list_commands(context)):
            yield from _walk(command.get_command(context, name), f"{prefix} {name}")
    else:
        yield prefix, command


def commands_markdown() -> str:
    root = typer.main.get_command(app)
    lines = []
    for path, command in _walk(root, "evcli"):
        arguments = " ".join(p.name.upper() for p in command.params if p.param_type_name == "argument")
        lines.append(f"### `{path}{' ' + arguments if arguments else ''}`\n")
        lines.append((command.help or "").strip().split("\n\n")[0].replace("\n", " ") + "\n")
        options = [p for p in command.params if p.param_type_name == "option" and p.name != "help"]
        if options:
            lines.append("| option | meaning |\n|---|---|")
            for option in options:
                flags = ", ".join(f"`{flag}`" for flag in option.opts)
                lines.append(f"| {flags} | {(option.help or '').strip()} |")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def rules_markdown() -> str:
    rules = load_rules()
    lines = [f"Rule set `{rules.version}`.\n", "| rule | severity | enabled | checks |", "|---|---|---|---|"]
    for rule in rules.rules.values():
        params = "".join(f" ({name} = {value})" for name, value in rule.params.items())
        lines.append(
            f"| `{rule.id}` | {rule.default_severity} | {'yes' if rule.enabled else 'no'} | {rule.description}{params} |"
        )
    return "\n".join(lines) + "\n"
