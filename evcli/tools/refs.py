"""Evidence refs: one compact line per item of a tool's evidence arrays.

The ref text is what the Gatekeeper compares excerpts with and what a model is
shown, so it merges each item's fields into one line in a fixed order, e.g.
`HighCPUUsage, service=payment-service, state=firing, current=92%, duration=25m`.
"""

from __future__ import annotations

from typing import Any

from evcli.contracts import NO_EVIDENCE_PATH, EvidenceRef, EvidenceStatus


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


def _pairs(item: dict[str, Any], keys: tuple[str, ...]) -> list[str]:
    return [f"{key}={item[key]}" for key in keys if item.get(key) not in (None, "")]


def alert_text(alert: dict[str, Any]) -> str:
    parts = [str(alert.get("alertname") or "alert")]
    parts += _pairs(alert, ("service", "instance", "severity", "state"))
    if alert.get("value") is not None:
        parts.append(f"current={with_unit(alert['value'], alert.get('unit'))}")
    parts += _pairs(alert, ("duration", "active_at", "summary"))
    return ", ".join(parts)


def series_text(series: dict[str, Any]) -> str:
    stats = " ".join(
        f"{key}={with_unit(series[key], series.get('unit'))}" for key in ("min", "max", "last") if series.get(key) is not None
    )
    return f"{series.get('service')} {series.get('metric')} window={series.get('window')} {stats}".strip()


def log_text(log: dict[str, Any]) -> str:
    timestamp = str(log.get("timestamp") or "").replace("T", " ").removesuffix("Z")
    fields = (timestamp, log.get("level"), log.get("service"), log.get("instance"), log.get("message"))
    return " ".join(str(field) for field in fields if field)


def block_text(block: dict[str, Any]) -> str:
    return f"{block.get('doc')} › {block.get('heading')}: {block.get('text')}"


def no_evidence_text(tool_name: str, scope: dict[str, Any], message: str) -> str:
    query = " ".join(str(part) for part in (scope.get("service"), scope.get("alertname"), scope.get("metric")) if part)
    keywords = " ".join(scope.get("keywords") or [])
    query = " ".join(part for part in (query, keywords) if part) or "(all)"
    parts = [f"{tool_name} returned no evidence", "evidence_status=no_evidence", f"query={query}"]
    if scope.get("level"):
        parts.append(f"level>={scope['level']}")
    if scope.get("window"):
        parts.append(f"window={scope['window']}")
    parts.append("total=0")
    if message:
        parts.append(f"message={message}")
    return "; ".join(parts)


_ARRAYS = {
    "alerts": alert_text,
    "series": series_text,
    "logs": log_text,
    "evidence_blocks": block_text,
}


def positive_refs(output: dict[str, Any]) -> list[EvidenceRef]:
    refs = []
    for array, render in _ARRAYS.items():
        for index, item in enumerate(output.get(array) or []):
            refs.append(EvidenceRef(raw_path=f"$.{array}[{index}]", text=render(item)))
    return refs


def no_evidence_ref(tool_name: str, scope: dict[str, Any], message: str) -> EvidenceRef:
    return EvidenceRef(raw_path=NO_EVIDENCE_PATH, text=no_evidence_text(tool_name, scope, message))


def evidence(
    tool_name: str, output: dict[str, Any], scope: dict[str, Any], *, dedup_reason: str | None
) -> tuple[EvidenceStatus, list[EvidenceRef]]:
    """(evidence_status, refs) of a successful call from its masked, capped output.

    The runner records exactly this, and the Gatekeeper re-derives it from a
    recorded invocation, so a ref text edited after the run is detected.
    """
    positive = positive_refs(output)
    if positive:
        return "supported", positive
    if dedup_reason:
        return "deduped", []
    if output.get("truncated") or output.get("total"):
        # Matches were reported but none returned: that is not "found nothing".
        return "failed", []
    return "no_evidence", [no_evidence_ref(tool_name, scope, output.get("message", ""))]
