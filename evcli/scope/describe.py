"""A question scope as labelled lines, for `trace` and reports.

Only the fields the question set are listed, in a fixed order, so two scopes that
ask the same thing read the same. Values are verbatim: callers escape them for
their medium (rich markup, HTML).
"""

from __future__ import annotations

from evcli.contracts import Query


def describe(scope: Query) -> list[tuple[str, str]]:
    """(label, value) pairs of what the question asks about; task and language always come first."""
    lines = [("task", f"{scope.task_scope} · {scope.language}")]
    if scope.answer is not None:
        lines.append(("answer", _answer(scope)))
    listed = (
        ("services", scope.services),
        ("unknown services", scope.unknown_services),
        ("hosts", scope.hosts),
        ("alerts", scope.alertnames),
        ("levels", scope.levels),
        ("phrases", [f'"{phrase}"' for phrase in scope.phrases]),
        ("tokens", scope.tokens),
        ("terms", scope.terms),
    )
    lines += [(label, ", ".join(values)) for label, values in listed if values]
    if scope.alert_state:
        lines.append(("alert state", scope.alert_state.replace("_", " ")))
    if scope.range:
        relative = f" (last {scope.range.relative})" if scope.range.relative else ""
        lines.append(("range", f"{scope.range.range}{relative} — “{scope.range.text}”"))
    if scope.wants_count:
        lines.append(("count", "asked"))
    return lines


def _answer(scope: Query) -> str:
    """ "breakdown by address (+count) — “which IP”, “how many”": the answer kind first, the other kinds named,
    and the words they were read from."""
    kind = f"{scope.answer} by {scope.by}" if scope.answer == "breakdown" and scope.by else str(scope.answer)
    others = [k for k in scope.kinds if k != scope.answer]
    words = ", ".join(f"“{cue.words}”" for cue in scope.cues)
    return kind + (f" (+{', '.join(others)})" if others else "") + (f" — {words}" if words else "")
