"""Guards on tool calls within one session (seeds: tool boundary, narrow scope).

Each guard raises `ToolRefused` with a message a model can act on; refused
calls never reach a backend.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from evcli.backends.base import parse_window
from evcli.canonical import canonical_json
from evcli.contracts import ToolInvocation
from evcli.errors import EvcliError
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


def _seconds(window: str | None) -> float:
    span = parse_window(window or "30m", datetime.now(UTC))
    return (span.end - span.start).total_seconds()


def _wider(spec: ToolSpec, old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Why `new` is a wider query than `old`, or None: service and window for every tool, then the tool's own rules."""
    if old.get("service") and new.get("service") != old.get("service"):
        return f"it drops or changes the service ({old.get('service')} → {new.get('service') or 'any'})"
    if _seconds(new.get("window")) > _seconds(old.get("window")):
        return f"it widens the window ({old.get('window')} → {new.get('window')})"
    return spec.wider(old, new)


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
