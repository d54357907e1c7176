"""Who calls whom, as far as the snapshot tells (pure): env.toml `[topology]`, the peers that
log lines name, Kubernetes Services, and the call edges of traces.

A caller's line at WARN or above that names another known service (its name or an alias, as a
whole word: `http://payment:8080/pay`, `upstream=payment-svc`) is a call from it to that service.
Names resolve through the environment's aliases; a name no service has is left out and reported.
A Kubernetes Service routes to the workloads its selector selects: a service whose pod template
names the Service's address (an env value or argument: `http://payment:8080`,
`payment.shop.svc.cluster.local`) calls them, and a log line naming that address names them.
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
    pattern = _whole(names, r"(?![\w-])")
    found: dict[str, dict[str, None]] = {}
    for counts in templates:
        if counts.level not in _LEVELED or not counts.incident:
            continue
        for match in pattern.finditer(counts.example):
            target = names.get(match.group(1).lower())
            if target and target != counts.service:
                found.setdefault(counts.service, {})[target] = None
    return {service: tuple(targets) for service, targets in found.items()}


def traced_calls(pairs: Iterable[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    """Calls seen in traces: caller → the services of the spans its spans are the parent of
    (evcli.backends.trace_graph: an edge only where the parent span was read; never an orphan's)."""
    found: dict[str, dict[str, None]] = {}
    for caller, callee in pairs:
        if caller != callee:
            found.setdefault(caller, {})[callee] = None
    return {caller: tuple(callees) for caller, callees in found.items()}


def merged(*tables: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    found: dict[str, dict[str, None]] = {}
    for table in tables:
        for caller, callees in table.items():
            found.setdefault(caller, {}).update(dict.fromkeys(callees))
    return {caller: tuple(callees) for caller, callees in found.items()}


def single_routes(addresses: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    """The addresses of the Services that route to one service, as `logged_peers` reads names."""
    return {address: targets[0] for address, targets in addresses.items() if len(targets) == 1}


def service_calls(
    texts: Mapping[str, Iterable[str]], addresses: Mapping[str, tuple[str, ...]]
) -> dict[str, tuple[str, ...]]:
    """Calls a cluster's objects show: service → the services routed to by the Kubernetes Services whose
    address its pod templates name. `texts`: service → its env values, commands and arguments;
    `addresses`: each lower-cased address of a Service → the services its selector routes to."""
    if not addresses:
        return {}
    pattern = _whole(addresses, r"(?![\w-]|\.\w)")  # `payment.example.com` is not the Service `payment`
    found: dict[str, dict[str, None]] = {}
    for caller, lines in texts.items():
        for line in lines:
            for match in pattern.finditer(line):
                targets = [target for target in addresses[match.group(1).lower()] if target != caller]
                found.setdefault(caller, {}).update(dict.fromkeys(targets))
    return {caller: tuple(targets) for caller, targets in found.items() if targets}


def _whole(names: Iterable[str], after: str) -> re.Pattern[str]:
    """Any of `names` as a whole word (the longest first), case-insensitively; `after` says what may not follow."""
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    return re.compile(r"(?<![\w.-])(" + alternatives + r")" + after, re.IGNORECASE)
