"""Running one evidence tool call: validate, guard, fetch, cap, mask, cite.

`run_tool` returns a `ToolInvocation` ready to be recorded (the store assigns
its per-session id). What a model is later shown of it is exactly
`retrieval_details.evidence_refs`: one ref per array item, or `$.no_evidence`
when a successful, untruncated query found nothing. A backend that fails gives
`evidence_status: failed` and no refs — never a fake "no evidence".

A call's timeout is real: the fetch runs under a deadline that every snapshot
read checks (`evcli.core.files`), so at the timeout the work stops and the
invocation is recorded failed ("timed out after 15s"). The fetch runs on one of
the process's kept daemon threads (`evcli.core.pools`), so even a backend that
never checks cannot keep the process alive, and the later calls get other threads.

A call is admitted (`admit`: parameters validated, the guards passed) and then run
(`run_admitted`), so the calls of one model reply can be admitted in the order asked
and run side by side (`evcli.tools.batch`); `run_tool` is the two in a row.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from evcli.backends.base import EvidenceBackend
from evcli.contracts import RetrievalDetails, ToolInvocation
from evcli.core.errors import BackendError, BadInput
from evcli.core.files import Deadline, DeadlineExceeded, deadline_scope
from evcli.core.pools import threads
from evcli.core.redaction import Redactor
from evcli.tools import guards, refs, registry
from evcli.tools.fetch import Outcome, cap_text
from evcli.tools.params import ToolParams
from evcli.tools.registry import validate_params

TIMEOUT_ENV = "EVCLI_TOOL_TIMEOUT_S"
_STOP_GRACE_S = 1.0  # how long a timed-out worker gets to reach its next deadline check
_STOP_POLL_S = 0.05  # how soon a call run beside others notices that its batch was abandoned


@dataclass(frozen=True)
class ToolSettings:
    timeout_s: float = 15.0
    max_calls_per_tool: int = 8
    max_items: int = 100  # alerts + series per call
    max_text_chars: int = 2000  # per string field of an item

    @classmethod
    def from_env(cls) -> ToolSettings:
        """The defaults, with the per-call timeout from $EVCLI_TOOL_TIMEOUT_S (seconds) when set."""
        raw = os.environ.get(TIMEOUT_ENV, "").strip()
        if not raw:
            return cls()
        try:
            seconds = float(raw)
        except ValueError:
            seconds = math.nan
        if not (math.isfinite(seconds) and seconds > 0):
            raise BadInput(f"${TIMEOUT_ENV} must be a positive number of seconds, got {raw!r}")
        return cls(timeout_s=seconds)


@dataclass
class ToolEnvironment:
    """Where evidence comes from for one run."""

    backend: EvidenceBackend
    knowledge: Callable[[], Any]  # -> the backend serving the knowledge capability, built on first use
    redactor: Redactor = field(default_factory=Redactor)
    settings: ToolSettings = field(default_factory=ToolSettings)


class HistoryPending(Exception):
    """A call run beside earlier calls of its reply read the session's history before those were recorded:
    what it found could depend on them, so it is run again at its turn (`evcli.tools.batch`)."""


class SessionView:
    """What the guards and a tool's fetch know of the session the call belongs to.

    `settled=False` marks a call started before the calls asked ahead of it in the same model reply
    were recorded: reading `invocations` then raises `HistoryPending` instead of answering from a
    history that lacks them (lookup_knowledge leaves out blocks an earlier call returned)."""

    def __init__(
        self, invocations: list[ToolInvocation] | None = None, narrow: bool = False, *, settled: bool = True
    ) -> None:
        self._invocations = invocations if invocations is not None else []
        self.narrow = narrow
        self.settled = settled

    @property
    def invocations(self) -> list[ToolInvocation]:
        if not self.settled:
            raise HistoryPending("earlier calls of this reply are not recorded yet")
        return self._invocations


@dataclass(frozen=True)
class AdmittedCall:
    """A call whose parameters are valid and that the guards let through: what runs and is recorded."""

    spec: registry.ToolSpec
    params: ToolParams
    input_params: dict[str, Any]  # validated and masked: what is recorded, compared and shown

    @property
    def tool_name(self) -> str:
        return self.spec.name


def run_tool(
    tool_name: str, raw_params: dict[str, Any], env: ToolEnvironment, session: SessionView | None = None
) -> ToolInvocation:
    session = session or SessionView()
    return run_admitted(admit(tool_name, raw_params, env, session), env, session)


def admit(tool_name: str, raw_params: dict[str, Any], env: ToolEnvironment, session: SessionView) -> AdmittedCall:
    """The call, validated and passed by the guards on `session`; `BadInput` or `ToolRefused` otherwise
    (nothing has run)."""
    spec = registry.get(tool_name)  # an unknown tool is a usage error before anything runs
    params = validate_params(tool_name, raw_params)
    input_params = env.redactor.mask(params.model_dump(exclude_none=True, exclude_defaults=False))

    guards.check_call_cap(tool_name, session.invocations, env.settings.max_calls_per_tool)
    guards.check_repeat(tool_name, input_params, session.invocations)
    if session.narrow:
        guards.check_narrow_widening(spec, input_params, session.invocations)
    return AdmittedCall(spec, params, input_params)


def run_admitted(
    call: AdmittedCall, env: ToolEnvironment, session: SessionView, stop: threading.Event | None = None
) -> ToolInvocation:
    """Fetch under the per-call timeout, then cap, mask and cite: the invocation to record (id 0).
    `stop` set gives the call up at once (`CallAbandoned`): its batch was abandoned."""
    spec, params, input_params, tool_name = call.spec, call.params, call.input_params, call.tool_name
    started = time.perf_counter()
    created_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    try:
        if spec.prepare is not None:
            spec.prepare(env.backend, params)  # before the deadline: a one-off index build is not the call's time
        outcome = _with_timeout(lambda: spec.fetch(params, env, session), env.settings.timeout_s, stop)
    except (BackendError, TimeoutError) as exc:
        message = env.redactor.mask_text(str(exc) or type(exc).__name__)
        return ToolInvocation(
            invocation_id=0,
            tool_name=tool_name,
            input_params=input_params,
            output={"error": message},
            output_preview=message[:300],
            retrieval_details=RetrievalDetails(
                evidence_status="failed", evidence_refs=[], **env.redactor.mask(spec.scope(params))
            ),
            duration_ms=round((time.perf_counter() - started) * 1000, 1),
            success=False,
            error_message=message,
            created_at=created_at,
        )

    output = env.redactor.mask(outcome.output)
    scope = env.redactor.mask(outcome.scope)  # query text can carry a secret too
    truncated = cap_text(output, spec.array_names, env.settings.max_text_chars) or bool(output.get("truncated"))
    output["truncated"] = truncated
    status, evidence_refs = refs.evidence(tool_name, output, scope, dedup_reason=outcome.dedup_reason)

    details = RetrievalDetails(
        evidence_status=status,
        evidence_refs=evidence_refs,
        truncated=truncated,
        **scope,
        **_marks(outcome),
    )

    return ToolInvocation(
        invocation_id=0,
        tool_name=tool_name,
        input_params=input_params,
        output=output,
        output_preview=json.dumps(output, ensure_ascii=False, separators=(",", ":"))[:300],
        retrieval_details=details,
        relevance_level=spec.relevance(output),
        dedup_reason=outcome.dedup_reason,
        duration_ms=round((time.perf_counter() - started) * 1000, 1),
        success=True,
        created_at=created_at,
    )


def _marks(outcome: Outcome) -> dict[str, Any]:
    """Extra retrieval_details keys: `unknown_service` lets the narrow-task guard allow a corrected service."""
    return {"unknown_service": True} if outcome.unknown_service else {}


def stored_guards(invocation: ToolInvocation, settings: ToolSettings) -> Callable[[list[ToolInvocation]], None]:
    """The guards that depend on what a session holds, for the store to re-run inside the write
    that records `invocation` (`TraceStore.record_invocation(check=...)`): calls that each loaded
    the session before the others were stored cannot pass the cap or repeat one another."""

    def check(stored: list[ToolInvocation]) -> None:
        guards.check_call_cap(invocation.tool_name, stored, settings.max_calls_per_tool)
        guards.check_repeat(invocation.tool_name, invocation.input_params, stored)

    return check


class CallAbandoned(Exception):
    """The batch a running call belonged to was given up (an interrupt, a failed call before it)."""


def _with_timeout(call: Callable[[], Outcome], timeout_s: float, stop: threading.Event | None = None) -> Outcome:
    """`call()` on one of the process's kept daemon threads (evcli.core.pools) under a deadline; TimeoutError
    once it passes, CallAbandoned once `stop` is set. The deadline is cancelled whichever way this returns (a
    Ctrl-C too), so the call stops at its next check; one that never checks keeps only its own thread."""
    deadline = Deadline(timeout_s)

    def work() -> Outcome:
        with deadline_scope(deadline):
            return call()

    running = threads().submit(work)
    try:
        _wait(running, timeout_s, stop)
    finally:
        deadline.cancel()
    if stop is not None and stop.is_set():
        raise CallAbandoned()
    if not running.done():
        futures.wait([running], _STOP_GRACE_S)  # not left running beside the next call
        raise TimeoutError(f"timed out after {timeout_s:g}s")
    try:
        return running.result()
    except DeadlineExceeded as exc:
        raise TimeoutError(str(exc)) from exc


def _wait(running: futures.Future[Outcome], timeout_s: float, stop: threading.Event | None) -> None:
    """Wait for `running` up to `timeout_s`, and no longer than `stop` stays clear (checked every
    _STOP_POLL_S: a pool thread that waits here must not keep an interrupted process alive)."""
    if stop is None:
        futures.wait([running], timeout_s)
        return
    ends = time.monotonic() + timeout_s
    while not running.done() and not stop.is_set() and (left := ends - time.monotonic()) > 0:
        futures.wait([running], min(left, _STOP_POLL_S))
