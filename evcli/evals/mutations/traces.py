"""Trace mutations (issue 22): claims citing query_traces spans, edges and stats whose words say something else.

Each hostile class edits one claim the way a careless writer would, keeping every citation real: a call told the
other way round, p90 for p99, calls for errors, ms for s, the second slowest call called the slowest, a span told
of its caller; a negative told wider than its search. Each benign class makes an honest paraphrase that must
still pass: a duration in seconds, rounded, in microseconds with separators, a call told from its callee. What to
edit is read from the claim's stated facts and its cited items' typed fields (evcli.gatekeeper.typed), the
pairs it states (evcli.gatekeeper.subjects) and the items themselves, never from a list of known claims. The bases
are evcli.evals.mutations.tracebases.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

from evcli.contracts import NO_EVIDENCE_PATH, SessionDocument
from evcli.evals.mutations.base import Case, Output
from evcli.evals.mutations.facts import _first_rewritten, _format, _observations, _replace, _unit_of, _with_text
from evcli.gatekeeper import subjects, typed, typed_model
from evcli.gatekeeper.checks import find_ref

TOOL = "query_traces"


def _traced(document: SessionDocument, output: Output) -> Iterator[tuple[int, dict[str, Any], list[typed_model.Cited]]]:
    """Each observation claim whose bindings all cite query_traces items, with its cited items."""
    for index, raw, _claim, cited in _observations(document, output):
        if cited and all(binding.get("tool_name") == TOOL for binding in raw["evidence_bindings"]):
            yield index, raw, cited


def _edges(cited: list[typed_model.Cited]) -> list[typed_model.Cited]:
    return [c for c in cited if isinstance(c.item, dict) and "caller" in c.item and "callee" in c.item]


def _duration(value: typed_model.Value) -> bool:
    """A trace item's duration or percentile (a field named with its unit: duration_ms, p99_ms)."""
    return value.kind == "number" and value.dim == "time" and value.path.endswith("_ms")


def _duration_of(fact: typed_model.Stated, values: list[typed_model.Value]) -> typed_model.Value | None:
    if fact.kind != "number" or fact.number is None or not fact.number.dim:
        return None
    return next((v for v in values if _duration(v) and typed.close(fact, v)), None)


def _swapped_names(text: str, first: str, second: str) -> str | None:
    """The text with the first whole-name occurrences of two names exchanged, when `first` comes first."""
    found = {
        m.group(1): m.span(1)
        for m in reversed(list(subjects.service_pattern((first, second)).finditer(text.casefold())))
    }
    if first not in found or second not in found or found[first] > found[second]:
        return None
    (a, b), (c, d) = found[first], found[second]
    return text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]


# --- hostile -----------------------------------------------------------------------------------------


def trace_edge_flipped(document, output):
    """ "checkout calls payment" citing checkout → payment rewritten "payment calls checkout"."""
    for index, raw, cited in _traced(document, output):
        text = typed.plain(raw["claim_text"])
        for edge in _edges(cited):
            caller, callee = str(edge.item["caller"]).casefold(), str(edge.item["callee"]).casefold()
            if (caller, callee) not in set(subjects.stated(text.casefold(), (caller, callee))):
                continue
            flipped = _swapped_names(text, caller, callee)
            if flipped is not None:
                yield Case(
                    f"{raw['claim_id']}: {caller} → {callee} told the other way", _with_text(output, index, flipped)
                )
                break


_OTHER_PERCENTILE = {"p90": "p99", "p99": "p90"}


def trace_percentile_swapped(document, output):
    """p99 stated with p90's value; or, where the two are equal, a claim citing the p99 field calling it p90."""
    for index, raw, cited in _traced(document, output):
        text = typed.plain(raw["claim_text"])
        values = [v for c in cited for v in c.values]
        for fact in typed.stated_facts(raw["claim_text"]):
            other = _OTHER_PERCENTILE.get(fact.role or "")
            own = next((v for v in values if fact.role in v.roles and _duration(v)), None)
            theirs = next((v for v in values if other in v.roles and _duration(v)), None)
            if other is None or own is None or theirs is None or fact.number is None:
                continue
            if own.value != theirs.value:
                new = _format(theirs.value * theirs.factor / fact.number.factor) + _unit_of(fact)[1]
                yield Case(
                    f"{raw['claim_id']}: {fact.text} -> {new} ({other}'s)",
                    _with_text(output, index, _replace(text, fact, new)),
                )
                break
            named = [c for c in cited if c.field.endswith(f".{fact.role}_ms")]
            word = text.rfind(str(fact.role), 0, fact.start)
            if named and word >= 0:
                renamed = text[:word] + other + text[word + len(str(fact.role)) :]
                yield Case(f"{raw['claim_id']}: {fact.role} called {other}", _with_text(output, index, renamed))
                break


