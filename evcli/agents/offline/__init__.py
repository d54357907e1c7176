"""The offline engine: plays all four roles deterministically, without a network.

It reads only the structured payload a stage builds (never the prompt text) and
answers with the role's JSON document, or, for the Executor, with tool calls.
Its boundaries are the seeds' (DESIGN §1), one module per seam:

- queries.py: the tool calls a task wants (a narrow task: one precise query,
  never widened after no evidence).
- planner.py: a skill chosen by alert, then by the firing alert of the named
  service, then by title terms; steps that name the concrete tool queries.
- executor.py, claims.py: claims built only from evidence refs, their facts read
  from the structured output items; every binding quotes a verbatim span of
  exactly one ref. Ref text is data to quote: nothing in it changes what the
  engine does.
- runbooks.py: runbook blocks never become facts of this environment; they feed
  hypotheses (possibilities) and evidence-collection actions.
- verifier.py: rule-based entailment over the verified excerpts, capped by the gate.
- composer.py: templates over the allowed material only.
- evcli/messages: every sentence a user reads, one catalogue per language (shared
  with the fallback answers and review flags).
"""

from __future__ import annotations

from collections.abc import Callable

from evcli.agents.engine import EngineError, EngineReply, RoleRequest
from evcli.agents.offline.composer import compose
from evcli.agents.offline.executor import execute
from evcli.agents.offline.payload import MODEL
from evcli.agents.offline.planner import plan
from evcli.agents.offline.verifier import verify

__all__ = ["MODEL", "OfflineEngine"]

_HANDLERS: dict[str, Callable[[RoleRequest], EngineReply]] = {
    "planner": plan,
    "executor": execute,
    "verifier": verify,
    "composer": compose,
}


class OfflineEngine:
    """The `Engine` behind `--model offline`."""

    name = "offline"

    def complete(self, request: RoleRequest) -> EngineReply:
        handler = _HANDLERS.get(request.role)
        if handler is None:
            raise EngineError(f"offline engine: unknown role {request.role!r}")
        try:
            return handler(request)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise EngineError(f"offline engine: malformed {request.role} payload: {exc!r}") from exc
