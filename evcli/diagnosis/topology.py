"""Who calls whom, as far as the snapshot tells (pure): env.toml `[topology]` and the peers that
log lines name.

A caller's line at WARN or above that names another known service (its name or an alias, as a
whole word: `http://payment:8080/pay`, `upstream=payment-svc`) is a call from it to that service.
Names resolve through the environment's aliases; a name no service has is left out and reported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from evcli.backends.snapshot_changes import TemplateCounts

_LEVELED = ("WARN", "ERROR", "FATAL")


def declared(
    raw: Mapping[str, tuple[str, ...]], resolve: Callable[[str], str | None]
) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    """The `[topology]` table with names resolved; the names that resolve to no service."""
    found: dict[str, tuple[str, ...]] = {}
    unknown: list[str] = []
    for caller, callees in raw.items():
        source = resolve(caller)
        if source is None:
            unknown.append(caller)
            continue
        targets = []
        for callee in callees:
            target = resolve(callee)
            if target is None:
                unknown.append(callee)
            elif target != source:
                targets.append(target)
        found[source] = tuple(dict.fromkeys([*found.get(source, ()), *targets]))
    return found, sorted(set(unknown))


def logged_peers(templates: Iterable[TemplateCounts], names: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """Calls seen in log lines: service → the other services its WARN/ERROR lines name.
    `names` maps each lower-cased name or alias to its service."""
    if not names:
        return {}
    pattern = re.compile(
        r"(?<![\w.-])(" + "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True)) + r")(?![\w-])",
        re.IGNORECASE,
    )
    found: dict[str, dict[str, None]] = {}
    for counts in templates:
        if counts.level not in _LEVELED or not counts.incident:
            continue
        for match in pattern.finditer(counts.example):
            target = names.get(match.group(1).lower())
            if target and target != counts.service:
                found.setdefault(counts.service, {})[target] = None
    return {service: tuple(targets) for service, targets in found.items()}


def merged(*tables: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    found: dict[str, dict[str, None]] = {}
    for table in tables:
        for caller, callees in table.items():
            found.setdefault(caller, {}).update(dict.fromkeys(callees))
    return {caller: tuple(callees) for caller, callees in found.items()}
