"""Guards on tool calls within one session (seeds: tool boundary, narrow scope).

Each guard raises `ToolRefused` with a message a model can act on; refused
calls never reach a backend. The cap and the repeat guard read only the calls made
(tool and parameters); the narrow-task guard also reads what an earlier call found,
so `may_refuse_as_wider` tells whether a call has to wait for an earlier one's result.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from evcli.contracts import ToolInvocation
from evcli.core.canonical import canonical_json
from evcli.core.errors import EvcliError
from evcli.core.time import TimeRange
from evcli.tools.registry import ToolSpec


class ToolRefused(EvcliError):
    exit_code = 2


def check_call_cap(tool_name: str, previous: list[ToolInvocation], cap: int) -> None:
    used = sum(1 for invocation in previous if invocation.tool_name == tool_name)
    if used >= cap:
        raise ToolRefused(f"{tool_name} refused: this session already made {used} calls (cap {cap})")


def check_repeat(tool_name: str, params: dict, previous: list[ToolInvocation]) -> None:
    wanted = canonical_json(params)
    for invocation in previous:
        if invocation.tool_name == tool_name and canonical_json(invocation.input_params) == wanted:
            status = invocation.retrieval_details.evidence_status if invocation.retrieval_details else "unknown"
            raise ToolRefused(
                f"{tool_name} refused: identical to invocation #{invocation.invocation_id} ({status}); "
                f"cite that invocation instead"
            )


def _span(params: dict[str, Any], clock: datetime) -> TimeRange:
    """The range a call's since/until/window name, read on one clock so two calls compare; no start is
    unbounded (a snapshot's default covers all of it) and no end is the clock."""
    named = TimeRange.build(
        since=params.get("since"), until=params.get("until"), window=params.get("window"), clock=clock, tz=UTC
    )
    start = named.start if named is not None else None
    end = named.end if named is not None and named.end is not None else max(clock, start or clock)
    return TimeRange(start, end)


def _range_words(params: dict[str, Any]) -> str:
    named = [f"{key}={params[key]}" for key in ("since", "until", "window") if params.get(key)]
    return " ".join(named) or "the default range"


def _wider(spec: ToolSpec, old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Why `new` is a wider query than `old`, or None: service and time range for every tool, then the tool's own rules."""
    if old.get("service") and new.get("service") != old.get("service"):
        return f"it drops or changes the service ({old.get('service')} → {new.get('service') or 'any'})"
    clock = datetime.now(UTC)
    if not _span(old, clock).contains(_span(new, clock)):
        return f"it widens the time range ({_range_words(old)} → {_range_words(new)})"
    return spec.wider(old, new)


def may_refuse_as_wider(spec: ToolSpec, earlier: dict[str, Any], params: dict[str, Any]) -> bool:
    """Whether `check_narrow_widening` would refuse `params` once the earlier call with `earlier` found
    nothing: it was a precise query and this one is wider. Until its result is known, it may."""
    return spec.precise(earlier) and _wider(spec, earlier, params) is not None


def check_narrow_widening(spec: ToolSpec, params: dict[str, Any], previous: list[ToolInvocation]) -> None:
    """In a narrow task, no wider retry after a precise query found nothing (precision: `ToolSpec.precise`)."""
    tool_name = spec.name
    for invocation in previous:
        details = invocation.retrieval_details
        if (
            invocation.tool_name != tool_name
            or details is None
            or details.evidence_status != "no_evidence"
            # an unknown service found nothing because it named nothing: correcting it is allowed
            or getattr(details, "unknown_service", False)
            or not spec.precise(invocation.input_params)
        ):
            continue
        reason = _wider(spec, invocation.input_params, params)
        if reason:
            raise ToolRefused(
                f"{tool_name} refused: narrow task — invocation #{invocation.invocation_id} already found no "
                f"evidence for a precise query and this call is wider: {reason}. Report the no-evidence result instead."
            )
