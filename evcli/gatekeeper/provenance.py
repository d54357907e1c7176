"""Session-file trust: what a session document can show about where its evidence came from.

A session file is plain JSON, so anything in it can be edited. Three kinds of
check narrow what an edit can get through the Gatekeeper:

- *Derivable refs* (pure): a ref text is what `evcli.tools.refs.evidence` renders from
  the invocation's recorded output (which the runner stored already masked and
  capped), so a ref edited while the output stayed unchanged is detected.
- *Accounting* (pure): ids are 1..n in call order, and a cited invocation was
  recorded by the run: in a round whose executor called tools, not after the
  executor output that cites it, and not beyond the number of calls the
  executor's recorded steps list. A hand-added invocation that is consistent
  with all of this cannot be told apart from the document alone: nothing in it
  is signed.
- *Sources* (I/O, only with `gate --against DIR`): each invocation is re-run
  with its recorded parameters on the snapshot environment DIR (whose clock is
  its own, so relative windows mean what they meant) and the cited refs are
  compared with the re-derived ones. Invocations of live backends cannot be
  re-run from DIR and are reported as not re-checked.
  With `gate --against URL` the URL is the live backend the session named at that
  URL, else the only live backend it named, else a Prometheus (`against_kind`).
  Each invocation that backend serves (its tool reads what the backend provides:
  metrics or alerts for Prometheus, traces for Jaeger and Tempo) is re-run there
  at the time it searched (a live clock has moved on: "the last hour" then is not
  the last hour now): a call that named no time on a clock set to the end of the
  hour it searched, any other with its time pinned to the absolute range it
  recorded, so its series are the same expressions over the same range at the
  same step and its spans those of the same range. Alerts are Prometheus' state
  when the call ran and cannot be asked of the past: a cited alert is reported
  as not re-checked, as is every invocation the backend does not serve (logs,
  runbooks).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from evcli.contracts import AgentStep, EvidenceRef, SessionDocument, StageOutput, ToolInvocation
from evcli.tools.refs import cited_ref, evidence


@dataclass(frozen=True)
class Rederived:
    """One invocation re-run from the sources: its refs, why it could not be re-run, or why it was not re-checked."""

    status: str | None = None
    refs: tuple[EvidenceRef, ...] = ()
    error: str | None = None  # the recorded call cannot be made again: it does not match its source
    not_rechecked: str | None = None  # the source is not in DIR (a live backend)
    now_only: tuple[str, ...] = ()  # arrays whose items are the source's state when the call ran (live alerts)


@dataclass(frozen=True)
class SessionRecord:
    """What the document recorded about the run around the gated executor output."""

    output_created_at: str | None = None  # when the gated executor output was stored
    output_round: int | None = None
    steps: tuple[AgentStep, ...] = ()
    sources: dict[int, Rederived] | None = None  # None: sources were not re-checked
    against: str | None = None


def session_record(
    document: SessionDocument,
    execute: StageOutput,
    sources: dict[int, Rederived] | None = None,
    against: Path | str | None = None,
) -> SessionRecord:
    return SessionRecord(
        output_created_at=execute.created_at or None,
        output_round=execute.round,
        steps=tuple(document.steps),
        sources=sources,
        against=shown(against),
    )


# --- ids -----------------------------------------------------------------------------


def duplicate_ids(invocations: list[ToolInvocation]) -> set[int]:
    counts = Counter(invocation.invocation_id for invocation in invocations)
    return {invocation_id for invocation_id, count in counts.items() if count > 1}


def ids_unique(duplicates: set[int]) -> str | None:
    if not duplicates:
        return None
    return f"invocation id(s) {', '.join(str(i) for i in sorted(duplicates))} recorded more than once"


def ambiguous_id(invocation_id: int | None, duplicates: set[int]) -> str | None:
    if invocation_id in duplicates:
        return f"source_invocation_id {invocation_id} names more than one recorded invocation"
    return None


# --- derivable refs ----------------------------------------------------------------------


def derived_evidence(invocation: ToolInvocation) -> tuple[str, list[EvidenceRef]]:
    """(evidence_status, refs) the runner records for this invocation's recorded output."""
    if not invocation.success:
        return "failed", []
    details = invocation.retrieval_details
    scope = details.model_dump(exclude={"evidence_status", "evidence_refs"}) if details else {}
    return evidence(invocation.tool_name, invocation.output, scope, dedup_reason=invocation.dedup_reason)


