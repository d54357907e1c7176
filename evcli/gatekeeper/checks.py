"""One function per Gatekeeper rule.

Each check returns None when the rule holds, or a short message saying what is
wrong. Checks never decide severity or whether they run; `engine.gate` does
that from the rule set.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache, lru_cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from evcli.contracts import (
    ANSWER_VERSION,
    FORBIDDEN_EXECUTOR_FIELDS,
    NO_EVIDENCE_PATH,
    CheckedBinding,
    Claim,
    EvidenceBinding,
    EvidenceRef,
    ToolInvocation,
)
from evcli.core.text import phrase_finder
from evcli.gatekeeper import lookalike, paths, typed, typed_model
from evcli.gatekeeper.excerpt import ExcerptMatch, informative_problem, match_excerpt, normalize
from evcli.gatekeeper.facts import missing_facts

if TYPE_CHECKING:
    from evcli.tools.registry import ToolSpec


@lru_cache(maxsize=64)
def _raw_path_pattern(arrays: tuple[str, ...], singles: tuple[str, ...] = ()) -> re.Pattern[str]:
    """`$.<array>[<index>]` for one of `arrays`, or `$.<single>` for one of `singles`, optionally followed
    by the path of one field inside that item (evcli.gatekeeper.paths): no slice, no wildcard, no
    leading zero, no spaces."""
    forms = []
    if arrays:
        forms.append(rf"(?:{'|'.join(re.escape(array) for array in arrays)})\[(?:0|[1-9][0-9]*)\]")
    forms += [re.escape(single) for single in singles]
    return re.compile(rf"\$\.(?:{'|'.join(forms)}){paths.FIELD}")


@cache
def _registry() -> ModuleType:
    """The tool registry, imported on first use (loading it imports every tool)."""
    from evcli.tools import registry

    return registry


@lru_cache(maxsize=64)  # a spec is hashed by identity: one entry per registered tool
def _spec_path_pattern(spec: ToolSpec) -> re.Pattern[str]:
    return _raw_path_pattern(spec.array_names, spec.single_names)


def forbidden_fields(output: dict[str, Any]) -> str | None:
    present = [name for name in FORBIDDEN_EXECUTOR_FIELDS if name in output]
    return f"forbidden executor field(s): {', '.join(present)}" if present else None


def answer_version(output: dict[str, Any], parse_error: str | None) -> str | None:
    version = output.get("answer_version")
    if version != ANSWER_VERSION:
        return f"answer_version is {version!r}, expected {ANSWER_VERSION!r}"
    if parse_error:
        return f"not a valid {ANSWER_VERSION} document: {parse_error}"
    return None


def bindings_present(claim: Claim) -> str | None:
    return None if claim.evidence_bindings else "claim has no evidence bindings"


def fields_present(binding: EvidenceBinding) -> str | None:
    missing = [
        name for name in ("tool_name", "raw_path", "evidence_excerpt") if not (getattr(binding, name) or "").strip()
    ]
    return f"binding lacks {', '.join(missing)}" if missing else None


def negative_requires_no_evidence(claim: Claim, binding: EvidenceBinding) -> str | None:
    if claim.claim_type == "negative_observation" and binding.raw_path != NO_EVIDENCE_PATH:
        return f"negative_observation bound to {binding.raw_path}, only {NO_EVIDENCE_PATH} may support it"
    return None


def raw_path_format(binding: EvidenceBinding) -> str | None:
    """The raw_path names one item of the tool's evidence arrays (from the tool registry) or `$.no_evidence`."""
    registry = _registry()
    raw_path = binding.raw_path or ""
    spec = registry.find(binding.tool_name)
    if spec is None:
        known = ", ".join(registry.names())
        return f"raw_path {raw_path!r} cannot be checked: unknown tool {binding.tool_name!r}; tools: {known}"
    if raw_path == NO_EVIDENCE_PATH or _spec_path_pattern(spec).fullmatch(raw_path):
        return None
    return f"raw_path {raw_path!r} does not name one item (or one field of an item) of {binding.tool_name}'s evidence"


def invocation_exists(binding: EvidenceBinding, invocations: dict[int, ToolInvocation]) -> str | None:
    if binding.source_invocation_id in invocations:
        return None
    return f"source_invocation_id {binding.source_invocation_id} is not an invocation of this session"


def tool_name_match(binding: EvidenceBinding, invocation: ToolInvocation) -> str | None:
    if binding.tool_name == invocation.tool_name:
        return None
    return f"invocation {invocation.invocation_id} called {invocation.tool_name}, not {binding.tool_name}"


def invocation_has_refs(invocation: ToolInvocation) -> str | None:
    details = invocation.retrieval_details
    if details is None or details.evidence_refs is None:
        return f"invocation {invocation.invocation_id} recorded no evidence_refs"
    return None


