"""`find_changes`: what changed in an incident window against a baseline, over every metric series,
every service's logs and the alerts that became active in it, and the services ranked as suspects,
causes before symptoms.

Refs: `$.changes[i]` (one change: service, signal, class, direction, the incident value from its
onset against the baseline's median and spread, its score) ranked by score, and `$.suspects[i]`
(one service: rank, fault kind, onset, score, its changes, the callees that changed first, the
callers it affects) ranked causes first (evcli.diagnosis.ranking).

The window is since/until or a relative window on the environment's clock; with none it starts
where the series change (evcli.diagnosis.window) and ends with the snapshot. The baseline is
baseline_since/baseline_until, else an equally long stretch right before the window, as much of
it as the data holds. Everything stated is exact on the data and re-derived by `gate --against`.
A snapshot is needed: a live backend has no change inputs (the call fails, saying so).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from evcli.core.errors import BackendError
from evcli.tools import registry
from evcli.tools.fetch import NAMED, Outcome, call_range, environment_zone, resolve_service, unknown_service_outcome
from evcli.tools.params import NAME, TimeExpression, ToolParams
from evcli.tools.refs import number, with_unit

if TYPE_CHECKING:
    from evcli.tools.runner import SessionView, ToolEnvironment

MIN_BASELINE = timedelta(minutes=10)
DAY_SECONDS = 86400.0  # a window shorter than this still gets this much baseline
DETECTED = "detected onset"
LOG_BUCKET_SECONDS = 60.0  # log lines are counted per minute at least (finer, a few lines a minute are all noise)


class FindChangesParams(ToolParams):
    service: str | None = Field(None, pattern=NAME)  # a service asked about: its suspects entry is marked
    since: TimeExpression = None
    until: TimeExpression = None
    window: str | None = None
    baseline_since: TimeExpression = None
    baseline_until: TimeExpression = None
    # before: an equally long stretch right before the window; day: the same stretch a day earlier
    baseline: Literal["before", "day"] = "before"
    baseline_length: str | None = Field(None, pattern=r"^\d{1,5}[smhd]$")  # "1h": the stretch before is this long
    limit: int = Field(20, ge=1, le=100)


def _time(epoch: float, zone: tzinfo) -> str:
    return datetime.fromtimestamp(epoch, zone).isoformat(timespec="seconds")


def change_text(item: dict[str, Any]) -> str:
    unit = item.get("unit") or ""
    who = item["service"] + (f" ({item['instance']})" if item.get("instance") else "")
    verb = "rose" if item.get("direction") == "up" else "fell"
    tail = f"class={item.get('class')} score={item.get('score')}"
    if item.get("kind") in ("new_template", "surging_template"):
        head = (
            f'{who} new log template: "{item["signal"]}" {item["points"]} lines from {item["onset"]}, none in the baseline'
            if item["kind"] == "new_template"
            else f'{who} log template surged: "{item["signal"]}" {item["points"]} lines from {item["onset"]}'
            f" against {item['baseline_points']} in the baseline"
        )
        example = f"; example: {item['example']}" if item.get("example") else ""
        return f"{head}; {tail}{example}"
    if item.get("kind") == "alert":
        return (
            f"{who} alert {item['signal']} became active at {item['onset']} (now {item.get('state')},"
            f" value {with_unit(item['value'], unit)}); {tail}"
        )
    if item.get("kind") == "events":
        return (
            f"{who} {item['signal']} rose: {number(item['value'])} events from {item['onset']}"
            f" (from {number(item['baseline'])} to {number(item['peak'])}); {tail}"
        )
    rate = " rate" if item.get("rate") else ""
    return (
        f"{who} {item['signal']}{rate} {verb}: {with_unit(item['value'], unit)} from {item['onset']}"
        f" against a baseline median of {with_unit(item['baseline'], unit)}"
        f" (spread {with_unit(item['spread'], unit)}, {item['baseline_points']} points);"
        f" peak {with_unit(item['peak'], unit)}; {item['outside']} of {item['points']} points outside; {tail}"
    )


def suspect_text(item: dict[str, Any]) -> str:
    changed = ", ".join(item.get("changes") or []) or "none"
    parts = [
        f"rank {item['rank']}: {item['service']}, fault={item['fault']}, onset {item['onset']}, score={item['score']}",
        f"changes: {changed}",
    ]
    if item.get("explained_by"):
        parts.append(f"callees changed first: {', '.join(item['explained_by'])}")
    elif item.get("callees") is not None:
        parts.append(
            f"none of its {item['callees']} known callees changed first" if item["callees"] else "no known callees"
        )
    if item.get("affects"):
        parts.append(f"callers affected after it: {', '.join(item['affects'])}")
    return "; ".join(parts)


def scope(params: FindChangesParams) -> dict[str, Any]:
    found: dict[str, Any] = {"service": params.service, "limit": params.limit}
    found.update({key: getattr(params, key) for key in ("window", "since", "until") if getattr(params, key)})
    found["keywords"] = []
    return {key: value for key, value in found.items() if value is not None}


def fetch(params: FindChangesParams, env: ToolEnvironment, session: SessionView) -> Outcome:
    from evcli.backends.snapshot import SnapshotBackend
    from evcli.backends.snapshot_changes import alert_starts, level_series, log_counts, log_edges, series_points
    from evcli.core.time import TimeRange
    from evcli.diagnosis import changes as finder
    from evcli.diagnosis import ranking, topology, window

    backend = env.backend
    found_scope = scope(params)
    if not isinstance(backend, SnapshotBackend):
        raise BackendError("find_changes compares a snapshot's series and logs: run with --env DIR")
    asked = None
    if params.service:
        asked, unknown = resolve_service(params.service, backend)
        if unknown:
            return unknown_service_outcome(unknown, SPEC.array_names, found_scope)
    zone = environment_zone(backend)
    named = call_range(params, backend)
    series, problems = series_points(backend, None)
    step = window.step_of(series)
    notes: list[str] = list(problems)
    first, last = _data_edges(series, log_edges(backend))
    if first is None or last is None:
        return _nothing(found_scope, "the snapshot holds no timestamped metric point or log line", zone)
    found_scope.update(range=f"{_time(first, zone)}..{_time(last, zone)}", range_origin="whole snapshot")
    if named is not None and named.start is not None:
        start, origin = named.start.timestamp(), NAMED
    else:
        focus = _focus(asked, backend) if asked else None  # None: every service (no callees declared)
        error_lines = level_series(backend, first, last, max(step, LOG_BUCKET_SECONDS))
        compared = [p for p in [*series, *error_lines] if focus is None or p.service in focus]
        detected = window.incident_start(compared, step)
        if detected is None:
            return _nothing(
                found_scope, "no series changes anywhere in the snapshot: no incident start to compare", zone
            )
        start, origin = detected, DETECTED
    end = named.end.timestamp() if named is not None and named.end is not None else last
    if start >= end:
        found_scope.update(range=f"{_time(start, zone)}..{_time(max(start, end), zone)}", range_origin=origin)
        return _nothing(found_scope, f"the window starts at or after the data's end ({_time(end, zone)})", zone)
    base_start, base_end = _baseline(params, backend, start, end, first)
    if base_end <= base_start:
        notes.append(f"baseline holds 0 points: {_empty_baseline(params)}")
    incident = TimeRange(datetime.fromtimestamp(start, UTC), datetime.fromtimestamp(end, UTC))
    baseline = TimeRange(
        datetime.fromtimestamp(base_start, UTC), datetime.fromtimestamp(max(base_end, base_start), UTC)
    )
    judged = finder.series_changes(series, (base_start, base_end), (start, end))
    templates, levels, log_problems = log_counts(backend, baseline, incident, step)
    notes += log_problems
    found = judged.changes
    if base_end > base_start:  # no baseline, no log change: a line is only new against something
        found += finder.level_changes(levels, start)
        found += finder.template_changes(templates, base_end - base_start, end - start)
    alerts, alert_problems = alert_starts(backend)
    notes += alert_problems
    found = finder.ordered(found + finder.alert_changes(alerts, (start, end)))
    if judged.unjudged:
        notes.append(f"{judged.unjudged} series not judged (fewer than 3 baseline points or no point in the window)")
    names = {name.lower(): name for name in backend.known_services() or []}
    for service, aliases in backend.service_aliases().items():
        names.update({alias.lower(): service for alias in aliases})
    texts, addresses = backend.kubernetes.topology(backend.resolve_service)  # k8s/ Services and pod templates
    names = {**topology.single_routes(addresses), **names}
    declared, unknown_names = topology.declared(backend.config.topology, backend.resolve_service)
    if unknown_names:
        notes.append(f"topology names no known service: {', '.join(unknown_names)}")
    logged = topology.logged_peers(templates, names)
    routed = topology.service_calls(texts, addresses)
    traced = topology.traced_calls(backend.traces.call_pairs())  # traces/: a span's parent span's service calls it
    callees = topology.merged(declared, logged, routed, traced)
    if asked and declared.get(asked):  # a named service with declared callees: it and what it depends on
        focus = ranking.reachable(asked, callees)
        found = [change for change in found if change.service in focus]
    suspects = ranking.asked_first(ranking.rank(found, callees, step), asked, callees)
    ranked_by = ["the kind of change", "onset order"]
    ranked_by += ["topology from env.toml"] if declared else []
    ranked_by += ["peers named in log lines"] if logged else []
    ranked_by += ["Kubernetes Services and their selectors"] if routed else []
    ranked_by += ["call edges from traces"] if traced else []
    items = [finder.as_item(change, zone, _time) for change in found[: params.limit]]
    index_of = {id(change): position for position, change in enumerate(found[: params.limit])}
    suspect_items = [
        _suspect_item(rank, suspect, zone, index_of, callees, asked)
        for rank, suspect in enumerate(suspects[: params.limit], start=1)
    ]
    found_scope.update(
        range=f"{_time(start, zone)}..{_time(end, zone)}",
        range_origin=origin,
    )
    output = {
        "changes": items,
        "suspects": suspect_items,
        "total": len(found),
        "truncated": len(found) > params.limit or len(suspects) > params.limit,
        "message": _message(found, judged, len(levels) // 2, suspects, notes),
        "searched_range": found_scope["range"],
        "baseline_range": f"{_time(base_start, zone)}..{_time(max(base_end, base_start), zone)}",
        "step_seconds": step,
        "ranked_by": ranked_by,
        "notes": notes,
    }
    return Outcome(output, found_scope)


def prepare(backend: Any, params: FindChangesParams) -> None:
    """Before the call's deadline: the index of every log file (each is judged) and the snapshot's clock."""
    from evcli.backends.envindex import prepare_queries

    prepare_queries(backend, None, logs=True)


def _focus(asked: str, backend: Any) -> set[str] | None:
    """A named service and its declared callees, transitively (log peers are not read yet); None when
    it has no declared callees: then any service may be where its trouble starts."""
    from evcli.diagnosis import ranking, topology

    declared, _ = topology.declared(backend.config.topology, backend.resolve_service)
    return ranking.reachable(asked, declared) if declared.get(asked) else None


def _data_edges(series: list[Any], logs: list[float]) -> tuple[float | None, float | None]:
    """The first and last time of any metric point or log line."""
    times = [float(moment) for points in series if points.times.size for moment in (points.times[0], points.times[-1])]
    times += logs
    return (min(times), max(times)) if times else (None, None)


def _baseline(params: FindChangesParams, backend: Any, start: float, end: float, first: float) -> tuple[float, float]:
    from evcli.backends.base import parse_window
    from evcli.core.time import TimeRange

    if params.baseline_since or params.baseline_until:
        named = TimeRange.build(
            since=params.baseline_since,
            until=params.baseline_until,
            clock=backend.now(),
            tz=environment_zone(backend),
        )
        assert named is not None
        low = named.start.timestamp() if named.start is not None else first
        high = named.end.timestamp() if named.end is not None else start
        return max(low, first), min(high, start)
    if params.baseline == "day":  # the same time of day a day earlier, as far as the data reaches back
        return max(first, start - DAY_SECONDS), max(first, end - DAY_SECONDS)
    if params.baseline_length:  # "the hour before": as long as asked, right before the window
        length = start - parse_window(params.baseline_length, datetime.fromtimestamp(start, UTC)).start.timestamp()
    else:
        length = max(end - start, MIN_BASELINE.total_seconds())
    return max(first, start - length), start


def _empty_baseline(params: FindChangesParams) -> str:
    """Why the baseline holds no point."""
    if params.baseline_since or params.baseline_until:
        return "the baseline asked lies outside the data before the window"
    if params.baseline == "day":
        return "the data does not reach back a day before the window"
    return "the window starts with the data"


def _suspect_item(
    rank: int,
    suspect: Any,
    zone: tzinfo,
    index_of: dict[int, int],
    callees: dict[str, tuple[str, ...]],
    asked: str | None,
) -> dict[str, Any]:
    from evcli.diagnosis.ranking import names_fault

    # the changes that name its fault first (a memory alert before the pool's queue it leads to), then by strength
    own = sorted(suspect.changes, key=lambda change: not names_fault(change, suspect.fault))[:4]
    item: dict[str, Any] = {
        "rank": rank,
        "service": suspect.service,
        "fault": suspect.fault,
        "onset": _time(suspect.onset, zone),
        "score": round(suspect.score, 2),
        "changes": [_change_words(change) for change in own],
        "change_refs": [index_of[id(change)] for change in own if id(change) in index_of],
        "explained_by": suspect.explained_by,
        "affects": suspect.affects,
    }
    item["callees"] = len(callees.get(suspect.service, ())) if callees else None
    if asked is not None and asked == suspect.service:
        item["asked"] = True
    return item


def _change_words(change: Any) -> str:
    """`p99_latency rose`, `new log template rose`, `alert HighMemoryUsage fired`: a suspect's change in brief."""
    if change.kind == "alert":
        return f"alert {change.signal} {'fired' if change.state != 'pending' else 'pending'}"
    name = change.signal if change.kind != "new_template" else "new log template"
    return f"{name} {'rose' if change.direction == 'up' else 'fell'}"