def derived_ref(invocation: ToolInvocation, raw_path: str) -> tuple[str, str | None]:
    """(evidence_status, the text of the ref at `raw_path` or None) as `derived_evidence` gives them; of a call
    that found evidence only the cited item is rendered (a gate compares the cited refs, not the others)."""
    if not invocation.success:
        return "failed", None
    positive, text = cited_ref(invocation.tool_name, invocation.output, raw_path)
    if positive:
        return "supported", text
    status, refs = derived_evidence(invocation)
    return status, next((r.text for r in refs if r.raw_path == raw_path), None)


def refs_derivable(invocation: ToolInvocation, ref: EvidenceRef, derived: tuple[str, str | None]) -> str | None:
    """`derived`: `derived_ref` of the ref's path."""
    status, expected = derived
    recorded_status = invocation.retrieval_details.evidence_status if invocation.retrieval_details else None
    where = f"invocation {invocation.invocation_id} ({invocation.tool_name})"
    if recorded_status != status:
        return f"{where} records evidence_status {recorded_status}, its recorded output gives {status}"
    if expected is None:
        return f"{where}: ref {ref.raw_path} is not derived from the recorded output"
    if expected != ref.text:
        return f"{where}: ref {ref.raw_path} text differs from what its recorded output renders ({_clip(expected)})"
    return None


def invocation_succeeded(invocation: ToolInvocation) -> str | None:
    details = invocation.retrieval_details
    if invocation.success and (details is None or details.evidence_status != "failed"):
        return None
    reason = invocation.error_message or (details.evidence_status if details else "success=false")
    return (
        f"invocation {invocation.invocation_id} is recorded as failed ({_clip(reason)}); a failed call is not evidence"
    )


# --- accounting ----------------------------------------------------------------------------


def recorded_by_run(invocation: ToolInvocation, invocations: list[ToolInvocation], record: SessionRecord) -> str | None:
    """Why the document does not show this cited invocation as produced by the run, or None."""
    where = f"invocation {invocation.invocation_id}"
    if not 1 <= invocation.invocation_id <= len(invocations):
        return f"{where}: ids are 1..n in call order and this session has {len(invocations)} invocations"
    made = _time(invocation.created_at)
    cited_at = _time(record.output_created_at)
    if made and cited_at and made > cited_at:
        return f"{where} was recorded at {invocation.created_at}, after the executor output citing it ({record.output_created_at})"
    if not has_executor_steps(record):
        return None  # e.g. a replay seeded with another session's evidence (the caller warns once)
    callers = [s for s in record.steps if s.agent == "executor" and s.round == invocation.round and s.has_tool_call]
    if not callers:
        return f"{where} is in round {invocation.round}, where no executor step recorded a tool call"
    if made and all((step_at := _time(s.created_at)) and step_at > made for s in callers):
        return f"{where} was recorded before any executor step of round {invocation.round} called a tool"
    calls = _listed_calls(callers)
    if calls is not None:
        used = sum(1 for i in invocations if i.round == invocation.round and i.tool_name == invocation.tool_name)
        if used > calls[invocation.tool_name]:
            return (
                f"round {invocation.round} records {used} {invocation.tool_name} invocations, "
                f"its executor steps list {calls[invocation.tool_name]} such calls"
            )
    return None


def has_executor_steps(record: SessionRecord) -> bool:
    return any(step.agent == "executor" for step in record.steps)


def _listed_calls(steps: list[AgentStep]) -> Counter | None:
    """Tool calls per tool listed in the steps' summaries; None when any summary is not a complete list."""
    calls: Counter = Counter()
    for step in steps:
        try:
            listed = json.loads(step.model_output_summary)
        except ValueError:
            return None  # cut at its length limit, or not a call list
        if not isinstance(listed, list) or not all(isinstance(c, dict) and "tool" in c for c in listed):
            return None
        calls.update(str(c["tool"]) for c in listed)
    return calls


