"""`evcli trace SESSION|FILE`: the whole story of one session."""

from __future__ import annotations

from typing import Annotated

import typer

from evcli.cli._common import DbOption, JsonOption, handles_errors, load_source, out, print_json
from evcli.core.console import safe  # every data value: markup escaped, controls visible


@handles_errors
def trace_command(
    source: Annotated[str, typer.Argument(help="A stored session id or an exported session JSON file.")],
    json_output: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Show question, plan, tool invocations, claims and bindings, gate history, verdict and answer."""
    document, store = load_source(source, db)
    integrity = store.check_integrity() if store is not None else None  # runs while the trace is rendered
    if json_output:
        print_json(document.model_dump(mode="json"))
    else:
        out.print(_tree(document))
    if integrity is not None:
        from evcli.cli.sessions import warn_if_damaged

        warn_if_damaged(integrity)


def _tree(document):
    from rich.tree import Tree

    from evcli.report.model import fact_text

    run = document.run
    root = Tree(
        f"[bold]session {safe(run.session_id)}[/] · {safe(run.mode)} · status {safe(run.status)}"
        + (f" · verdict [bold]{safe(run.verdict)}[/]" if run.verdict else "")
        + f" · {safe(run.created_at)}"
    )
    root.add(f"question: {safe(run.question) or '-'}")
    if run.config.continues:
        root.add(f"continues session {safe(run.config.continues)}")
    if run.config.replay_of:
        root.add(f"replay of {safe(run.config.replay_of.session_id)} from {safe(run.config.replay_of.from_stage)}")
    if run.config.scope is not None:
        from evcli.scope.describe import describe

        asked = root.add("asked scope")
        for label, value in describe(run.config.scope):
            asked.add(f"{label}: {safe(value)}")

    plan = document.latest_stage("plan")
    if plan and plan.output:
        node = root.add(f"plan · skill {safe(str(plan.output.get('selected_skill') or '-'))}")
        if plan.parse_status.get("fallback"):
            node.add(
                f"[yellow]{safe(str(plan.parse_status['fallback']))}[/] (the model's planner failed: "
                f"{safe(str(plan.parse_status.get('model_error')))})"
            )
        if plan.parse_status.get("reading"):  # the model's own reading of the question, as code checked it
            from evcli.agents.reading import ReadingReview, described

            node.add(f"reading: {safe(described(ReadingReview.model_validate(plan.parse_status['reading'])))}")
        for index, step in enumerate(plan.output.get("plan") or [], start=1):
            node.add(f"{index}. {safe(str(step))}")

    tools = root.add(f"tool invocations ({len(document.invocations)})")
    for invocation in document.invocations:
        details = invocation.retrieval_details
        status = details.evidence_status if details else "no retrieval details"
        params = ", ".join(f"{k}={v}" for k, v in sorted(invocation.input_params.items()))
        node = tools.add(
            f"#{invocation.invocation_id} [cyan]{safe(invocation.tool_name)}[/]({safe(params)}) · {safe(status)}"
            + (f" · [red]{safe(invocation.error_message)}[/]" if invocation.error_message else "")
            + f" · {invocation.duration_ms:.0f} ms"
        )
        for ref in (details.evidence_refs or []) if details else []:
            node.add(f"{safe(ref.raw_path)}: {safe(ref.text)}")

    latest_gate = document.gate_results[-1].result if document.gate_results else None
    checked_bindings = {(b.claim_id, b.binding_index): b for b in (latest_gate.checked_bindings if latest_gate else [])}
    for execute in (s for s in document.stage_outputs if s.stage == "execute"):
        output = execute.output or {}
        claims = output.get("claims") or []
        node = root.add(f"executor · round {execute.round} · {safe(execute.status)} · {len(claims)} claims")
        if "no_tool_call" in (execute.parse_status.get("notes") or []):
            node.add("[yellow]the model called no tool[/]: no evidence was gathered")
        for claim in claims:
            claim_node = node.add(
                f"{safe(str(claim.get('claim_id')))} [magenta]{safe(str(claim.get('claim_type')))}[/]: "
                f"{safe(str(claim.get('claim_text')))}"
            )
            for index, binding in enumerate(claim.get("evidence_bindings") or []):
                checked = checked_bindings.get((claim.get("claim_id"), index))
                gate_status = checked.status if checked else "not gated"
                colour = {"pass": "green", "fail": "red"}.get(gate_status, "dim")
                binding_node = claim_node.add(
                    f"{safe(str(binding.get('tool_name')))} #{safe(str(binding.get('source_invocation_id')))} "
                    f"{safe(str(binding.get('raw_path')))} "
                    f"“{safe(str(binding.get('evidence_excerpt')))}” [{colour}]{gate_status}[/]"
                )
                for fact in checked.facts if checked else []:
                    binding_node.add(f"[{'green' if fact.ok else 'red'}]{safe(fact_text(fact))}[/]")
        for key in ("hypotheses", "missing_info", "recommended_actions"):
            if output.get(key):
                extra = node.add(key)
                for item in output[key]:
                    extra.add(safe(item if isinstance(item, str) else str(item)))

    gates = root.add(f"gate results ({len(document.gate_results)})")
    for stored in document.gate_results:
        result = stored.result
        node = gates.add(
            f"#{stored.seq} {safe(stored.created_at)} · round {stored.round} · {result.status}/{result.severity} · "
            f"{safe(result.rule_set_version)} · failed: {safe(', '.join(result.failed_rules) or 'none')} · "
            f"{len(result.warnings)} warnings"
        )
        for finding in result.errors:
            if finding.asked or finding.searched:  # a scope finding: what was asked against what was searched
                node.add(
                    f"[yellow]{safe(finding.rule)}[/]: asked {safe(finding.asked or '-')}; "
                    f"searched {safe(finding.searched or '-')}"
                )

    verify = document.latest_stage("verify")
    if verify and verify.output:
        node = root.add(
            f"verifier · {safe(str(verify.output.get('verdict')))} · "
            f"groundedness {safe(str(verify.output.get('groundedness_score')))}"
        )
        node.add(safe(str(verify.output.get("rationale", ""))))
    compose = document.latest_stage("compose")
    if compose and compose.output:
        node = root.add(f"composer · {safe(str(compose.output.get('answer_summary', '')))}")
        node.add(safe(str(compose.output.get("user_facing_answer", ""))))
    if document.steps:
        prompt_tokens = sum(step.prompt_tokens for step in document.steps)
        reported = [step.cached_tokens for step in document.steps if step.cached_tokens is not None]
        steps = root.add(
            f"agent steps ({len(document.steps)}) · tokens {prompt_tokens}+"
            f"{sum(step.completion_tokens for step in document.steps)}"
            + (_cached_share(sum(reported), prompt_tokens) if reported else "")
        )
        for step in document.steps:
            node = steps.add(
                f"{safe(step.agent)} r{step.round}.{step.step_index} · {safe(step.model or '-')} · {safe(step.status)} · "
                f"{step.duration_ms:.0f} ms · tokens {step.prompt_tokens}+{step.completion_tokens}"
                + (_cached_share(step.cached_tokens, step.prompt_tokens) if step.cached_tokens is not None else "")
            )
            if step.error:  # a failed or unusable call: what went wrong, and what the model said (masked when stored)
                node.add(f"[red]error[/]: {safe(step.error)}")
            if step.status != "completed" and step.model_output_summary:
                node.add(f"reply: {safe(_shortened(step.model_output_summary))}")
    return root


def _shortened(text: str, limit: int = 600) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


def _cached_share(cached: int, prompt: int) -> str:
    """` · cached 7.2k/9.1k (79%)`: prompt tokens the provider read from its prompt cache, of all prompt tokens."""
    share = f" ({cached / prompt:.0%})" if prompt else ""
    return f" · cached {_token_count(cached)}/{_token_count(prompt)}{share}"


def _token_count(count: int) -> str:
    """950 → 950, 9100 → 9.1k, 1250000 → 1.2M."""
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if count >= size:
            return f"{count / size:.1f}{suffix}"
    return str(count)