def find_ref(invocation: ToolInvocation, raw_path: str) -> EvidenceRef | None:
    """The evidence ref of the item `raw_path` names or lies in."""
    item = paths.item_path(raw_path)
    details = invocation.retrieval_details
    for ref in (details.evidence_refs or []) if details else []:
        if ref.raw_path == item:
            return ref
    return None


def raw_path_exists(binding: EvidenceBinding, invocation: ToolInvocation, ref: EvidenceRef | None) -> str | None:
    """The item has an evidence ref (`ref`: `find_ref` of the binding's path), and a field the path names is in
    the item's recorded output."""
    raw_path = binding.raw_path or ""
    if ref is None:
        return f"invocation {invocation.invocation_id} has no evidence ref at {paths.item_path(raw_path)}"
    item, field = paths.split(raw_path)
    if field and not paths.resolve(typed.item_at(invocation.output, item), field)[0]:
        return f"invocation {invocation.invocation_id}'s {item} has no field {field.lstrip('.')}"
    return None


def excerpt_supported(
    binding: EvidenceBinding, ref: EvidenceRef, min_similarity: float
) -> tuple[str | None, ExcerptMatch]:
    match = match_excerpt(binding.evidence_excerpt or "", ref.text, min_similarity=min_similarity)
    if match.supported:
        return None, match
    return f"excerpt not supported by {ref.raw_path}: {match.reason}", match


def excerpt_informative(binding: EvidenceBinding, min_chars: int) -> str | None:
    """An excerpt such as "a", "is" or "0" is found in almost any ref and carries no fact."""
    return informative_problem(binding.evidence_excerpt or "", min_chars=min_chars)


def _scope_services(invocations: list[ToolInvocation]) -> list[str]:
    services = []
    for invocation in invocations:
        details = invocation.retrieval_details
        services += [str(invocation.input_params.get("service") or ""), (details.service or "") if details else ""]
    return services


def session_entity_finder(invocations: dict[int, ToolInvocation]):
    """A test whether a word occurs anywhere in the session's evidence (built on first use)."""
    corpus: list[str] = []

    def occurs(word: str) -> bool:
        if not corpus:
            texts = [
                ref.text
                for invocation in invocations.values()
                for ref in ((invocation.retrieval_details.evidence_refs or []) if invocation.retrieval_details else [])
            ]
            texts += [str(invocation.input_params.get("service") or "") for invocation in invocations.values()]
            corpus.append(normalize("\n".join(texts)))
        return re.search(rf"(?<![a-z0-9-]){re.escape(word)}(?![a-z0-9]|-[a-z0-9])", corpus[0]) is not None

    return occurs


def cited_items(
    bindings: Sequence[EvidenceBinding | CheckedBinding],
    invocations: dict[int, ToolInvocation],
    read: dict[tuple[int, str], tuple[Any, list[typed_model.Value]]] | None = None,
) -> list[typed_model.Cited]:
    """The items a claim's bindings name (in claim order, ids resolved), read as typed values (the
    recorded output's item, or the ref text when the output does not hold it); `$.no_evidence` names no item.
    `read`: the items already read in this gate run (an item cited by several claims is read once)."""
    read = {} if read is None else read
    cited = []
    for index, binding in enumerate(bindings):
        invocation = invocations.get(binding.source_invocation_id)  # type: ignore[arg-type]
        raw_path = binding.raw_path or ""
        if invocation is None or raw_path == NO_EVIDENCE_PATH:
            continue
        item_path, field = paths.split(raw_path)
        item_path = item_path or raw_path
        key = (id(invocation), item_path)
        known = read.get(key)
        if known is None:
            item = typed.item_at(invocation.output, item_path)
            if item is None:
                ref = find_ref(invocation, item_path)
                item = ref.text if ref is not None else None
            if item is None:
                continue
            known = read[key] = (item, typed.item_values(item, item_path))
        item, values = known
        array = invocation.output.get(item_path[2:].split("[", 1)[0]) if "[" in item_path else None
        field_path = item_path + paths.canonical(field) if field else ""
        cited.append(typed_model.Cited(index, item_path, values, array or [], field_path, item))
    return cited


def facts_match(
    claim: Claim, cited: list[typed_model.Cited], services: tuple[str, ...] = ()
) -> tuple[str | None, typed_model.ClaimCheck]:
    """Each number, time, state, status, direction, rank, call and subject the claim states agrees with
    the field of its cited items it is matched to."""
    checked = typed.check_claim(claim.claim_text or "", cited, services)
    if not checked.problems:
        return None, checked
    return f"claim's facts disagree with its evidence: {'; '.join(checked.problems[:3])}", checked