def _message(found: list[Any], judged: Any, log_files: int, suspects: list[Any], notes: list[str]) -> str:
    head = f"{len(found)} changes in {len(suspects)} services; {judged.series} series and {log_files} log files judged"
    return "; ".join([head, *notes])


def _nothing(found_scope: dict[str, Any], reason: str, zone: tzinfo) -> Outcome:
    output: dict[str, Any] = {"changes": [], "suspects": [], "total": 0, "truncated": False, "message": reason}
    output["searched_range"] = found_scope.get("range", "")
    found_scope.setdefault("range", "")
    found_scope.setdefault("range_origin", DETECTED)
    return Outcome(output, found_scope)


SPEC = registry.register(
    registry.ToolSpec(
        name="find_changes",
        description=(
            "What changed in an incident window against a baseline, over every metric series, every service's "
            "logs and the alerts that became active: `$.changes[i]` (service, signal, class, direction, value from its onset against the baseline's "
            "median and spread, score), ranked by score, and `$.suspects[i]` (services ranked causes first: fault "
            "kind, onset, their changes, callees that changed first, callers affected). Window: since/until or a "
            "relative window; none: from where the series change to the snapshot's end. Baseline: "
            "baseline_since/baseline_until, else as long a stretch right before the window. Cite a suspect for a "
            "possible root cause (a hypothesis, never certain) and its changes for the chain."
        ),
        summary="What changed against a baseline, every series and log, and the likely causes ranked.",
        params=FindChangesParams,
        option_help={
            "service": "A service asked about: with declared callees only it and what it depends on are ranked, else every service "
            "(its entry marked; first when its trouble has a cause of its own that no known callee explains).",
            "baseline_since": "Start of the baseline (default: as long a stretch right before the window).",
            "baseline_until": "End of the baseline (default: the window's start).",
            "baseline": "before: as long a stretch right before the window (default); day: the same hours a day earlier.",
            "baseline_length": "How long the stretch right before the window is: 30m, 1h, 2d (default: as long as the window).",
            "limit": "At most N changes and N suspects (1-100).",
        },
        arrays=(
            registry.EvidenceArray("changes", change_text),
            registry.EvidenceArray("suspects", suspect_text),
        ),
        fetch=fetch,
        scope=scope,
        reads=("changes",),
        prepare=prepare,
    )
)
