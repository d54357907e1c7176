"""The evidence calls of one model reply, run side by side with the outcome of running them one by one.

A model may ask for several calls in one reply. `CallBatch` runs them concurrently, at most
MAX_PARALLEL_CALLS at once (on the process's kept threads: `evcli.core.pools.Limited`), each under
the per-call timeout of `run_admitted`, and hands back what running them one after another, in the
order asked, gives.

Invariants:
  - outcomes and records follow the order asked: `settle` waits for each call in turn and records it
    from the calling thread (the store's connection never leaves it), so invocation ids are 1, 2, 3, …
    in ask order whatever order the calls finish in;
  - a call starts early, beside the calls asked before it, only when its admission cannot depend on
    them: it passes the guards on the recorded calls plus those already running (each will be
    recorded), no earlier call of its tool is still undecided, and in a narrow task no running call
    of its tool could turn it into a refused widening once that call's result is known;
  - every other call is decided at its turn on the calls recorded by then, exactly as one by one: a
    refusal (cap, identical repeat, widening, invalid parameters) names the recorded invocation, and a
    call refused before running never runs;
  - a call started early whose fetch reads the session's history (`HistoryPending`: lookup_knowledge
    leaves out blocks already returned) runs again at its turn, so what it returns never depends on
    thread timing;
  - MAX_PARALLEL_CALLS = 1 runs every call at its turn in the calling thread: the one-by-one path.

The backends are shared by the pool's threads; each backend module says how it stays safe.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from functools import cache
from typing import Any

from evcli.contracts import EvidenceRef, RetrievalDetails, ToolInvocation
from evcli.core.errors import BadInput
from evcli.core.pools import Limited
from evcli.tools.guards import ToolRefused, may_refuse_as_wider
from evcli.tools.runner import AdmittedCall, HistoryPending, SessionView, ToolEnvironment, admit, run_admitted

MAX_PARALLEL_CALLS = 4  # calls of one reply that run at once; 1 runs them one at a time, in the order asked

Record = Callable[[ToolInvocation], ToolInvocation]  # stores an invocation, returns it with its id (may refuse)


@dataclass(frozen=True)
class Settled:
    """One call's outcome: its recorded invocation, or the message refusing it (refused by the guards, it
    never ran; the store's own check refuses only a call another process's calls have capped or repeated)."""

    invocation: ToolInvocation | None = None
    refusal: str | None = None


@dataclass
class _Asked:
    tool_name: str
    arguments: dict[str, Any]
    admitted: AdmittedCall | None = None  # set when it started early
    running: Future[ToolInvocation] | None = None


@cache
def _built_before_threads() -> None:
    """What calls build on their first use, built once in the calling thread before calls run side by side.

    Why: CPython 3.11 keeps one counter per interpreter while it turns parsed source into `ast` objects, so
    two threads doing that at once fail with "SystemError: AST constructor recursion depth mismatch".
    pydantic's first build of a model (`inspect.signature` of a builtin default factory parses its text
    signature) and numpy's first import (numpy.ma does the same) both do it."""
    import numpy.ma  # noqa: F401  (what evcli.backends.metric_arrays imports)

    for model in (ToolInvocation, RetrievalDetails, EvidenceRef):
        model.model_rebuild()


class CallBatch:
    """The calls of one reply: `ask` each in order, then `settle` for their outcomes in that order.

    `history` is the session's recorded invocations; every call recorded is appended to it. `record`
    stores an invocation (the store may still refuse it: `ToolRefused`)."""

    def __init__(
        self,
        env: ToolEnvironment,
        history: list[ToolInvocation],
        record: Record,
        *,
        narrow: bool,
        workers: int | None = None,
    ) -> None:
        """`workers`: calls run at once (default MAX_PARALLEL_CALLS; 1: one at a time, at its turn)."""
        self.env, self.history, self.record, self.narrow = env, history, record, narrow
        self._asked: list[_Asked] = []  # asked and not settled yet, in ask order
        self._stop = threading.Event()
        workers = MAX_PARALLEL_CALLS if workers is None else workers
        if workers > 1:
            _built_before_threads()
        self._pool = Limited(workers) if workers > 1 else None

    def __enter__(self) -> CallBatch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Calls asked and not settled (an interrupt, a failure) are given up at once: queued ones never
        start, running ones stop waiting and are not recorded (every call settled has finished)."""
        if self._asked:
            self._stop.set()
            if self._pool is not None:
                self._pool.cancel_waiting()

    def ask(self, tool_name: str, arguments: dict[str, Any]) -> None:
        asked = _Asked(tool_name, arguments)
        if self._pool is not None:
            self._start_early(asked, self._pool)
        self._asked.append(asked)

    def settle(self) -> list[Settled]:
        """Every call asked since the last settle, waited for and recorded in the order asked."""
        outcomes = []
        while self._asked:
            outcomes.append(self._settle(self._asked[0]))
            self._asked.pop(0)
        return outcomes

    def _start_early(self, asked: _Asked, pool: Limited) -> None:
        """Start `asked` now when its admission cannot depend on the calls asked before it."""
        running = [earlier.admitted for earlier in self._asked if earlier.admitted is not None]
        if any(earlier.admitted is None and earlier.tool_name == asked.tool_name for earlier in self._asked):
            return  # an undecided call of its tool: whether it is recorded changes the cap and the repeats
        ahead = SessionView([*self.history, *map(_placeholder, running)], self.narrow)
        try:
            admitted = admit(asked.tool_name, asked.arguments, self.env, ahead)
        except (ToolRefused, BadInput):
            return  # decided at its turn, on the recorded calls its refusal names
        if self.narrow and any(
            earlier.tool_name == admitted.tool_name
            and may_refuse_as_wider(admitted.spec, earlier.input_params, admitted.input_params)
            for earlier in running
        ):
            return  # refused or not according to what that call finds
        session = SessionView(list(self.history), self.narrow, settled=not self._asked)
        asked.admitted = admitted
        asked.running = pool.submit(run_admitted, admitted, self.env, session, self._stop)

    def _settle(self, asked: _Asked) -> Settled:
        try:
            invocation = self._result(asked)
            stored = self.record(invocation)
        except (ToolRefused, BadInput) as exc:
            return Settled(refusal=exc.message)
        self.history.append(stored)
        return Settled(invocation=stored)

    def _result(self, asked: _Asked) -> ToolInvocation:
        """The call's invocation: the early run's, else a run now, admitted on the calls recorded so far."""
        if asked.running is not None:
            try:
                return asked.running.result()
            except HistoryPending:
                pass  # it read a history that lacked the calls before it: run again below, on the whole one
        session = SessionView(list(self.history), self.narrow)
        admitted = admit(asked.tool_name, asked.arguments, self.env, session)
        if self._pool is None:
            return run_admitted(admitted, self.env, session)
        return self._pool.submit(run_admitted, admitted, self.env, session, self._stop).result()


def _placeholder(call: AdmittedCall) -> ToolInvocation:
    """A running call as the cap and the repeat guard see it: its tool and parameters (it will be recorded)."""
    return ToolInvocation(invocation_id=0, tool_name=call.tool_name, input_params=call.input_params)
