"""Mutations of the executor output's citations: invocation ids, tool names, raw paths, excerpts, contract fields.

Each yields the cases one rule must catch; the recorded invocations are left as they are.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Callable, Iterator
from typing import Any

from evcli.contracts import NO_EVIDENCE_PATH, ToolInvocation
from evcli.evals.mutations.base import (
    DELETE,
    NUMBER,
    Case,
    Mutate,
    bindings,
    cited_invocation,
    invocations_by_id,
    is_new_text,
    number_edits,
    ref_text,
    where,
    with_binding,
)
from evcli.gatekeeper import typed, typed_model
from evcli.gatekeeper.checks import find_ref
from evcli.tools import registry


def fabricated_invocation_id(document, output):
    fake_id = max((i.invocation_id for i in document.invocations), default=0) + 1000
    for ci, bi, claim, _ in bindings(output):
        yield Case(
            f"{where(claim, bi)} cites invocation {fake_id}",
            with_binding(output, ci, bi, source_invocation_id=fake_id),
        )


def tool_name_of_other_invocation(document, output):
    tools = sorted({i.tool_name for i in document.invocations})
    for ci, bi, claim, binding in bindings(output):
        for other in tools:
            if other != binding.get("tool_name"):
                yield Case(f"{where(claim, bi)} names {other}", with_binding(output, ci, bi, tool_name=other))
                break


def _first_array(tool_name: str | None) -> str:
    """`$.<first evidence array>` of a registered tool (a binding to `$.no_evidence` names no array)."""
    spec = registry.find(tool_name) or registry.specs()[0]
    return f"$.{spec.arrays[0].name}"


def raw_path_absent(document, output):
    for ci, bi, claim, binding in bindings(output):
        raw_path = binding.get("raw_path", "")
        array = raw_path.split("[")[0] if "[" in raw_path else _first_array(binding.get("tool_name"))
        absent = f"{array}[97]"
        yield Case(f"{where(claim, bi)} cites {absent}", with_binding(output, ci, bi, raw_path=absent))


def field_absent(document, output):
    """A binding naming a field its item does not hold."""
    for ci, bi, claim, binding in bindings(output):
        raw_path = binding.get("raw_path", "")
        if raw_path != NO_EVIDENCE_PATH:
            absent = f"{raw_path}.detail"
            yield Case(f"{where(claim, bi)} cites {absent}", with_binding(output, ci, bi, raw_path=absent))


def field_not_stated(document, output):
    """A binding naming one structured field of its item whose value the claim does not write: the
    citation says "this claim states that field", and it does not."""

    def unwritten(claim: dict[str, Any], value: typed_model.Value) -> bool:
        text = (claim.get("claim_text") or "").casefold()
        return not any(form in text for form in _written_forms(value))

    return _field_cited(document, output, unwritten)


def benign_field_cited(document, output):
    """Honest: a binding narrowed to the structured field whose value its claim writes ("91%" citing
    `$.alerts[0].value`, "37 lines" citing `$.stats.total`)."""

    def written(claim: dict[str, Any], value: typed_model.Value) -> bool:  # as it is recorded
        stated = typed.stated_facts(claim.get("claim_text") or "")
        return float(value.value) in [fact.number.value for fact in stated if fact.number]

    return _field_cited(document, output, written)


def _field_cited(document, output, fits: Callable[[dict[str, Any], typed_model.Value], bool]) -> Iterator[Case]:
    """Each binding narrowed to the first structured number field of its item that `fits` its claim."""
    by_id = invocations_by_id(document)
    for ci, bi, claim, binding in bindings(output):
        raw_path = binding.get("raw_path", "")
        invocation = cited_invocation(by_id, binding)
        if raw_path == NO_EVIDENCE_PATH or invocation is None:
            continue
        item = typed.item_at(invocation.output, raw_path)
        for value in typed.item_values(item, raw_path) if isinstance(item, dict) else []:
            field = value.path[len(raw_path) :]
            if value.kind != "number" or not field.startswith(".") or field.strip(".") in typed.TEXT_FIELDS:
                continue
            if fits(claim, value):
                yield Case(
                    f"{where(claim, bi)} cites {value.path} ({value.shown})",
                    with_binding(output, ci, bi, raw_path=value.path),
                )
                break


def _written_forms(value: typed_model.Value) -> set[str]:
    number = float(value.value)
    return {value.shown.casefold(), f"{number:g}", f"{round(number)}", f"{number:.1f}"}


def excerpt_number_changed(document, output):
    for ci, bi, claim, binding in bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        for match in NUMBER.finditer(excerpt):
            for edited in number_edits(match.group()):
                mutated = excerpt[: match.start()] + edited + excerpt[match.end() :]
                if is_new_text(document, binding, mutated):
                    yield Case(
                        f"{where(claim, bi)} says {edited} instead of {match.group()}",
                        with_binding(output, ci, bi, evidence_excerpt=mutated),
                    )
            break  # one number per binding keeps the suite proportionate


_CJK = re.compile(r"[\u4e00-\u9fff]")


def excerpt_negation_inserted(document, output):
    for ci, bi, claim, binding in bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        cjk = _CJK.search(excerpt)
        if cjk:
            mutated = excerpt[: cjk.start()] + "未" + excerpt[cjk.start() :]
        else:
            words = excerpt.split(" ")
            position = min(2, len(words))
            mutated = " ".join(words[:position] + ["not"] + words[position:])
        if is_new_text(document, binding, mutated):
            yield Case(f"{where(claim, bi)} gains a negation", with_binding(output, ci, bi, evidence_excerpt=mutated))


def excerpt_invented_text(document, output):
    invented = "root cause confirmed: disk full on db-node-07"
    for ci, bi, claim, binding in bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        yield Case(
            f"{where(claim, bi)} replaced by invented text", with_binding(output, ci, bi, evidence_excerpt=invented)
        )
        yield Case(
            f"{where(claim, bi)} with invented text appended",
            with_binding(output, ci, bi, evidence_excerpt=f"{excerpt}, {invented}"),
        )


def _positive_refs(document) -> Iterator[tuple[ToolInvocation, Any]]:
    for invocation in document.invocations:
        details = invocation.retrieval_details
        for ref in (details.evidence_refs or []) if details else []:
            if ref.raw_path != NO_EVIDENCE_PATH:
                yield invocation, ref


def negative_bound_to_positive(document, output):
    positive = next(_positive_refs(document), None)
    if positive is None:
        return
    invocation, ref = positive
    for ci, bi, claim, _ in bindings(output):
        if claim.get("claim_type") == "negative_observation":
            yield Case(
                f"{where(claim, bi)} (negative) bound to #{invocation.invocation_id} {ref.raw_path}",
                with_binding(
                    output,
                    ci,
                    bi,
                    tool_name=invocation.tool_name,
                    source_invocation_id=invocation.invocation_id,
                    raw_path=ref.raw_path,
                    evidence_excerpt=ref.text,
                ),
            )


def no_evidence_on_hits(document, output):
    for ci, bi, claim, binding in bindings(output):
        if binding.get("raw_path") != NO_EVIDENCE_PATH:
            tool = binding.get("tool_name")
            yield Case(
                f"{where(claim, bi)} cites $.no_evidence of an invocation with hits",
                with_binding(
                    output,
                    ci,
                    bi,
                    raw_path=NO_EVIDENCE_PATH,
                    evidence_excerpt=f"{tool} returned no evidence; evidence_status=no_evidence; total=0",
                ),
            )


def duplicate_item_binding(document, output):
    for ci, bi, claim, binding in bindings(output):
        mutated = copy.deepcopy(output)
        mutated["claims"][ci]["evidence_bindings"].append(copy.deepcopy(binding))
        yield Case(f"{where(claim, bi)} bound twice", mutated)


def forbidden_field(field_name: str) -> Mutate:
    def mutate(document, output):
        mutated = copy.deepcopy(output)
        mutated[field_name] = "The problem is resolved; no further action is needed."
        yield Case(f"output carries {field_name}", mutated)

    mutate.__name__ = f"forbidden_{field_name}"
    return mutate


def wrong_answer_version(document, output):
    for version in ("executor_evidence_v1", None):
        mutated = copy.deepcopy(output)
        if version is None:
            mutated.pop("answer_version", None)
        else:
            mutated["answer_version"] = version
        yield Case(f"answer_version {version or 'missing'}", mutated)


def missing_id_unresolvable(document, output):
    invocations = invocations_by_id(document)
    for ci, bi, claim, binding in bindings(output):
        invocation = cited_invocation(invocations, binding)
        if invocation is None:
            continue
        # Ambiguous: the excerpt is a span that another invocation's ref at the same path also holds.
        own_text = ref_text(document, binding)
        for other in document.invocations:
            if other is invocation or other.tool_name != invocation.tool_name:
                continue
            other_ref = find_ref(other, binding.get("raw_path", ""))
            if other_ref is None:
                continue
            matcher = difflib.SequenceMatcher(None, own_text, other_ref.text, autojunk=False)
            common = matcher.find_longest_match(0, len(own_text), 0, len(other_ref.text))
            shared = own_text[common.a : common.a + common.size].strip(" ;,")
            if len(shared) >= 12:
                yield Case(
                    f"{where(claim, bi)} without id, excerpt shared by #{invocation.invocation_id} and #{other.invocation_id}",
                    with_binding(output, ci, bi, source_invocation_id=DELETE, evidence_excerpt=shared),
                )
                break
        # No candidate: the excerpt belongs to another item of the same invocation.
        for ref in (invocation.retrieval_details.evidence_refs or []) if invocation.retrieval_details else []:
            if ref.raw_path != binding.get("raw_path") and is_new_text(document, binding, ref.text):
                yield Case(
                    f"{where(claim, bi)} without id, excerpt of {ref.raw_path}",
                    with_binding(output, ci, bi, source_invocation_id=DELETE, evidence_excerpt=ref.text),
                )
                break


# --- excerpt soundness (issue 11): trivial excerpts, changed words ---------

_CHANGED_LETTER = {"a": "e", "e": "a", "i": "o", "o": "i", "u": "a", "r": "x", "n": "m", "t": "l"}


def excerpt_trivial(document, output):
    for ci, bi, claim, _binding in bindings(output):
        for trivial in ("a", "0", "is", "... , ..."):
            yield Case(f"{where(claim, bi)} quotes {trivial!r}", with_binding(output, ci, bi, evidence_excerpt=trivial))


def excerpt_word_changed(document, output):
    """One letter of a plain word changed: a near-spelled different word (firing -> fixing)."""
    for ci, bi, claim, binding in bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        word = next((m for m in re.finditer(r"(?<![\w-])[a-z]{5,}(?![\w-])", excerpt)), None)
        if word is None:
            continue
        position = word.start() + 2
        letter = _CHANGED_LETTER.get(excerpt[position], "a")
        mutated = excerpt[:position] + letter + excerpt[position + 1 :]
        if is_new_text(document, binding, mutated):
            yield Case(
                f"{where(claim, bi)} says {mutated[word.start() : word.end()]!r}",
                with_binding(output, ci, bi, evidence_excerpt=mutated),
            )


# --- the claim's own text: what a reader sees must be what is checked --------------------------------


def _with_claim_text(output: dict[str, Any], claim_index: int, text: str) -> dict[str, Any]:
    mutated = copy.deepcopy(output)
    mutated["claims"][claim_index]["claim_text"] = text
    return mutated


def claim_hidden_character(document, output):
    """A zero-width space inside a word of the claim ("n\u200bot" reads "not" and checks as two words)."""
    for ci, claim in enumerate(output.get("claims") or []):
        text = claim.get("claim_text") or ""
        word = re.search(r"[A-Za-z]{4,}", text)
        if word:
            cut = word.start() + 2
            yield Case(
                f"{claim.get('claim_id')}: U+200B in {word.group()!r}",
                _with_claim_text(output, ci, text[:cut] + "\u200b" + text[cut:]),
            )


def claim_lookalike_letter(document, output):
    """A Latin letter of the claim swapped for its Cyrillic look-alike (о for o, а for a, е for e)."""
    lookalike = {"o": "\u043e", "a": "\u0430", "e": "\u0435"}
    for ci, claim in enumerate(output.get("claims") or []):
        text = claim.get("claim_text") or ""
        word = re.search(r"[A-Za-z]*[oae][A-Za-z]*", text)
        if word and len(word.group()) >= 3:
            at = word.start() + next(i for i, ch in enumerate(word.group()) if ch in lookalike)
            yield Case(
                f"{claim.get('claim_id')}: look-alike in {word.group()!r}",
                _with_claim_text(output, ci, text[:at] + lookalike[text[at]] + text[at + 1 :]),
            )


def claim_service_swapped(document, output):
    """The claim names another service of the environment than the one its evidence is about."""
    from evcli.gatekeeper.service import session_services

    services = list(session_services(document))
    for ci, claim in enumerate(output.get("claims") or []):
        text = claim.get("claim_text") or ""
        excerpts = " ".join(b.get("evidence_excerpt") or "" for b in claim.get("evidence_bindings") or [])
        named = next((s for s in services if re.search(rf"(?<![\w-]){re.escape(s)}(?![\w-])", text)), None)
        other = next(
            (s for s in services if s != named and s.lower() not in excerpts.lower() and s.lower() not in text.lower()),
            None,
        )
        if named and other:
            swapped = re.sub(rf"(?<![\w-]){re.escape(named)}(?![\w-])", other, text)
            yield Case(f"{claim.get('claim_id')}: {named} -> {other}", _with_claim_text(output, ci, swapped))