def facts_in_excerpts(
    claim: Claim,
    cited: list[ToolInvocation],
    is_session_entity,
    services: tuple[str, ...] = (),
    checked: typed_model.ClaimCheck | None = None,
) -> str | None:
    """The claim's identifiers, the environment's services it names, its negation, and the numbers the
    typed check did not compare all occur in its bound excerpts (a service one of the cited invocations
    searched counts as stated)."""
    excerpts = [binding.evidence_excerpt or "" for binding in claim.evidence_bindings]
    missing = missing_facts(
        typed.without(claim.claim_text or "", checked.consumed) if checked else claim.claim_text or "",
        excerpts,
        scope_services=_scope_services(cited),
        is_session_entity=is_session_entity,
        services=services,
    )
    if not missing:
        return None
    return f"claim states what its excerpts do not carry: {', '.join(missing[:5])}"


# A single quote opens a quotation when no word character is before it (checked after reading it: every
# alternative then starts with a literal, and the engine tries only the positions of quotation marks).
_QUOTED = re.compile(r'"[^"]*"|“[^”]*”|「[^」]*」|‘[^’]*’|\'(?<!\w\')[^\']*\'(?!\w)')
# The lookahead for an attribution word's first letter rejects the other positions before the lookbehind.
_ATTRIBUTED = re.compile(
    r"(?=[lwrsp记写])(?<!\w)(?:logged|logs|wrote|writes|reported|reports|says|said|reads|printed|记录了?|写道)(?!\w)"
    r"[^:：]{0,80}[:：].*?(?=;\s|\.\s|。|$)",  # the quotation runs to the end of its sentence
    re.IGNORECASE | re.DOTALL,
)


def observes_only(claim: Claim, asserting_phrases: tuple[str, ...]) -> str | None:
    """An observation states what a source recorded: a cause, a verdict or an instruction can be in it
    only as a quotation attributed to its source ('db-proxy logged "root cause confirmed: DNS"'),
    never as the claim's own assertion; causes belong in hypotheses and actions in recommended_actions."""
    if claim.claim_type not in ("observation", "negative_observation"):
        return None
    own = _ATTRIBUTED.sub(" ", _QUOTED.sub(" ", claim.claim_text or ""))
    found = phrase_finder(asserting_phrases).search(own)
    if found is None:
        return None
    start, end, _ = found
    return (
        f"the {claim.claim_type} asserts {own[start:end]!r} in its own words: quote it with its source, "
        "or state it as a hypothesis or an action"
    )


_WORD = re.compile(r"\w+(?:[-.]\w+)*")


def plain_text(claim: Claim) -> str | None:
    """What a reader sees is what the checks read: no default-ignorable, invisible or control character
    (zero-width, bidi controls, Hangul fillers) in the claim or its excerpts, and no word written with
    look-alike letters ("ordеr" with a Cyrillic е, a dotless ı, an Armenian օ) unless its own excerpts
    quote it so."""
    text = claim.claim_text or ""
    excerpts = [binding.evidence_excerpt or "" for binding in claim.evidence_bindings]
    # an excerpt is matched against its ref, where a character the source did not write fails it
    hidden = [c for c in lookalike.invisible(text) if c not in "".join(excerpts)]
    if hidden:
        return f"the claim holds an invisible or control character U+{ord(hidden[0]):04X}"
    if text.isascii():
        return None
    quoted = "".join(excerpts)
    for word in _WORD.findall(text):
        plain = lookalike.skeleton(word)
        if plain != word and plain.isascii() and any(c.isalpha() for c in plain) and word not in quoted:
            if word.isascii() or any(c.isascii() and c.isalpha() for c in word) or len(plain) > 1:
                return f"the claim's word {word!r} is written with look-alike letters (reads {plain!r})"
    return None


def backfill_candidates(
    binding: EvidenceBinding, invocations: dict[int, ToolInvocation], min_similarity: float
) -> list[int]:
    """Invocations whose tool, raw_path and ref text all fit this binding."""
    candidates = []
    for invocation_id, invocation in invocations.items():
        if invocation.tool_name != binding.tool_name:
            continue
        ref = find_ref(invocation, binding.raw_path or "")
        if ref is None:
            continue
        if match_excerpt(binding.evidence_excerpt or "", ref.text, min_similarity=min_similarity).supported:
            candidates.append(invocation_id)
    return candidates


def invocation_backfill(candidates: list[int]) -> str | None:
    if len(candidates) == 1:
        return None
    if not candidates:
        return "source_invocation_id missing and no invocation matches tool_name + raw_path + excerpt"
    listed = ", ".join(str(c) for c in candidates)
    return f"source_invocation_id missing and {len(candidates)} invocations match ({listed}); cannot back-fill"


def unique_item(invocation_id: int, raw_path: str, seen: set[tuple[int, str]]) -> str | None:
    if (invocation_id, raw_path) in seen:
        return f"{raw_path} of invocation {invocation_id} is bound twice in this claim"
    return None