def trace_calls_errors_swapped(document, output):
    """ "2 errors in 3 calls" rewritten "3 errors in 2 calls"; a stats count of spans swapped with its errors."""
    for index, raw, _cited in _traced(document, output):
        stated = [f for f in typed.stated_facts(raw["claim_text"]) if f.kind == "number" and f.role]
        calls = next((f for f in stated if f.role in ("calls", "spans")), None)
        errors = next((f for f in stated if f.role == "level_error"), None)
        if calls is None or errors is None or calls.value == errors.value:
            continue
        first, second = sorted((calls, errors), key=lambda f: f.start)
        plain = typed.plain(raw["claim_text"])
        swapped = (
            plain[: first.start] + second.text + plain[first.end : second.start] + first.text + plain[second.end :]
        )
        yield Case(f"{raw['claim_id']}: {first.text} <-> {second.text}", _with_text(output, index, swapped))


_OTHER_UNIT = {"ms": "s", "s": "ms", "毫秒": "秒", "秒": "毫秒"}


def trace_unit_error(document, output):
    """A span's or a call's 800ms written 800s (0.8 s written 0.8 ms)."""

    def rewrite(fact, values):
        digits, unit = _unit_of(fact)
        return f"{digits}{_OTHER_UNIT[unit]}" if unit in _OTHER_UNIT and _duration_of(fact, values) else None

    return _first_rewritten(document, output, rewrite)


def trace_slowest_second(document, output):
    """ "the slowest call is A → B (p99 850ms)" moved onto the second slowest edge, its names and p99 with it."""
    for index, raw, cited in _traced(document, output):
        facts = typed.stated_facts(raw["claim_text"])
        if not any(f.kind == "rank" and f.value == "slowest" for f in facts) or len(cited) != 1:
            continue
        edges = _edges(cited)
        if len(edges) != 1:
            continue
        edge = edges[0]
        ordered = sorted(range(len(edge.siblings)), key=lambda i: -edge.siblings[i]["p99_ms"])
        second = next((i for i in ordered if edge.siblings[i]["p99_ms"] < edge.item["p99_ms"]), None)
        if second is None or edge.item["p99_ms"] != edge.siblings[ordered[0]]["p99_ms"]:
            continue
        moved = _moved_edge(raw["claim_text"], facts, edge.item, edge.siblings[second])
        binding = raw["evidence_bindings"][0]
        path = f"$.edges[{second}]" + binding["raw_path"][len(edge.raw_path) :]
        mutated = _with_text(output, index, moved)
        invocation = next(i for i in document.invocations if i.invocation_id == binding.get("source_invocation_id"))
        ref = find_ref(invocation, path)
        mutated["claims"][index]["evidence_bindings"][0] |= {
            "raw_path": path,
            "evidence_excerpt": ref.text if ref else "",
        }
        yield Case(f"{raw['claim_id']}: the second slowest {path} called the slowest", mutated)


def _moved_edge(text: str, facts: list[typed_model.Stated], top: dict[str, Any], other: dict[str, Any]) -> str:
    """The claim with the top edge's caller, callee and p99 replaced by another edge's."""
    plain = typed.plain(text)
    for fact in sorted((f for f in facts if f.role == "p99" and f.number), key=lambda f: -f.start):
        assert fact.number is not None
        plain = _replace(plain, fact, _format(other["p99_ms"] * 0.001 / fact.number.factor) + _unit_of(fact)[1])
    marks = {"caller": "\x00", "callee": "\x01"}
    for field, mark in marks.items():
        plain = re.sub(rf"(?<![\w-]){re.escape(top[field])}(?![\w-])", mark, plain, count=1)
    return plain.replace(marks["caller"], other["caller"]).replace(marks["callee"], other["callee"])


