"""Benign variants: edits a faithful model makes to an excerpt, which must still pass.

Case, spacing, `92 %`, contractions, other digits and punctuation, an excerpt split
with `...`, and a missing invocation id that exactly one invocation fits.
"""

from __future__ import annotations

import re

from evcli.evals.mutations.base import DELETE, Case, bindings, cited_invocation, invocations_by_id, where, with_binding
from evcli.gatekeeper.checks import find_ref
from evcli.gatekeeper.excerpt import informative_problem, normalize
from evcli.gatekeeper.facts import missing_facts


def benign_contraction(document, output):
    for ci, bi, claim, binding in bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        for long, short in ((" is not ", " isn't "), (" does not ", " doesn't "), (" can not ", " can't ")):
            if long in excerpt:
                yield Case(
                    f"{where(claim, bi)} with {short.strip()!r}",
                    with_binding(output, ci, bi, evidence_excerpt=excerpt.replace(long, short)),
                )
                break


_ARABIC_INDIC = str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669")


def benign_unicode_digits(document, output):
    for ci, bi, claim, binding in bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        if re.search(r"\d", excerpt):
            yield Case(
                f"{where(claim, bi)} in Arabic-Indic digits",
                with_binding(output, ci, bi, evidence_excerpt=excerpt.translate(_ARABIC_INDIC)),
            )


def benign_case(document, output):
    for ci, bi, claim, binding in bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        yield Case(f"{where(claim, bi)} upper-cased", with_binding(output, ci, bi, evidence_excerpt=excerpt.upper()))


def benign_whitespace(document, output):
    for ci, bi, claim, binding in bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        spaced = "  " + excerpt.replace(" ", "  \n", 1).replace(", ", ",   ") + " \t"
        yield Case(f"{where(claim, bi)} re-spaced", with_binding(output, ci, bi, evidence_excerpt=spaced))


def benign_percent_space(document, output):
    for ci, bi, claim, binding in bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        if re.search(r"\d%", excerpt):
            spaced = re.sub(r"(\d)%", r"\1 %", excerpt)
            yield Case(f"{where(claim, bi)} with '92 %'", with_binding(output, ci, bi, evidence_excerpt=spaced))


def benign_split_ellipsis(document, output):
    for ci, bi, claim, binding in bindings(output):
        words = (binding.get("evidence_excerpt") or "").split(" ")
        if len(words) >= 6:
            third = len(words) // 3
            split = " ".join(words[:third]) + " ... " + " ".join(words[-third:])
            if informative_problem(split, min_chars=4):
                continue  # a faithful writer does not elide down to a part that carries nothing
            others = [b.get("evidence_excerpt") or "" for b in claim["evidence_bindings"] if b is not binding]
            if missing_facts(claim.get("claim_text") or "", [split, *others]) != missing_facts(
                claim.get("claim_text") or "", [binding.get("evidence_excerpt") or "", *others]
            ):
                continue  # the elision would drop a fact the claim states: not a faithful edit
            yield Case(f"{where(claim, bi)} split with '...'", with_binding(output, ci, bi, evidence_excerpt=split))


def benign_unicode_punctuation(document, output):
    for ci, bi, claim, binding in bindings(output):
        excerpt = binding.get("evidence_excerpt") or ""
        if "-" in excerpt or '"' in excerpt:
            fancy = excerpt.replace(" - ", " – ").replace('"', "“", 1).replace('"', "”", 1)
            if fancy != excerpt:
                yield Case(
                    f"{where(claim, bi)} with typographic punctuation",
                    with_binding(output, ci, bi, evidence_excerpt=fancy),
                )


def benign_id_backfilled(document, output):
    invocations = invocations_by_id(document)
    for ci, bi, claim, binding in bindings(output):
        own = cited_invocation(invocations, binding)
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
                f"{where(claim, bi)} without id (one invocation fits)",
                with_binding(output, ci, bi, source_invocation_id=DELETE),
            )
