"""What the tools' fetch functions share: the outcome they return, service resolution, the time
range a call names, text capping.

A fetch function returns its raw output and scope; the runner masks, caps and
cites it. A service the backend does not know is reported as a message with an
empty result (`unknown_service`), never as a backend failure. A call's times are
read on the environment's clock and in its zone (a snapshot's env.toml
`timezone`, else UTC), and the scope records the absolute range searched with
where it came from: `question/call` when the call named one, else the backend's
default (`whole snapshot`, `live default 1h`).

Every tool module imports this one when its spec is read (`evcli gate` reads the specs of the tools its
session cited), so the backend layer and the time parser are imported by the functions that use them,
when a call runs.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import UTC, timedelta, tzinfo
from typing import TYPE_CHECKING, Any, NamedTuple

from evcli.core.errors import BadInput

if TYPE_CHECKING:
    from evcli.backends.base import EvidenceBackend, TimeWindow
    from evcli.core.time import TimeRange

NAMED = "question/call"
WHOLE_SNAPSHOT = "whole snapshot"
LIVE_DEFAULT = "live default 1h"
LIVE_DEFAULT_SPAN = timedelta(hours=1)

TRUNCATION_MARK = " …[truncated]"
CLOSE_NAMES = 5  # close names an unknown service's message lists
CLOSE_CUTOFF = 0.6  # difflib ratio for a backend without its own close matches


@dataclass
class Outcome:
    output: dict[str, Any]
    scope: dict[str, Any]
    dedup_reason: str | None = None
    unknown_service: bool = False


def resolve_service(service: str | None, backend: EvidenceBackend) -> tuple[str | None, str | None]:
    """(service to query, message) — message set when the backend does not know the service."""
    if not service:
        return service, None
    resolve = getattr(backend, "resolve_service", None)
    if resolve is not None:
        resolved = resolve(service)
        if resolved is not None:
            return resolved, None
    else:
        known = backend.known_services()
        if known is None or service in known:
            return service, None
    return None, f"unknown service '{service}'{_close_names(service, backend)}"


def _close_names(service: str, backend: EvidenceBackend) -> str:
    """`; close names: a, b` — the backend's own close matches, else difflib over the services it knows."""
    close = getattr(backend, "close_matches", None)
    suggestions = close(service) if close else []
    if not suggestions:
        known = backend.known_services() or []
        suggestions = difflib.get_close_matches(service.lower(), known, n=CLOSE_NAMES, cutoff=CLOSE_CUTOFF)
    return f"; close names: {', '.join(suggestions[:CLOSE_NAMES])}" if suggestions else ""


def unknown_service_outcome(message: str, arrays: tuple[str, ...], scope: dict[str, Any]) -> Outcome:
    output: dict[str, Any] = {array: [] for array in arrays}
    output.update({"total": 0, "truncated": False, "message": message})
    return Outcome(output, scope, unknown_service=True)


class CallTarget(NamedTuple):
    """What a query call searches: the resolved service and the range or window it names."""

    service: str | None
    named: TimeRange | None
    window: TimeWindow | None


def call_target(
    params: Any, backend: EvidenceBackend, arrays: tuple[str, ...], scope: dict[str, Any]
) -> CallTarget | Outcome:
    """The service and times a call names, or the empty outcome of a service the backend does
    not know (decided before the times are read, so a bad time does not hide it; a range the call
    names is still recorded: the name was asked over that range)."""
    from evcli.backends.base import parse_window

    service, unknown = resolve_service(params.service, backend)
    if unknown:
        try:
            named_range = call_range(params, backend)
        except BadInput:
            named_range = None
        if named_range is not None:
            scope.update(searched_scope(named_range, backend))
        return unknown_service_outcome(unknown, arrays, scope)
    named = call_range(params, backend)
    window = parse_window(params.window, backend.now()) if params.window else None
    return CallTarget(service, named, window)


def environment_zone(backend: EvidenceBackend) -> tzinfo:
    """The zone times without one are read in: a snapshot's env.toml `timezone`; UTC for live backends."""
    config = getattr(backend, "config", None)  # only a snapshot has an environment config
    return getattr(config, "timezone", None) or UTC


def is_snapshot(backend: EvidenceBackend) -> bool:
    return getattr(backend, "config", None) is not None


def call_range(params: Any, backend: EvidenceBackend) -> TimeRange | None:
    """The range `since`/`until` or `window` name on the backend's clock, None when the call names none.

    A time that cannot be read, or a start after the end, is BadInput (exit 2)."""
    from evcli.core.time import TimeRange

    if params.since is None and params.until is None and params.window is None:
        return None  # the backend's default: no need to read its clock
    zone = environment_zone(backend)
    return TimeRange.build(since=params.since, until=params.until, window=params.window, clock=backend.now(), tz=zone)


def searched_scope(
    named: TimeRange | None, backend: EvidenceBackend, reported: str | None = None, reported_origin: str | None = None
) -> dict[str, str]:
    """`range` (absolute, with zone) and `range_origin` of what a call searched.

    `reported` is the range the backend says it searched (its `searched_range`, with its
    `range_origin`); without one the named range stands, or a live backend's default hour ending
    at its clock."""
    from evcli.core.time import TimeRange

    zone = environment_zone(backend)
    if named is not None:
        origin = NAMED
    else:
        origin = reported_origin or (WHOLE_SNAPSHOT if is_snapshot(backend) else LIVE_DEFAULT)
    if not reported and named is not None:
        reported = named.text(zone)
    elif not reported and origin == LIVE_DEFAULT:
        clock = backend.now().astimezone(zone)
        reported = TimeRange(clock - LIVE_DEFAULT_SPAN, clock).text()
    return {"range": reported or "", "range_origin": origin}


def prepare_clock(backend: Any, params: Any) -> None:
    """A tool's `prepare` when its call reads no log file but states the snapshot's span or reads its clock:
    both, before the call's deadline (they read the trace index). Nothing for a live backend."""
    from evcli.backends.envindex import prepare_queries

    prepare_queries(backend, None, logs=False)


def cap_text(output: dict[str, Any], arrays: tuple[str, ...], limit: int) -> bool:
    """Shorten over-long strings of the items of `arrays` in place; True if any was cut."""
    cut = False
    for array in arrays:
        for item in output.get(array) or []:
            for key, value in item.items():
                if isinstance(value, str) and len(value) > limit:
                    item[key] = value[:limit] + TRUNCATION_MARK
                    cut = True
    return cut
