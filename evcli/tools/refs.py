"""Evidence refs: one compact line per item of a tool's evidence arrays.

The ref text is what the Gatekeeper compares excerpts with and what a model is
shown, so each tool renders an item's fields into one line in a fixed order
(its `EvidenceArray.render`), e.g.
`HighCPUUsage, service=payment-service, state=firing, current=92%, duration=25m`.
`evidence` is the single source of a call's refs: the runner records what it
returns and the Gatekeeper (`invocation.refs_derivable`) re-derives it.
"""

from __future__ import annotations

from typing import Any

from evcli.contracts import NO_EVIDENCE_PATH, EvidenceRef, EvidenceStatus
from evcli.tools import registry  # imports no tool: registry.get imports the one asked for


def number(value: Any) -> str:
    """92.0 -> "92", 184321.0 -> "184321", 0.912345 -> "0.91235": never an exponent that hides digits."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}"


def with_unit(value: Any, unit: str | None) -> str:
    """`92%`, `4.2s`, `3.8GB`, but `184000 messages`: a word unit gets a space."""
    unit = unit or ""
    return number(value) + (" " if unit[:1].isalpha() and len(unit) > 2 else "") + unit


def pairs(item: dict[str, Any], keys: tuple[str, ...]) -> list[str]:
    """`key=value` for each of `keys` that the item has a non-empty value for."""
    return [f"{key}={item[key]}" for key in keys if item.get(key) not in (None, "")]


def level_filter(level: str | None, strict: bool) -> str:
    """`level>=WARN (lines without a level kept)`: the level filter as every scope statement words it."""
    if not level:
        return ""
    return f"level>={level} (lines without a level {'dropped' if strict else 'kept'})"


def range_text(scope: dict[str, Any]) -> str:
    """`2023-01-29T10:03:00+08:00..2023-01-29T10:05:00+08:00 (whole snapshot)`: the absolute range a
    call searched and where it came from (the call, the snapshot's default, a live default)."""
    searched, origin = scope.get("range") or "", scope.get("range_origin") or ""
    if searched and origin:
        return f"{searched} ({origin})"
    return searched or f"({origin or 'not reported'})"


def no_evidence_text(tool_name: str, scope: dict[str, Any], message: str) -> str:
    """What a call that found nothing searched. A scope recorded before absolute ranges existed
    (no `range_origin`) keeps its old wording (level, window), so its refs still re-derive."""
    query = " ".join(str(part) for part in (scope.get("service"), scope.get("alertname"), scope.get("metric")) if part)
    keywords = " ".join(scope.get("keywords") or [])
    query = " ".join(part for part in (query, keywords) if part) or "(all)"
    parts = [f"{tool_name} returned no evidence", "evidence_status=no_evidence", f"query={query}"]
    ranged = bool(scope.get("range_origin"))
    if scope.get("level"):
        parts.append(
            level_filter(scope["level"], bool(scope.get("level_strict"))) if ranged else f"level>={scope['level']}"
        )
    if scope.get("window"):
        parts.append(f"window={scope['window']}")
    if scope.get("state"):  # alerts asked in a state other than active (firing or pending)
        parts.append(f"alert_state={scope['state']}")
    if ranged:
        parts.append(f"range={range_text(scope)}")
    parts.append("total=0")
    if message:
        parts.append(f"message={message}")
    return "; ".join(parts)


def positive_refs(tool_name: str, output: dict[str, Any]) -> list[EvidenceRef]:
    """One ref per item of the tool's evidence arrays, in the spec's array order; a single item
    (`$.stats`) only when some list item is a ref too."""
    arrays = registry.get(tool_name).arrays
    if not any(output.get(array.name) for array in arrays if not array.single):
        return []
    refs = []
    for array in arrays:
        value = output.get(array.name)
        if array.single:
            if isinstance(value, dict) and value:
                refs.append(EvidenceRef(raw_path=f"$.{array.name}", text=array.render(value)))
            continue
        for index, item in enumerate(value or []):
            refs.append(EvidenceRef(raw_path=f"$.{array.name}[{index}]", text=array.render(item)))
    return refs


def cited_ref(tool_name: str, output: dict[str, Any], raw_path: str) -> tuple[bool, str | None]:
    """(whether `positive_refs` gives the output any ref, the text of its ref at `raw_path` or None), rendering
    only that one item: the Gatekeeper re-derives each cited ref of a call that may hold hundreds. An output
    whose list arrays are not lists (hand-edited) is read as `positive_refs` reads it."""
    arrays = registry.get(tool_name).arrays
    any_item = False
    for array in arrays:
        value = None if array.single else output.get(array.name)
        if value and not isinstance(value, list):
            refs = positive_refs(tool_name, output)
            return bool(refs), next((ref.text for ref in refs if ref.raw_path == raw_path), None)
        any_item = any_item or bool(value)
    if not any_item:
        return False, None
    for array in arrays:  # the first array whose ref has this path, as positive_refs lists them
        value = output.get(array.name)
        if array.single:
            if raw_path == f"$.{array.name}" and isinstance(value, dict) and value:
                return True, array.render(value)
            continue
        items = value or []
        prefix = f"$.{array.name}["
        index = raw_path[len(prefix) : -1] if raw_path.startswith(prefix) and raw_path.endswith("]") else ""
        # positive_refs writes an index as str(int): "01", "+1" or "١" name no ref
        if index.isascii() and index.isdigit() and str(int(index)) == index and int(index) < len(items):
            return True, array.render(items[int(index)])
    return True, None


def no_evidence_ref(tool_name: str, scope: dict[str, Any], message: str) -> EvidenceRef:
    return EvidenceRef(raw_path=NO_EVIDENCE_PATH, text=no_evidence_text(tool_name, scope, message))


def evidence(
    tool_name: str, output: dict[str, Any], scope: dict[str, Any], *, dedup_reason: str | None
) -> tuple[EvidenceStatus, list[EvidenceRef]]:
    """(evidence_status, refs) of a successful call from its masked, capped output.

    The runner records exactly this, and the Gatekeeper re-derives it from a
    recorded invocation, so a ref text edited after the run is detected.
    """
    positive = positive_refs(tool_name, output)
    if positive:
        return "supported", positive
    if dedup_reason:
        return "deduped", []
    if output.get("truncated") or output.get("total"):
        # Matches were reported but none returned: that is not "found nothing".
        return "failed", []
    return "no_evidence", [no_evidence_ref(tool_name, scope, output.get("message", ""))]