def _time(value: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None
    except ValueError:
        return None


# --- sources (I/O) ----------------------------------------------------------------------------


def is_url(against: Path | str) -> bool:
    """Whether `--against` names a live server (http:// or https://) rather than a snapshot directory."""
    return isinstance(against, str) and against.lower().startswith(("http://", "https://"))


def shown(against: Path | str | None) -> str | None:
    """`--against` as messages and stored results name it: a URL without any `user:pass@`."""
    if against is None or not is_url(against):
        return None if against is None else str(against)
    from evcli.backends.http import split_credentials

    return split_credentials(str(against))[0]


def rederive(document: SessionDocument, env_dir: Path | str) -> dict[int, Rederived]:
    """Re-run every invocation of the session on the snapshot environment at env_dir, or on the
    live backend at a URL (`rederive_on_url`)."""
    if is_url(env_dir):
        return rederive_on_url(document, str(env_dir))
    env_dir = Path(env_dir)
    from evcli.backends.registry import live_backends
    from evcli.core.errors import EvcliError
    from evcli.tools import registry
    from evcli.tools.context import build_environment
    from evcli.tools.runner import SessionView, ToolSettings, run_tool

    # The guards (call cap, repeats) judged the original run; here they would only hide a copied invocation.
    environment = build_environment(env_dir, settings=ToolSettings(max_calls_per_tool=len(document.invocations) + 1))
    named = [kind for kind in live_backends() if document.run.config.env.get(kind.name)]
    results: dict[int, Rederived] = {}
    for position, invocation in enumerate(document.invocations):
        # Runbook files are in DIR; a backend's evidence is not when the session named a live backend that
        # serves it (a document naming Loki does not make its metrics or snapshot log lines live).
        live = [kind.name for kind in named if _served_by(invocation, kind.capabilities)]
        if live and invocation.tool_name in registry.names("backend"):
            results[invocation.invocation_id] = Rederived(not_rechecked=f"served by a live backend ({', '.join(live)})")
            continue
        # The calls before this one, as recorded, so knowledge blocks already returned come back deduped;
        # an identical earlier call is left out, or the repeat guard would refuse a copied invocation.
        earlier = [
            i
            for i in document.invocations[:position]
            if (i.tool_name, i.input_params) != (invocation.tool_name, invocation.input_params)
        ]
        try:
            again = run_tool(
                invocation.tool_name, invocation.input_params, environment, SessionView(invocations=earlier)
            )
        except EvcliError as exc:  # parameters this evcli would not have accepted
            results[invocation.invocation_id] = Rederived(error=f"cannot be re-run: {_clip(exc.message)}")
            continue
        details = again.retrieval_details
        results[invocation.invocation_id] = Rederived(
            status=details.evidence_status if details else None,
            refs=tuple(details.evidence_refs or []) if details else (),
        )
    return results


# Arrays of a live invocation that hold the source's state when the call ran, not a past one a source can
# be asked again: Prometheus' /api/v1/alerts lists the alerts active now.
LIVE_STATE_ARRAYS = ("alerts",)


def against_kind(document: SessionDocument, url: str) -> str:
    """Which live backend `gate --against URL` names: the one the session named at that URL (credentials and
    a trailing slash aside), else the only one it named with a URL, else Prometheus."""
    from evcli.backends.http import base_url
    from evcli.backends.spec import EnvironmentSpec

    named = EnvironmentSpec.from_config(document.run.config.env).backends
    urls = {name: base_url(spec.url, None)[0] for name, spec in named.items() if is_url(spec.url)}
    same = [name for name, named_url in urls.items() if named_url == base_url(url, None)[0]]
    if same:
        return same[0]
    return next(iter(urls)) if len(urls) == 1 else "prometheus"


def rederive_on_url(document: SessionDocument, url: str) -> dict[int, Rederived]:
    """Re-run each invocation the live backend at `url` (`against_kind`) serves on it, at the time it searched
    (`replayed`). The backend the session names lends its settings (service label, auth, TLS, timeout); only the
    URL changes."""
    from evcli.backends.live import LiveBackend
    from evcli.backends.registry import backend_kind
    from evcli.backends.spec import EnvironmentSpec
    from evcli.contracts import BackendSpec
    from evcli.core.errors import EvcliError
    from evcli.tools import registry
    from evcli.tools.context import build_environment
    from evcli.tools.refs import no_evidence_ref
    from evcli.tools.runner import SessionView, ToolSettings, run_tool

    kind = against_kind(document, url)
    named = EnvironmentSpec.from_config(document.run.config.env).backends.get(kind)
    backend = named.model_copy(update={"url": url}) if named is not None else BackendSpec(url=url)
    settings = ToolSettings(max_calls_per_tool=len(document.invocations) + 1)
    environment = build_environment(spec=EnvironmentSpec(backends={kind: backend}), settings=settings)
    capabilities = backend_kind(kind).capabilities
    results: dict[int, Rederived] = {}
    for invocation in document.invocations:
        if invocation.tool_name not in registry.names("backend") or not _served_by(invocation, capabilities):
            results[invocation.invocation_id] = Rederived(
                not_rechecked=f"{kind.capitalize()} at {shown(url)} does not serve it"
            )
            continue
        try:
            params, clock = replayed(invocation)
            if isinstance(environment.backend, LiveBackend):
                environment.backend.clock = clock
            again = run_tool(invocation.tool_name, params, environment, SessionView())
        except EvcliError as exc:  # parameters this evcli would not have accepted
            results[invocation.invocation_id] = Rederived(error=f"cannot be re-run: {_clip(exc.message)}")
            continue
        details = again.retrieval_details
        status = details.evidence_status if details else None
        refs = tuple(details.evidence_refs or []) if details else ()
        recorded = invocation.retrieval_details
        if status == "no_evidence" and recorded is not None:  # stated with the scope the call recorded
            scope = recorded.model_dump(exclude={"evidence_status", "evidence_refs"})
            refs = (no_evidence_ref(invocation.tool_name, scope, str(again.output.get("message") or "")),)
        results[invocation.invocation_id] = Rederived(status=status, refs=refs, now_only=LIVE_STATE_ARRAYS)
    return results


def replayed(invocation: ToolInvocation) -> tuple[dict[str, Any], datetime | None]:
    """The call to re-run and the clock to run it on. A call that named no time searched a live backend's last
    hour ending at its clock: it is re-run naming none, on a clock set to that end, so it searches the same hour
    and states it as it did; any other call runs on the wall clock with its time pinned (`pinned_params`)."""
    from evcli.core.time import parse_range_text
    from evcli.tools.fetch import LIVE_DEFAULT

    details = invocation.retrieval_details
    if details is not None and details.range and details.range_origin == LIVE_DEFAULT:
        searched = parse_range_text(details.range)
        if searched.end is not None:
            return dict(invocation.input_params), searched.end
    return pinned_params(invocation), None


def pinned_params(invocation: ToolInvocation) -> dict[str, Any]:
    """The invocation's parameters with the time they named (a window, relative or no times) replaced by the
    absolute range it recorded: `since`/`until`, or `at` for an instant (a range that starts where it ends)."""
    from evcli.core.time import parse_range_text

    params = dict(invocation.input_params)
    searched = invocation.retrieval_details.range if invocation.retrieval_details else None
    if not searched:
        return params
    found = parse_range_text(searched)
    if found.start is None or found.end is None:
        return params
    for key in ("window", "since", "until", "at"):
        params.pop(key, None)
    if "at" in invocation.input_params:
        params["at"] = found.end.isoformat()
    else:
        params.update(since=found.start.isoformat(), until=found.end.isoformat())
    return params


def _served_by(invocation: ToolInvocation, capabilities: tuple[str, ...]) -> bool:
    """Whether a live backend with these capabilities can have served the invocation: its tool reads what
    the backend serves (the tool's `reads`), and its output names no snapshot file (a snapshot call records
    the digests of the files it read, a live one those of the URLs it read)."""
    from evcli.tools import registry

    spec = registry.find(invocation.tool_name)
    wanted = spec.reads if spec is not None else ()
    if wanted and not any(str(capability) in wanted for capability in capabilities):
        return False
    digests = invocation.output.get("digests") if isinstance(invocation.output, dict) else None
    return not (isinstance(digests, dict) and any(not is_url(source) for source in digests))


def source_matches(invocation: ToolInvocation, ref: EvidenceRef, source: Rederived, against: str | None) -> str | None:
    where = f"invocation {invocation.invocation_id} ({invocation.tool_name} {_params(invocation)})"
    if source.error:
        return f"{where} {source.error}"
    if ref.raw_path.partition("[")[0].removeprefix("$.") in source.now_only:
        return (
            f"{where}: {ref.raw_path} cannot be re-checked against {against}: a live source lists its alerts of now, "
            "not those of the call's time"
        )
    expected = next((r.text for r in source.refs if r.raw_path == ref.raw_path), None)
    if expected == ref.text:
        return None
    if expected is None:
        return f"{where}: {ref.raw_path} is not in what the source at {against} returns now (evidence_status {source.status})"
    return f"{where}: {ref.raw_path} does not match its source at {against}: {_difference(ref.text, expected)}"


def _difference(recorded: str, expected: str, context: int = 40) -> str:
    """Where two texts first differ, as `source has '…' where the session has '…'`."""
    first = next(
        (i for i, (a, b) in enumerate(zip(recorded, expected, strict=False)) if a != b),
        min(len(recorded), len(expected)),
    )
    start = max(0, first - context)
    source, session = expected[start : first + context], recorded[start : first + context]
    return f"the source has '…{source}…' where the session has '…{session}…'"


def _params(invocation: ToolInvocation) -> str:
    return json.dumps(invocation.input_params, ensure_ascii=False, sort_keys=True)


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
