"""How the Executor's tool calls ran before the calls of one reply ran side by side: one after another, each
run with `run_tool` on the session as recorded so far and recorded before the next starts. The reference
the concurrent path (evcli/tools/batch.py) is compared with; it shares none of its code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evcli.agents.drafts import check_drafts
from evcli.agents.engine import CHECK_CLAIMS, ToolCall, Turn
from evcli.contracts import SessionDocument, ToolInvocation
from evcli.core.errors import BadInput
from evcli.pipeline import Pipeline
from evcli.tools.guards import ToolRefused
from evcli.tools.runner import SessionView, ToolEnvironment, run_tool
from evcli.tools.view import model_view


def run_in_turn(
    env: ToolEnvironment,
    history: list[ToolInvocation],
    record: Callable[[ToolInvocation], ToolInvocation],
    calls: list[tuple[str, dict[str, Any]]],
    *,
    narrow: bool,
) -> list[ToolInvocation | str]:
    """Each call run and recorded in turn: its recorded invocation, or the refusal's message."""
    outcomes: list[ToolInvocation | str] = []
    for name, params in calls:
        try:
            stored = record(run_tool(name, params, env, SessionView(invocations=history, narrow=narrow)))
        except (ToolRefused, BadInput) as exc:
            outcomes.append(exc.message)
            continue
        history.append(stored)
        outcomes.append(stored)
    return outcomes


def tool_runner(
    pipeline: Pipeline, session_id: str, document: SessionDocument, round: int, *, narrow: bool
) -> Callable[[list[ToolCall]], list[Turn]]:
    """`Pipeline._tool_runner` as it was: the calls of a reply run one by one (check_claims among them)."""
    from evcli.tools.runner import stored_guards

    invocations = list(document.invocations)
    tools = pipeline.tools()

    def record(invocation: ToolInvocation) -> ToolInvocation:
        in_round = invocation.model_copy(update={"round": round})
        return pipeline.store.record_invocation(session_id, in_round, check=stored_guards(invocation, tools.settings))

    def run_call(call: ToolCall) -> Turn:
        if call.name == CHECK_CLAIMS:
            view = check_drafts(document, invocations, call.arguments, pipeline.rules)
            pipeline.drafts_checked.append(view)
            return Turn(call=call, view=view)
        (outcome,) = run_in_turn(tools, invocations, record, [(call.name, call.arguments)], narrow=narrow)
        if isinstance(outcome, str):
            return Turn(call=call, view=f'<refused tool="{call.name}">{outcome}</refused>')
        return Turn(call=call, view=model_view(outcome), invocation=outcome)

    return lambda calls: [run_call(call) for call in calls]
