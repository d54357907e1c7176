"""The claims of a diagnosis: the ranked suspects of `find_changes` as root-cause hypotheses, and the
chain from the first suspect to what users see as cited changes.

Invariants: a suspect is only ever a `root_cause` claim with `support_level` indirect (a hypothesis,
stated as such), bound to its `$.suspects[i]` ref and to its strongest `$.changes[j]`; every step of
the chain is an observation bound to one `$.changes[j]` whose excerpt is the change's head (who,
what, from when, against which baseline); the ranking's basis is stated in missing_info. A service
the question names that is not the first suspect gets its own suspect entry stated too (whether its
trouble starts in a callee).
"""

from __future__ import annotations

from typing import Any

from evcli.agents.offline.claims import Claim, Ref, binding_of
from evcli.messages import Catalogue

SUSPECT_CAP = 3  # suspects stated as hypotheses (the first, and others it does not explain)
CHAIN_CAP = 3  # callers of the first suspect whose changes are stated
_HEAD_END = "; peak "  # a change's head ends before its peak and counts
_SUSPECT_END = "; changes: "


def _head(text: str, end: str) -> str:
    return text.split(end, 1)[0] if end in text else text.split("; class=", 1)[0]


def _change_claim(ref: Ref, words: Catalogue, claim_type: str, end: str = _HEAD_END) -> Claim:
    excerpt = _head(ref.ref.text, end)
    return {
        "claim_id": "",
        "claim_type": claim_type,
        "claim_text": words("diagnosis.change", excerpt=excerpt),
        "support_level": "direct",
        "evidence_bindings": [binding_of(ref, excerpt)],
    }


def diagnosis_claims(refs: list[Ref], words: Catalogue, asked: tuple[str, ...]) -> tuple[list[Claim], list[str]]:
    """(claims, notes): the suspects and the chain of the last find_changes call."""
    found = [ref for ref in refs if ref.invocation.tool_name == "find_changes"]
    if not found:
        return [], []
    latest = max(ref.invocation.invocation_id for ref in found)
    own = [ref for ref in found if ref.invocation.invocation_id == latest]
    suspects = sorted((ref for ref in own if ref.array == "suspects"), key=lambda ref: ref.index)
    changes = {ref.index: ref for ref in own if ref.array == "changes"}
    output = own[0].invocation.output
    if not suspects:
        return [], [words("diagnosis.no_suspect", message=output.get("message") or "")]
    first = suspects[0].item
    claims: list[Claim] = [_suspect_claim(suspects[0], changes, words)]
    stated: set[int] = set(first.get("change_refs", [])[:1])
    top_refs = [changes[i] for i in first.get("change_refs", [])[1:2] if i in changes and i not in stated]
    claims += [_change_claim(ref, words, "observation") for ref in top_refs]
    stated.update(ref.index for ref in top_refs)
    for caller in first.get("affects", [])[:CHAIN_CAP]:
        ref = next((r for i, r in sorted(changes.items()) if r.item.get("service") == caller and i not in stated), None)
        if ref is not None:
            claims.append(_change_claim(ref, words, "symptom"))
            stated.add(ref.index)
    # other suspects whose trouble the first one does not explain, and a service the question names; when the
    # first is the service asked (its own cause, evcli.diagnosis.ranking.asked_first), the others nothing links
    # to it are trouble of their own: stated as what else changed, not as causes of what was asked
    affected = set(first.get("affects", []))
    others = [ref for ref in suspects[1:SUSPECT_CAP] if ref.item.get("service") not in affected]
    others += [ref for ref in suspects[1:] if ref.item.get("service") in asked and ref not in others][:1]
    if first.get("asked"):
        claims += [_change_claim(ref, words, "observation", _SUSPECT_END) for ref in others]
    else:
        claims += [_suspect_claim(ref, changes, words) for ref in others]
    used = words.join(list(output.get("ranked_by") or []))
    notes = [words("diagnosis.ranked_by", used=used)] if used else []
    named = [service for service in asked if service != first.get("service")]
    if named and named[0] not in first.get("affects", []):  # nothing known links the asked service to it
        notes.append(words("diagnosis.asked_unlinked", asked=named[0], first=first.get("service")))
    if first.get("asked") and others:
        unlinked = words.join([str(ref.item.get("service")) for ref in others])
        notes.append(words("diagnosis.others_unlinked", asked=first.get("service"), others=unlinked))
    return claims, notes


def _suspect_claim(ref: Ref, changes: dict[int, Ref], words: Catalogue) -> Claim:
    item: dict[str, Any] = ref.item
    excerpt = _head(ref.ref.text, _SUSPECT_END)
    bindings = [binding_of(ref, excerpt)]
    strongest = next((changes[i] for i in item.get("change_refs", [])[:1] if i in changes), None)
    if strongest is not None:
        bindings.append(binding_of(strongest, _head(strongest.ref.text, _HEAD_END)))
    return {
        "claim_id": "",
        "claim_type": "root_cause",
        "claim_text": words("diagnosis.suspect", rank=item.get("rank"), excerpt=excerpt),
        "support_level": "indirect",
        "evidence_bindings": bindings,
    }


def confirm_action(refs: list[Ref], words: Catalogue) -> list[str]:
    """What would confirm the first suspect."""
    suspects = sorted(
        (ref for ref in refs if ref.invocation.tool_name == "find_changes" and ref.array == "suspects"),
        key=lambda ref: (-ref.invocation.invocation_id, ref.index),
    )
    if not suspects:
        return []
    item = suspects[0].item
    signals = words.join([str(change).rsplit(" ", 1)[0] for change in item.get("changes", [])[:2]])
    return [words("action.confirm_suspect", service=item.get("service"), onset=item.get("onset"), signals=signals)]