def trace_caller_as_subject(document, output):
    """A span told of the service that called it: "payment's charge span" as "checkout's charge span"."""
    for index, raw, cited in _traced(document, output):
        spans = [c for c in cited if isinstance(c.item, dict) and c.item.get("parent_service") and "span_id" in c.item]
        for span in spans:
            service, caller = str(span.item["service"]), str(span.item["parent_service"])
            found = subjects.service_pattern((service, caller)).search(raw["claim_text"].casefold())
            if caller != service and found is not None and found.group(1) == service.casefold():
                text = raw["claim_text"][: found.start(1)] + caller + raw["claim_text"][found.end(1) :]
                yield Case(f"{raw['claim_id']}: {service}'s span told of {caller}", _with_text(output, index, text))
                break


_ERROR_WORD = re.compile(r"\b(?:failed|failing|error)\s+")


def trace_negative_widened(document, output):
    """A negative on an errors_only search of one operation told of every status, or of every operation."""
    invocations = {invocation.invocation_id: invocation for invocation in document.invocations}
    for index, raw in enumerate(output.get("claims") or []):
        bindings = raw.get("evidence_bindings") or []
        if raw.get("claim_type") != "negative_observation" or len(bindings) != 1:
            continue
        invocation = invocations.get(bindings[0].get("source_invocation_id"))
        if invocation is None or invocation.tool_name != TOOL or bindings[0].get("raw_path") != NO_EVIDENCE_PATH:
            continue
        text, params = raw["claim_text"], invocation.input_params
        if params.get("errors_only") and _ERROR_WORD.search(text):
            yield Case(
                f"{raw['claim_id']}: errors dropped", _with_text(output, index, _ERROR_WORD.sub("", text, count=1))
            )
        operation = str(params.get("operation") or "")
        if operation and operation in text:
            yield Case(
                f"{raw['claim_id']}: {operation} dropped",
                _with_text(output, index, text.replace(f"{operation} ", "", 1)),
            )


# --- honest paraphrases -----------------------------------------------------------------------------------


def benign_trace_in_seconds(document, output):
    """800ms written 0.8 s."""

    def rewrite(fact, values):
        digits, unit = _unit_of(fact)
        return (
            f"{_format(float(digits.replace(',', '')) / 1000)} s"
            if unit == "ms" and _duration_of(fact, values)
            else None
        )

    return _first_rewritten(document, output, rewrite)


def benign_trace_rounded(document, output):
    """850ms written "about 0.9 s" (to a tenth of a second, from 100 ms)."""

    def rewrite(fact, values):
        digits, unit = _unit_of(fact)
        milliseconds = float(digits.replace(",", "")) if unit == "ms" else 0.0
        if milliseconds < 100 or not _duration_of(fact, values):
            return None
        return f"about {_format(math.floor(milliseconds / 100 + 0.5) / 10)} s"  # half up: 850 ms is about 0.9 s

    return _first_rewritten(document, output, rewrite)


def benign_trace_microseconds(document, output):
    """850ms written "850,000 µs"."""

    def rewrite(fact, values):
        digits, unit = _unit_of(fact)
        if unit != "ms" or not _duration_of(fact, values):
            return None
        return f"{round(float(digits.replace(',', '')) * 1000):,} µs"

    return _first_rewritten(document, output, rewrite)


def benign_trace_called_by(document, output):
    """ "checkout → payment" (or "checkout calls payment") written "payment is called by checkout"."""
    for index, raw, cited in _traced(document, output):
        text = typed.plain(raw["claim_text"])
        for edge in _edges(cited):
            caller, callee = str(edge.item["caller"]), str(edge.item["callee"])
            pattern = rf"(?<![\w-]){re.escape(caller)}\s*(?:→|->|calls)\s*{re.escape(callee)}(?![\w-])"
            match = re.search(pattern, text)
            if match is not None:
                told = text[: match.start()] + f"{callee} is called by {caller}" + text[match.end() :]
                yield Case(f"{raw['claim_id']}: {callee} is called by {caller}", _with_text(output, index, told))
                break
