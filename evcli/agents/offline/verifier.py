"""The offline Verifier: rule-based entailment over the verified excerpts, capped by the gate.

It judges only the quoted excerpts, never the rest of a ref. A claim is
direct_support only when every number, identifier and negation of it occurs in
its excerpts, its content words (the framing words of the offline templates
aside) do too, and its polarity and the scope of its negation match; a
negative observation may only restate that a query found nothing. Tokens and
negations are the Gatekeeper's (evcli/text.py). An excerpt holding JSON string
escapes (a container runtime's `{"log": "...userId=42\\n"}`) is read as written
and decoded: a claim quoting the line either way is judged on the same facts,
and a number or identifier it changed is in neither reading. A fact the
Gatekeeper matched to a field of the cited item (`facts` of the verified
evidence: `0.739 s` for a recorded 739 ms) is stated by the evidence too; a
claim with a fact that disagrees with its field is never in the payload.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from evcli.agents.engine import EngineReply, RoleRequest
from evcli.agents.offline.payload import reply
from evcli.contracts import NO_EVIDENCE_PATH, Severity, Verdict
from evcli.core.text import (
    ENGLISH_WORD,
    RAW_TOKEN,
    STOP_WORDS,
    TOKEN,
    comparable,
    is_negation,
    json_unescaped,
    mixed_case_words,
    negated,
)
from evcli.scope.grammar import hits
from evcli.scope.grammar import words as grammar_words
from evcli.scope.match import Spans, humps
from evcli.scope.time_language import packaged

CRITICAL_TYPES = frozenset({"observation", "negative_observation", "symptom", "root_cause"})

# the units of measures as logs and claims write them (time units are the grammar's: `_unit_words`)
_MEASURE_UNITS = {
    "%": "%",
    "percent": "%",
    "ms": "ms",
    "millisecond": "ms",
    "milliseconds": "ms",
    "g": "gb",
    "gb": "gb",
    "gib": "gb",
    "mb": "mb",
    "mib": "mb",
    "kb": "kb",
    "kib": "kb",
}
_NUMBER = re.compile(r"^(\d+(?:\.\d+)?)([a-z%]*)$")
# A value ends at JSON punctuation too: a cited JSON log line reads `"msg": "… locale=zh-CN"}`.
_PAIR = re.compile(r"([a-z_][a-z0-9_.]*)=([^\s,;()\[\]{}\"'。，；]+)")


@cache
def _unit_words() -> dict[str, str]:
    """Unit words → the unit they mean: the measures', and every language's time units (`time.units` of
    evcli/scope/grammar/<language>.toml; a token is ASCII, so only ASCII ones ever match)."""
    return {**packaged().pooled.part("units"), **_MEASURE_UNITS}


def _tokens(normalized: str) -> list[str]:
    tokens = [token.rstrip("._:/+-") for token in TOKEN.findall(normalized)]
    merged: list[str] = []
    for token in tokens:  # "25 minutes" -> "25minutes", "3.8 GB" -> "3.8gb"
        if merged and token in _unit_words() and re.fullmatch(r"\d+(?:\.\d+)?", merged[-1]):
            merged[-1] += token
        else:
            merged.append(token)
    return [token for token in merged if token]


def _number(token: str) -> tuple[float, str] | None:
    match = _NUMBER.match(token)
    if not match:
        return None
    unit = match.group(2)
    return float(match.group(1)), _unit_words().get(unit, unit)


@dataclass(frozen=True)
class _Check:
    verification: str
    facts: list[tuple[str, bool]]
    note: str


def _evidence_numbers(tokens: list[str]) -> list[tuple[float, str]]:
    numbers = []
    for token in tokens:
        for piece in re.split(r"[/:=,()]+", token):
            number = _number(piece)
            if number:
                numbers.append(number)
    return numbers


def _stated(number: tuple[float, str], numbers: list[tuple[float, str]]) -> bool:
    """The value among `numbers`, in the same unit (a number written without one takes any)."""
    value, unit = number
    return any(value == seen and (not unit or unit == seen_unit) for seen, seen_unit in numbers)


def _present(token: str, evidence: str) -> bool:
    return (
        re.search(
            rf"(?<![a-z0-9])(?<![0-9]\.){re.escape(token)}(?![a-z0-9]|\.[0-9])",
            evidence,
        )
        is not None
    )


# Words the offline claim templates (evcli/messages/<language>.py) write around the quoted facts: a group of
# the question grammar (evcli/scope/grammar/<language>.toml), a language's words in its file
_FRAMING = "word.framing"
_CONTENT_WORD = re.compile(r"[a-z]{3,}")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]{2,}")


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _missing_content(claim_raw: str, claim_text: str, evidence_raw: str, evidence: str) -> list[str]:
    """Content words and CJK terms of the claim the excerpts do not carry (framing words aside)."""
    evidence_words = set(_CONTENT_WORD.findall(evidence))
    evidence_words |= {part.lower() for token in RAW_TOKEN.findall(evidence_raw) for part in humps(token) or [token]}
    stems = {_stem(word) for word in evidence_words}
    missing = [
        word
        for word in dict.fromkeys(_CONTENT_WORD.findall(claim_text))
        if word not in STOP_WORDS
        and word not in grammar_words(_FRAMING)
        and word not in _unit_words()
        and _stem(word) not in stems
    ]
    for run in _CJK_RUN.findall(_unframed(claim_text)):
        missing += [run[i : i + 2] for i in range(len(run) - 1) if run[i : i + 2] not in evidence][:1]
    return missing


def _unframed(text: str) -> str:
    """The text with the framing words written over by spaces, the longest of overlapping ones."""
    spans = Spans()
    for hit in hits(text, _FRAMING):
        if spans.claim(hit.start, hit.end):
            text = text[: hit.start] + " " * (hit.end - hit.start) + text[hit.end :]
    return text


def _negation_scope_problem(claim_text: str, evidence: str) -> str:
    """A claim negation whose next content word no negation of the evidence governs."""
    claim_words, evidence_words = (
        ENGLISH_WORD.findall(claim_text),
        ENGLISH_WORD.findall(evidence),
    )
    governed: set[str] = set()
    for index, negation in enumerate(evidence_words):
        if is_negation(negation):
            following = [w for w in evidence_words[index + 1 : index + 4] if w not in STOP_WORDS and len(w) >= 3]
            governed.update(_stem(word) for word in following[:1])
    for index, word in enumerate(claim_words):
        if is_negation(word):
            following = [w for w in claim_words[index + 1 : index + 4] if w not in STOP_WORDS and len(w) >= 3]
            if following and _stem(following[0]) not in governed:
                return f"the evidence does not negate '{following[0]}'"
    return ""


def is_hypothesis(claim: dict[str, Any]) -> bool:
    """A root cause stated as what it is, an inference (support_level indirect): judged on its facts,
    never critical (the observations it rests on are)."""
    return claim.get("claim_type") == "root_cause" and claim.get("support_level") == "indirect"


def _check_claim(claim: dict[str, Any]) -> _Check:
    evidence_items = claim.get("verified_evidence") or []
    if not evidence_items:
        return _Check("no_evidence", [], "no verified evidence")
    # Only the quoted excerpts: the rest of a ref is text the claim did not cite.
    texts = [str(item.get("evidence_excerpt") or item.get("matched_text") or "") for item in evidence_items]
    # a JSON-escaped line (a container runtime's) as written and decoded: a claim may quote either
    readings = [reading for text in texts if text for reading in dict.fromkeys((text, json_unescaped(text)))]
    evidence_raw = " \n ".join(readings)
    evidence = comparable(evidence_raw, keep_ports=True)
    claim_raw = str(claim.get("claim_text") or "")
    claim_text = comparable(claim_raw, keep_ports=True)
    claim_type = claim.get("claim_type")
    paths = [str(item.get("raw_path") or "") for item in evidence_items]

    if claim_type == "negative_observation" and any(path != NO_EVIDENCE_PATH for path in paths):
        return _Check("contradicted", [], "a claim of no evidence rests on positive evidence")

    # the claim's values the Gatekeeper found equal to a field of the cited item
    matched = _tokens(comparable(" ".join(fact["claim"] for fact in _matched_facts(claim)), keep_ports=True))
    matched_numbers = _evidence_numbers(matched)
    evidence_pairs: dict[str, set[str]] = {}
    for key, value in _PAIR.findall(evidence):
        evidence_pairs.setdefault(key, set()).add(value.rstrip(".:%"))
    for key, written in _PAIR.findall(claim_text):
        value, number = written.rstrip(".:%"), _number(written.rstrip(".:"))
        if (
            key in evidence_pairs
            and value not in evidence_pairs[key]
            and not (number and _stated(number, matched_numbers))
        ):
            seen = ", ".join(sorted(evidence_pairs[key]))
            return _Check(
                "contradicted",
                [(f"{key}={value}", False)],
                f"{key}={value} but the evidence says {key}={seen}",
            )

    evidence_tokens = _tokens(evidence)
    evidence_numbers = _evidence_numbers(evidence_tokens) + matched_numbers
    camel = mixed_case_words(claim_raw)
    facts: list[tuple[str, bool]] = []
    for token in dict.fromkeys(_tokens(claim_text)):
        number = _number(token)
        if number:
            facts.append((token, _stated(number, evidence_numbers)))
        elif re.search(r"[0-9]|[a-z0-9][-_.:/][a-z0-9]", token) or token in camel:
            facts.append((token, _present(token, evidence) or token in matched))
    if negated(claim_text):
        facts.append(("negation", negated(evidence)))

    missing = [fact for fact, found in facts if not found]
    if claim_type == "runbook_reference":
        return _Check(
            "indirect_support",
            facts,
            "runbook guidance, not a fact of this environment",
        )
    if is_hypothesis(claim):
        if missing:
            return _Check(
                "no_evidence", facts, "a hypothesis whose facts are not in the evidence: " + ", ".join(missing)
            )
        return _Check(
            "indirect_support", facts, "a ranked hypothesis: its facts are in the evidence, the cause is inferred"
        )
    meaning = _meaning_problem(claim_type, claim_raw, claim_text, evidence_raw, evidence) if not missing else ""
    if claim_type == "negative_observation":
        if missing:
            return _Check(
                "no_evidence",
                facts,
                "not in the no-evidence record: " + ", ".join(missing),
            )
        if meaning:
            return _Check("indirect_support", facts, meaning)
        return _Check(
            "direct_support",
            facts,
            "restates only that this query found no matching evidence",
        )
    if not facts:
        return _Check(
            "indirect_support",
            facts,
            "no number or identifier to check against the evidence",
        )
    if missing:
        numeric_or_negation = [fact for fact in missing if fact == "negation" or _number(fact)]
        verification = "no_evidence" if numeric_or_negation else "indirect_support"
        return _Check(verification, facts, "not in the evidence: " + ", ".join(missing))
    if meaning:
        return _Check("indirect_support", facts, meaning)
    return _Check(
        "direct_support",
        facts,
        "every number, identifier and negation occurs in the evidence",
    )


def _meaning_problem(claim_type: Any, claim_raw: str, claim_text: str, evidence_raw: str, evidence: str) -> str:
    """Why the excerpts do not carry the claim's meaning: a content word, or its polarity, is not in them."""
    unsaid = _missing_content(claim_raw, claim_text, evidence_raw, evidence)
    if unsaid:
        return "the excerpts do not say: " + ", ".join(unsaid[:5])
    if claim_type == "negative_observation":
        return ""
    if negated(evidence) and not negated(claim_text):
        # the claim states, un-negated, a word the evidence negates ("connection is available" for "is not
        # available"); a negation elsewhere in the excerpt (a JSON line's "did not respond" beside the quoted
        # "payment request failed") is not the claim's
        said = {_stem(word) for word in ENGLISH_WORD.findall(claim_text)}
        negated_words = _governed(evidence)
        if negated_words & said or not negated_words:
            return "the evidence is negated, the claim is not"
    return _negation_scope_problem(claim_text, evidence) if negated(claim_text) else ""


