"""Human text for `evcli execute` and `evcli verify` (their `--json` prints the stage's data as is).

execute: the Executor's claims, each with the evidence it cites (tool, invocation, raw_path), its
hypotheses and missing information; verify: the verdict and one line per claim check. Each ends with
the next command of the chain. Every data value is shown literally (`safe`).
"""

from __future__ import annotations

from typing import Any

from evcli.core.console import out, safe

_NEXT = {"execute": "gate", "verify": "compose"}


def render_stage(stage: str, data: dict[str, Any]) -> None:
    output = data.get("output") or {}
    if stage == "execute":
        _executed(output)
    else:
        _verified(output, data.get("effective_verdict"))
    session = safe(data["session_id"])
    out.print(f"\nstatus {safe(data['status'])} · session {session} · next: evcli {_NEXT[stage]} {session}")


def _executed(output: dict[str, Any]) -> None:
    claims = output.get("claims") or []
    out.print(f"[bold]{len(claims)} claim{'s' * (len(claims) != 1)}[/]")
    for claim in claims:
        out.print(f"{safe(claim.get('claim_id'))} ({safe(claim.get('claim_type'))}) {safe(claim.get('claim_text'))}")
        for binding in claim.get("evidence_bindings") or []:
            where = f"{binding.get('tool_name')} #{binding.get('source_invocation_id')} {binding.get('raw_path')}"
            out.print(f"  ← {safe(where)}: {safe(binding.get('evidence_excerpt') or '')}")
    for title, key in (("hypotheses", "hypotheses"), ("missing", "missing_info")):
        for item in output.get(key) or []:
            text = item.get("hypothesis_text") or item.get("text") or item if isinstance(item, dict) else item
            out.print(f"{title}: {safe(text)}")


def _verified(output: dict[str, Any], effective: str | None) -> None:
    verdict = output.get("verdict") or "-"
    capped = f" (effective {safe(effective)}, capped by the gate)" if effective and effective != verdict else ""
    out.print(f"[bold]verdict {safe(verdict)}[/]{capped}")
    for check in output.get("claim_checks") or []:
        critical = ", critical" if check.get("is_critical") else ""
        out.print(
            f"{safe(check.get('claim_id'))}: {safe(check.get('verification'))}{critical}"
            + (f" — {safe(check.get('note'))}" if check.get("note") else "")
        )
