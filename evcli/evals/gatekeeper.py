"""Gatekeeper fault injection: does every kind of false citation get caught?

Starting from sessions whose citations are all valid, each mutation class
rewrites the executor output the way a careless or adversarial model would,
and says which rule must catch it with which severity. Benign variants are
edits a faithful model makes (case, spacing, `92 %`, an excerpt split with
`...`, a missing id that one invocation fits) and must still pass.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evcli.contracts import NO_EVIDENCE_PATH, RetrievalDetails, SessionDocument, ToolInvocation
from evcli.errors import BadInput
from evcli.gatekeeper.checks import find_ref
from evcli.gatekeeper.engine import gate
from evcli.gatekeeper.excerpt import normalize
from evcli.gatekeeper.facts import missing_facts
from evcli.gatekeeper.provenance import derived_evidence, session_record
from evcli.gatekeeper.rules import RuleSet
from evcli.resources import data_path
from evcli.tools import registry

Output = dict[str, Any]


@dataclass(frozen=True)
class Case:
    """One mutated executor output and where in it the mutation was made.

    `invocations` replaces the session's invocations when the mutation edits them too.
    """

    description: str
    output: Output
    invocations: list[ToolInvocation] | None = None


@dataclass(frozen=True)
class MutationClass:
    name: str
    expected_severity: str  # "none" for benign variants
    expected_rule: str | None
    mutate: Callable[[SessionDocument, Output], Iterator[Case]]
    benign: bool = False


# --- helpers -------------------------------------------------------------------

_DELETE = object()  # marks a binding field the mutation removes


def _bindings(output: Output) -> Iterator[tuple[int, int, dict[str, Any], dict[str, Any]]]:
    for claim_index, claim in enumerate(output.get("claims") or []):
        for binding_index, binding in enumerate(claim.get("evidence_bindings") or []):
            yield claim_index, binding_index, claim, binding


def _with_binding(output: Output, claim_index: int, binding_index: int, **changes: Any) -> Output:
    mutated = copy.deepcopy(output)
    binding = mutated["claims"][claim_index]["evidence_bindings"][binding_index]
    for key, value in changes.items():
        if value is _DELETE:
            binding.pop(key, None)
        else:
            binding[key] = value
    return mutated


def _where(claim: dict[str, Any], binding_index: int) -> str:
    return f"{claim.get('claim_id')}#{binding_index}"


def _invocations(document: SessionDocument) -> dict[int, ToolInvocation]:
    return {invocation.invocation_id: invocation for invocation in document.invocations}


def _cited_invocation(invocations: dict[int, ToolInvocation], binding: dict[str, Any]) -> ToolInvocation | None:
    """The invocation a binding names, if its id is an int that is recorded (mutations delete or garble it)."""
    invocation_id = binding.get("source_invocation_id")
    return invocations.get(invocation_id) if isinstance(invocation_id, int) else None


def _details(invocation: ToolInvocation) -> RetrievalDetails:
    """The retrieval details of an invocation that has a cited ref (refs live in them)."""
    if invocation.retrieval_details is None:
        raise ValueError(f"invocation {invocation.invocation_id} has a cited ref but no retrieval details")
    return invocation.retrieval_details


def _ref_text(document: SessionDocument, binding: dict[str, Any]) -> str:
    invocation = _cited_invocation(_invocations(document), binding)
    ref = find_ref(invocation, binding.get("raw_path", "")) if invocation else None
    return ref.text if ref else ""


def _is_new_text(document: SessionDocument, binding: dict[str, Any], excerpt: str) -> bool:
    """A mutated excerpt only counts if it does not literally occur in the ref."""
    return normalize(excerpt) not in normalize(_ref_text(document, binding))


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


# --- mutation classes ----------------------------------------------------------------


def fabricated_invocation_id(document, output):
    fake_id = max((i.invocation_id for i in document.invocations), default=0) + 1000
    for ci, bi, claim, _ in _bindings(output):
        yield Case(
            f"{_where(claim, bi)} cites invocation {fake_id}",
            _with_binding(output, ci, bi, source_invocation_id=fake_id),
        )


def tool_name_of_other_invocation(document, output):
    tools = sorted({i.tool_name for i in document.invocations})
    for ci, bi, claim, binding in _bindings(output):
        for other in tools:
            if other != binding.get("tool_name"):
                yield Case(f"{_where(claim, bi)} names {other}", _with_binding(output, ci, bi, tool_name=other))
                break


def _first_array(tool_name: str | None) -> str:
    """`$.<first evidence array>` of a registered tool (a binding to `$.no_evidence` names no array)."""
    spec = registry.find(tool_name) or registry.specs()[0]
    return f"$.{spec.arrays[0].name}"


def raw_path_absent(document, output):
    for ci, bi, claim, binding in _bindings(output):
        raw_path = binding.get("raw_path", "")
        array = raw_path.split("[")[0] if "[" in raw_path else _first_array(binding.get("tool_name"))
        absent = f"{array}[97]"
        yield Case(f"{_where(claim, bi)} cites {absent}", _with_binding(output, ci, bi, raw_path=absent))


def _subpath_field(document: SessionDocument, binding: dict[str, Any]) -> str:
    """A field of the cited item for a sub-path to name: its `message` when it has one and no `state`."""
    invocation = _cited_invocation(_invocations(document), binding)
    array, _, index = str(binding.get("raw_path", ""))[2:].rstrip("]").partition("[")
    items = (invocation.output.get(array) or []) if invocation else []
    item = items[int(index)] if index.isdigit() and int(index) < len(items) else {}
    return "message" if "message" in item and "state" not in item else "state"


def field_subpath(document, output):
    for ci, bi, claim, binding in _bindings(output):
        raw_path = binding.get("raw_path", "")
        if raw_path != NO_EVIDENCE_PATH:
            sub = f"{raw_path}.{_subpath_field(document, binding)}"
            yield Case(f"{_where(claim, bi)} cites {sub}", _with_binding(output, ci, bi, raw_path=sub))


def _number_edits(number: str) -> Iterator[str]:
    reversed_digits = number[::-1]
    if reversed_digits != number and not reversed_digits.startswith("0"):
        yield reversed_digits  # 92 -> 29
    yield number + "0"  # 50 -> 500


def excerpt_number_changed(document, output):
    for ci, bi, claim, binding in _bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        for match in _NUMBER.finditer(excerpt):
            for edited in _number_edits(match.group()):
                mutated = excerpt[: match.start()] + edited + excerpt[match.end() :]
                if _is_new_text(document, binding, mutated):
                    yield Case(
                        f"{_where(claim, bi)} says {edited} instead of {match.group()}",
                        _with_binding(output, ci, bi, evidence_excerpt=mutated),
                    )
            break  # one number per binding keeps the suite proportionate


_CJK = re.compile(r"[\u4e00-\u9fff]")


def excerpt_negation_inserted(document, output):
    for ci, bi, claim, binding in _bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        cjk = _CJK.search(excerpt)
        if cjk:
            mutated = excerpt[: cjk.start()] + "未" + excerpt[cjk.start() :]
        else:
            words = excerpt.split(" ")
            position = min(2, len(words))
            mutated = " ".join(words[:position] + ["not"] + words[position:])
        if _is_new_text(document, binding, mutated):
            yield Case(f"{_where(claim, bi)} gains a negation", _with_binding(output, ci, bi, evidence_excerpt=mutated))


def excerpt_invented_text(document, output):
    invented = "root cause confirmed: disk full on db-node-07"
    for ci, bi, claim, binding in _bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        yield Case(
            f"{_where(claim, bi)} replaced by invented text", _with_binding(output, ci, bi, evidence_excerpt=invented)
        )
        yield Case(
            f"{_where(claim, bi)} with invented text appended",
            _with_binding(output, ci, bi, evidence_excerpt=f"{excerpt}, {invented}"),
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
    for ci, bi, claim, _ in _bindings(output):
        if claim.get("claim_type") == "negative_observation":
            yield Case(
                f"{_where(claim, bi)} (negative) bound to #{invocation.invocation_id} {ref.raw_path}",
                _with_binding(
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
    for ci, bi, claim, binding in _bindings(output):
        if binding.get("raw_path") != NO_EVIDENCE_PATH:
            tool = binding.get("tool_name")
            yield Case(
                f"{_where(claim, bi)} cites $.no_evidence of an invocation with hits",
                _with_binding(
                    output,
                    ci,
                    bi,
                    raw_path=NO_EVIDENCE_PATH,
                    evidence_excerpt=f"{tool} returned no evidence; evidence_status=no_evidence; total=0",
                ),
            )


def duplicate_item_binding(document, output):
    for ci, bi, claim, binding in _bindings(output):
        mutated = copy.deepcopy(output)
        mutated["claims"][ci]["evidence_bindings"].append(copy.deepcopy(binding))
        yield Case(f"{_where(claim, bi)} bound twice", mutated)


def _forbidden(field_name: str):
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
    invocations = _invocations(document)
    for ci, bi, claim, binding in _bindings(output):
        invocation = _cited_invocation(invocations, binding)
        if invocation is None:
            continue
        # Ambiguous: the excerpt is a span that another invocation's ref at the same path also holds.
        own_text = _ref_text(document, binding)
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
                    f"{_where(claim, bi)} without id, excerpt shared by #{invocation.invocation_id} and #{other.invocation_id}",
                    _with_binding(output, ci, bi, source_invocation_id=_DELETE, evidence_excerpt=shared),
                )
                break
        # No candidate: the excerpt belongs to another item of the same invocation.
        for ref in (invocation.retrieval_details.evidence_refs or []) if invocation.retrieval_details else []:
            if ref.raw_path != binding.get("raw_path") and _is_new_text(document, binding, ref.text):
                yield Case(
                    f"{_where(claim, bi)} without id, excerpt of {ref.raw_path}",
                    _with_binding(output, ci, bi, source_invocation_id=_DELETE, evidence_excerpt=ref.text),
                )
                break


# --- session-file trust: mutations of the recorded invocations ------------------------------


def _cited(document, output) -> Iterator[tuple[int, int, dict[str, Any], dict[str, Any], ToolInvocation, Any]]:
    """Bindings with the invocation and ref they cite (positive refs only: they carry a fact to forge)."""
    invocations = _invocations(document)
    for ci, bi, claim, binding in _bindings(output):
        invocation = _cited_invocation(invocations, binding)
        ref = find_ref(invocation, binding.get("raw_path", "")) if invocation else None
        if invocation is not None and ref is not None and ref.raw_path != NO_EVIDENCE_PATH:
            yield ci, bi, claim, binding, invocation, ref


def _forged(invocation: ToolInvocation, raw_path: str, text: str, **changes: Any) -> ToolInvocation:
    """A copy of an invocation whose ref at raw_path says `text`; its recorded output is left alone."""
    details = _details(invocation)
    refs = [
        ref.model_copy(update={"text": text}) if ref.raw_path == raw_path else ref
        for ref in details.evidence_refs or []
    ]
    return invocation.model_copy(
        update={"retrieval_details": details.model_copy(update={"evidence_refs": refs}), **changes}
    )


_TEXT_FIELDS = ("message", "summary", "text", "metric")


def _consistent_forgery(invocation: ToolInvocation, raw_path: str, **changes: Any) -> ToolInvocation:
    """A copy whose recorded output item at raw_path states the forged fact, refs re-rendered to match."""
    array, index = raw_path.removeprefix("$.").rstrip("]").split("[")
    output = copy.deepcopy(invocation.output)
    item = output[array][int(index)]
    key = next(k for k in _TEXT_FIELDS if isinstance(item.get(k), str))
    item[key] = f"{item[key]}; {_FORGED_FACT}"
    forged = invocation.model_copy(update={"output": output, **changes})
    status, refs = derived_evidence(forged)
    details = _details(invocation).model_copy(update={"evidence_status": status, "evidence_refs": refs})
    return forged.model_copy(update={"retrieval_details": details})


def _replaced(document, invocation: ToolInvocation) -> list[ToolInvocation]:
    return [invocation if i.invocation_id == invocation.invocation_id else i for i in document.invocations]


_FORGED_FACT = "root cause confirmed: database migration 42 failed"


def _citing_forged_fact(output: Output, ci: int, bi: int, **changes: Any) -> Output:
    """The claim now states the forged fact and its binding quotes it: coherent, apart from the forgery."""
    mutated = _with_binding(output, ci, bi, evidence_excerpt=_FORGED_FACT, **changes)
    mutated["claims"][ci]["claim_text"] = f"The {_FORGED_FACT}."
    return mutated


def hand_added_invocation(document, output):
    """A copy of a cited invocation, its output and ref saying something else, added and cited.

    Only what the document can show is varied here (an id beyond 1..n, a time after the
    executor output, a round in which the executor called no tool); a copy consistent
    with all of that is caught by `gate --against DIR` only.
    """
    last = max((i.invocation_id for i in document.invocations), default=0)
    for ci, bi, claim, _binding, invocation, ref in _cited(document, output):
        variants = (
            ("with id beyond 1..n", {"invocation_id": last + 5}),
            (
                "recorded after the executor output",
                {"invocation_id": last + 1, "created_at": "2099-01-01T00:00:00.000000Z"},
            ),
            ("in a round without executor tool calls", {"invocation_id": last + 1, "round": 9}),
        )
        for label, changes in variants:
            added = _consistent_forgery(invocation, ref.raw_path, **changes)
            yield Case(
                f"{_where(claim, bi)} cites a hand-added invocation {label}",
                _citing_forged_fact(output, ci, bi, source_invocation_id=added.invocation_id),
                [*document.invocations, added],
            )
        return  # one binding is enough: the variants are about the invocation


def edited_ref_text(document, output):
    for ci, bi, claim, _binding, invocation, ref in _cited(document, output):
        number = _NUMBER.search(ref.text)
        edits = [f"{ref.text}; {_FORGED_FACT}"]
        if number:
            edits.append(ref.text[: number.start()] + next(_number_edits(number.group())) + ref.text[number.end() :])
        for text in edits:
            yield Case(
                f"{_where(claim, bi)} cites {ref.raw_path} edited to {text[-40:]!r}",
                _with_binding(output, ci, bi, evidence_excerpt=text),
                _replaced(document, _forged(invocation, ref.raw_path, text)),
            )


def duplicate_invocation_id(document, output):
    for ci, bi, claim, _binding, invocation, ref in _cited(document, output):
        twin = _forged(invocation, ref.raw_path, f"{ref.text}; {_FORGED_FACT}")
        yield Case(
            f"{_where(claim, bi)} cites id {invocation.invocation_id}, recorded twice (the second one forged)",
            _citing_forged_fact(output, ci, bi),
            [*document.invocations, twin],
        )


def failed_invocation_cited(document, output):
    for _ci, bi, claim, _binding, invocation, _ref in _cited(document, output):
        details = _details(invocation)
        failed: dict[str, dict[str, Any]] = {
            "success=false": {"success": False, "error_message": "timed out after 15s"},
            "evidence_status=failed": {"retrieval_details": details.model_copy(update={"evidence_status": "failed"})},
        }
        for label, changes in failed.items():
            yield Case(
                f"{_where(claim, bi)} cites invocation {invocation.invocation_id} recorded with {label}",
                copy.deepcopy(output),
                _replaced(document, invocation.model_copy(update=changes)),
            )


# --- excerpt soundness (issue 11): trivial excerpts, changed words, benign spellings ---------

_CHANGED_LETTER = {"a": "e", "e": "a", "i": "o", "o": "i", "u": "a", "r": "x", "n": "m", "t": "l"}


def excerpt_trivial(document, output):
    for ci, bi, claim, _binding in _bindings(output):
        for trivial in ("a", "0", "is", "... , ..."):
            yield Case(
                f"{_where(claim, bi)} quotes {trivial!r}", _with_binding(output, ci, bi, evidence_excerpt=trivial)
            )


def excerpt_word_changed(document, output):
    """One letter of a plain word changed: a near-spelled different word (firing -> fixing)."""
    for ci, bi, claim, binding in _bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        word = next((m for m in re.finditer(r"(?<![\w-])[a-z]{5,}(?![\w-])", excerpt)), None)
        if word is None:
            continue
        position = word.start() + 2
        letter = _CHANGED_LETTER.get(excerpt[position], "a")
        mutated = excerpt[:position] + letter + excerpt[position + 1 :]
        if _is_new_text(document, binding, mutated):
            yield Case(
                f"{_where(claim, bi)} says {mutated[word.start() : word.end()]!r}",
                _with_binding(output, ci, bi, evidence_excerpt=mutated),
            )


def benign_contraction(document, output):
    for ci, bi, claim, binding in _bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        for long, short in ((" is not ", " isn't "), (" does not ", " doesn't "), (" can not ", " can't ")):
            if long in excerpt:
                yield Case(
                    f"{_where(claim, bi)} with {short.strip()!r}",
                    _with_binding(output, ci, bi, evidence_excerpt=excerpt.replace(long, short)),
                )
                break


_ARABIC_INDIC = str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669")


def benign_unicode_digits(document, output):
    for ci, bi, claim, binding in _bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        if re.search(r"\d", excerpt):
            yield Case(
                f"{_where(claim, bi)} in Arabic-Indic digits",
                _with_binding(output, ci, bi, evidence_excerpt=excerpt.translate(_ARABIC_INDIC)),
            )


# --- benign variants ----------------------------------------------------------------


def benign_case(document, output):
    for ci, bi, claim, binding in _bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        yield Case(f"{_where(claim, bi)} upper-cased", _with_binding(output, ci, bi, evidence_excerpt=excerpt.upper()))


def benign_whitespace(document, output):
    for ci, bi, claim, binding in _bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        spaced = "  " + excerpt.replace(" ", "  \n", 1).replace(", ", ",   ") + " \t"
        yield Case(f"{_where(claim, bi)} re-spaced", _with_binding(output, ci, bi, evidence_excerpt=spaced))


def benign_percent_space(document, output):
    for ci, bi, claim, binding in _bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        if re.search(r"\d%", excerpt):
            spaced = re.sub(r"(\d)%", r"\1 %", excerpt)
            yield Case(f"{_where(claim, bi)} with '92 %'", _with_binding(output, ci, bi, evidence_excerpt=spaced))


def benign_split_ellipsis(document, output):
    for ci, bi, claim, binding in _bindings(output):
        words = (binding.get("evidence_excerpt") or "").split(" ")
        if len(words) >= 6:
            third = len(words) // 3
            split = " ".join(words[:third]) + " ... " + " ".join(words[-third:])
            others = [b.get("evidence_excerpt") or "" for b in claim["evidence_bindings"] if b is not binding]
            if missing_facts(claim.get("claim_text") or "", [split, *others]) != missing_facts(
                claim.get("claim_text") or "", [binding.get("evidence_excerpt") or "", *others]
            ):
                continue  # the elision would drop a fact the claim states: not a faithful edit
            yield Case(f"{_where(claim, bi)} split with '...'", _with_binding(output, ci, bi, evidence_excerpt=split))


def benign_unicode_punctuation(document, output):
    for ci, bi, claim, binding in _bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        if "-" in excerpt or '"' in excerpt:
            fancy = excerpt.replace(" - ", " – ").replace('"', "“", 1).replace('"', "”", 1)
            if fancy != excerpt:
                yield Case(
                    f"{_where(claim, bi)} with typographic punctuation",
                    _with_binding(output, ci, bi, evidence_excerpt=fancy),
                )


def benign_id_backfilled(document, output):
    invocations = _invocations(document)
    for ci, bi, claim, binding in _bindings(output):
        own = _cited_invocation(invocations, binding)
        if own is None:
            continue
        others_fit = any(
            other is not own
            and other.tool_name == own.tool_name
            and (ref := find_ref(other, binding.get("raw_path", ""))) is not None
            and normalize(binding.get("evidence_excerpt") or "") in normalize(ref.text)
            for other in document.invocations
        )
        if not others_fit:
            yield Case(
                f"{_where(claim, bi)} without id (one invocation fits)",
                _with_binding(output, ci, bi, source_invocation_id=_DELETE),
            )


MUTATIONS: tuple[MutationClass, ...] = (
    MutationClass("fabricated_invocation_id", "reject", "binding.invocation_exists", fabricated_invocation_id),
    MutationClass("tool_name_of_other_invocation", "reject", "binding.tool_name_match", tool_name_of_other_invocation),
    MutationClass("raw_path_absent", "reject", "binding.raw_path_exists", raw_path_absent),
    MutationClass("field_subpath", "reject", "binding.raw_path_format", field_subpath),
    MutationClass("excerpt_number_changed", "reject", "binding.excerpt_supported", excerpt_number_changed),
    MutationClass("excerpt_negation_inserted", "reject", "binding.excerpt_supported", excerpt_negation_inserted),
    MutationClass("excerpt_invented_text", "reject", "binding.excerpt_supported", excerpt_invented_text),
    MutationClass(
        "negative_bound_to_positive", "reject", "claim.negative_requires_no_evidence", negative_bound_to_positive
    ),
    MutationClass("no_evidence_on_hits", "reject", "binding.raw_path_exists", no_evidence_on_hits),
    MutationClass("duplicate_item_binding", "low_confid", "binding.unique_item", duplicate_item_binding),
    MutationClass(
        "forbidden_user_facing_answer", "reject", "contract.forbidden_fields", _forbidden("user_facing_answer")
    ),
    MutationClass(
        "forbidden_diagnosis_summary", "reject", "contract.forbidden_fields", _forbidden("diagnosis_summary")
    ),
    MutationClass("wrong_answer_version", "low_confid", "contract.answer_version", wrong_answer_version),
    MutationClass("missing_id_unresolvable", "low_confid", "binding.invocation_backfill", missing_id_unresolvable),
    MutationClass("hand_added_invocation", "low_confid", "invocation.recorded_by_run", hand_added_invocation),
    MutationClass("edited_ref_text", "reject", "invocation.refs_derivable", edited_ref_text),
    MutationClass("duplicate_invocation_id", "reject", "invocation.ids_unique", duplicate_invocation_id),
    MutationClass("failed_invocation_cited", "reject", "binding.invocation_succeeded", failed_invocation_cited),
    MutationClass("excerpt_trivial", "reject", "binding.excerpt_informative", excerpt_trivial),
    MutationClass("excerpt_word_changed", "reject", "binding.excerpt_supported", excerpt_word_changed),
    MutationClass("benign_contraction", "none", None, benign_contraction, benign=True),
    MutationClass("benign_unicode_digits", "none", None, benign_unicode_digits, benign=True),
    MutationClass("benign_case", "none", None, benign_case, benign=True),
    MutationClass("benign_whitespace", "none", None, benign_whitespace, benign=True),
    MutationClass("benign_percent_space", "none", None, benign_percent_space, benign=True),
    MutationClass("benign_split_ellipsis", "none", None, benign_split_ellipsis, benign=True),
    MutationClass("benign_unicode_punctuation", "none", None, benign_unicode_punctuation, benign=True),
    MutationClass("benign_id_backfilled", "none", None, benign_id_backfilled, benign=True),
)


# --- running the suite -----------------------------------------------------------------


@dataclass
class ClassReport:
    name: str
    benign: bool
    expected_severity: str
    expected_rule: str | None
    cases: int = 0
    caught: int = 0  # mutations: expected severity and rule; benign: passed
    observed_severity: Counter = field(default_factory=Counter)
    rules_fired: Counter = field(default_factory=Counter)
    misses: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "class": self.name,
            "benign": self.benign,
            "expected_severity": self.expected_severity,
            "expected_rule": self.expected_rule,
            "cases": self.cases,
            "ok": self.caught,
            "rate": round(self.caught / self.cases, 4) if self.cases else None,
            "observed_severity": dict(sorted(self.observed_severity.items())),
            "rules_fired": dict(sorted(self.rules_fired.items())),
            "misses": self.misses[:10],
        }


def load_base_sessions(directory: Path | None = None) -> list[SessionDocument]:
    """Sessions annotated as valid bases (the shipped sample_sessions by default)."""
    from evcli.store.documents import read_document

    directory = directory or data_path("sample_sessions")
    documents = [read_document(path) for path in sorted(Path(directory).glob("*.json"))]
    if not documents:
        raise BadInput(f"no session files (*.json) in {directory}")
    return [d for d in documents if d.run.annotations.get("sample", {}).get("kind") == "base"] or documents


def run_suite(bases: list[SessionDocument], rules: RuleSet) -> dict[str, Any]:
    reports = {m.name: ClassReport(m.name, m.benign, m.expected_severity, m.expected_rule) for m in MUTATIONS}
    skipped: list[str] = []
    used: list[str] = []
    for document in bases:
        execute = document.latest_stage("execute")
        base = execute.output if execute is not None else None
        record = session_record(document, execute) if execute is not None else None
        if base is None or gate(base, document.invocations, rules, record).severity != "none":
            skipped.append(document.run.session_id)  # a base must pass before mutations mean anything
            continue
        used.append(document.run.session_id)
        for mutation in MUTATIONS:
            report = reports[mutation.name]
            for case in mutation.mutate(document, base):
                invocations = document.invocations if case.invocations is None else case.invocations
                result = gate(case.output, invocations, rules, record)
                report.cases += 1
                report.observed_severity[result.severity] += 1
                report.rules_fired.update(result.failed_rules)
                ok = result.severity == mutation.expected_severity and (
                    mutation.expected_rule is None or mutation.expected_rule in result.failed_rules
                )
                if ok:
                    report.caught += 1
                else:
                    report.misses.append(
                        f"{document.run.session_id}: {case.description} -> {result.severity} {result.failed_rules}"
                    )

    mutation_reports = [r for r in reports.values() if not r.benign]
    benign_reports = [r for r in reports.values() if r.benign]
    mutations_total = sum(r.cases for r in mutation_reports)
    mutations_caught = sum(r.caught for r in mutation_reports)
    benign_total = sum(r.cases for r in benign_reports)
    benign_rejected = sum(r.cases - r.caught for r in benign_reports)
    empty_classes = [r.name for r in reports.values() if r.cases == 0]
    return {
        "rule_set_version": rules.version,
        "rules_hash": rules.file_hash,
        "base_sessions": used,
        "skipped_bases": skipped,
        "classes": [r.as_dict() for r in reports.values()],
        "mutations": {
            "cases": mutations_total,
            "caught": mutations_caught,
            "rate": round(mutations_caught / mutations_total, 4) if mutations_total else None,
        },
        "benign": {
            "cases": benign_total,
            "rejected": benign_rejected,
            "rate": round(benign_rejected / benign_total, 4) if benign_total else None,
        },
        "classes_without_cases": empty_classes,
        # Targets: every mutation caught with its severity, no benign variant failed,
        # and every class exercised at least once.
        "targets_met": bool(mutations_total)
        and mutations_caught == mutations_total
        and benign_rejected == 0
        and not empty_classes,
    }