def _governed(evidence: str) -> set[str]:
    """The stems of the words the evidence's English negations govern (the next content word of each)."""
    words = ENGLISH_WORD.findall(evidence)
    governed: set[str] = set()
    for index, word in enumerate(words):
        if is_negation(word):
            following = [w for w in words[index + 1 : index + 4] if w not in STOP_WORDS and len(w) >= 3]
            governed.update(_stem(w) for w in following[:1])
    return governed


def _matched_facts(claim: dict[str, Any]) -> list[dict[str, Any]]:
    """The facts of the claim the Gatekeeper matched to a field of its cited items (none before facts)."""
    return [fact for item in claim.get("verified_evidence") or [] for fact in item.get("facts") or []]


def verify(request: RoleRequest) -> EngineReply:
    payload = request.payload
    claims = payload.get("verified_claims") or []
    gate = payload.get("gatekeeper") or {}
    checks: list[dict[str, Any]] = []
    facts_checked: list[str] = []
    for claim in claims:
        check = _check_claim(claim)
        checks.append(
            {
                "claim_id": claim.get("claim_id"),
                "verification": check.verification,
                "is_critical": claim.get("claim_type") in CRITICAL_TYPES and not is_hypothesis(claim),
                "note": check.note,
            }
        )
        facts_checked += [
            f"{claim.get('claim_id')}: {fact} ({'found' if found else 'missing'})" for fact, found in check.facts
        ]
        facts_checked += [
            f"{claim.get('claim_id')}: {fact['claim']} = {fact['field']} {fact['evidence']}"
            for fact in _matched_facts(claim)
        ]

    critical = [check for check in checks if check["is_critical"]]
    if any(check["verification"] == "contradicted" for check in checks):
        verdict, reason = "REJECT", "a claim contradicts its evidence"
    elif not checks:
        verdict, reason = "LOW_CONFID", "there is no claim to verify"
    elif all(check["verification"] == "direct_support" for check in critical):
        verdict, reason = (
            "PASS",
            "every critical claim is directly supported by its verified evidence",
        )
    else:
        verdict, reason = (
            "LOW_CONFID",
            "some critical claims are not directly supported",
        )
    severity = str(gate.get("severity") or "none")
    ceiling = Severity(severity).ceiling if severity in tuple(Severity) else Verdict.PASS
    if ceiling > verdict:
        verdict = ceiling
        reason += f"; capped at {ceiling} by the gate (severity {gate.get('severity')})"
    direct = sum(check["verification"] == "direct_support" for check in checks)
    return reply(
        {
            "verdict": verdict,
            "groundedness_score": round(direct / len(checks), 4) if checks else 0.0,
            "critical_fact_count": len(critical),
            "claim_checks": checks,
            "facts_checked": facts_checked,
            "rationale": f"Rule-based entailment: {reason}.",
        }
    )
