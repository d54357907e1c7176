"""How a recorded tool call is shown to a model (and, identically, to a user).

Only the invocation id, the call, its evidence status and the evidence refs are
shown — never the raw output — inside a delimited block, so that log text stays
data: a line saying "ignore previous instructions" is quoted evidence, not an
instruction, and cannot close the block early.
"""

from __future__ import annotations

from evcli.contracts import ToolInvocation


def quote(text: str) -> str:
    """Text safe inside a delimited block: its < and > written as ‹ and ›."""
    return text.replace("<", "‹").replace(">", "›")


def call_signature(invocation: ToolInvocation) -> str:
    params = ", ".join(f"{key}={value!r}" for key, value in invocation.input_params.items())
    return f"{invocation.tool_name}({params})"


def model_view(invocation: ToolInvocation) -> str:
    details = invocation.retrieval_details
    status = details.evidence_status if details else "unknown"
    # id 0: the call was run on its own (`evcli tool` without --session), not recorded in a session
    invocation_id = invocation.invocation_id or "unrecorded"
    header = f'<evidence invocation="{invocation_id}" tool="{invocation.tool_name}" status="{status}">'
    lines = [header, f"call: {quote(call_signature(invocation))}"]
    if invocation.error_message:
        lines.append(f"error: {quote(invocation.error_message)}")
    if invocation.dedup_reason:
        lines.append(f"deduped: {quote(invocation.dedup_reason)}")
    if details and details.truncated:
        lines.append("truncated: true (more matches exist than were returned)")
    for ref in (details.evidence_refs or []) if details else []:
        lines.append(f"{ref.raw_path}: {quote(ref.text)}")
    lines.append("</evidence>")
    return "\n".join(lines)
