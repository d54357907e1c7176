"""env.toml of an incident: name, timezone, the snapshot's clock, aliases and (in about half of the
incidents) the declared topology. Nothing else: in particular nothing of the truth."""

from __future__ import annotations

import json
from collections.abc import Iterable
from zoneinfo import ZoneInfo

from evcli.evals.incidents.world import World


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _key(name: str) -> str:
    return _string(name) if "-" in name else name


def _array(items: Iterable[str]) -> str:
    return "[" + ", ".join(_string(item) for item in items) + "]"


def env_toml(world: World) -> str:
    now = world.timeline.end.astimezone(ZoneInfo(world.timezone)).isoformat()
    lines = [f"name = {_string(world.name)}", f"timezone = {_string(world.timezone)}", f"now = {_string(now)}"]
    for service, aliases in world.aliases.items():
        lines += ["", f"[services.{_key(service)}]", f"aliases = {_array(aliases)}"]
    if world.topology_declared:
        lines += ["", "[topology]"]
        lines += [
            f"{_key(caller)} = {_array(world.graph.callees(caller))}"
            for caller in world.graph.names()
            if world.graph.callees(caller)
        ]
    return "\n".join(lines) + "\n"
