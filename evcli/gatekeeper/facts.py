"""Does a claim state only numbers, identifiers and negations its own excerpts carry?

A genuine excerpt proves nothing about a claim that does not restate it: "The
root cause is database migration 42" bound to a real but unrelated log line
must not pass. So every number of the claim, every identifier (a token with a
digit or an inner `_ . :`, a CamelCase name such as HikariCP, a hyphenated name
such as order-service that the session's evidence uses) and its polarity must
occur in the union of the claim's excerpts. Ordinary words are the Verifier's
business, not the Gatekeeper's. A service the cited invocation searched may be
named without being quoted: the invocation's scope states it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from itertools import compress

from evcli.core.text import (
    NEGATION_WORDS,
    STOP_WORDS,
    TOKEN,
    comparable,
    critical_tokens,
    has_negation,
    mixed_case_words,
    negated,
    normalize,
)

__all__ = ["missing_facts"]

_DIGITS = re.compile(r"\d+(?:\.\d+)?")
# Not after a letter: a match there would start at that letter already (fewer tries inside words).
_HYPHENATED = re.compile(r"(?<![a-z])[a-z][a-z0-9]*(?:-[a-z0-9]+)+")
_PIECE = re.compile(r"[a-z0-9]+")
_PIECE_SEPARATORS = re.compile(r"[/.:@_]+")
_INFLECTIONS = ("s", "es", "ed", "d", "ing", "ned", "led")


def _number(digits: str) -> str:
    whole, _, fraction = digits.partition(".")
    whole = whole.lstrip("0") or "0"
    fraction = fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def _tokens(tokens: Iterable[str]) -> set[str]:
    """The fact tokens (TOKEN's matches) and their pieces between "/", ".", ":" and "@" ("/data/logs/order-service"
    and "es-cluster.internal:9200" name order-service and es-cluster too)."""
    found = set()
    for token in tokens:
        found.add(token.rstrip("._:/+-"))
        found.update([piece.strip("-+%") for piece in _PIECE_SEPARATORS.split(token)])
    return found


def missing_facts(
    claim_text: str,
    excerpts: Iterable[str],
    *,
    scope_services: Iterable[str] = (),
    is_session_entity: Callable[[str], bool] = lambda _: True,
    services: Iterable[str] = (),
) -> list[str]:
    """The claim's numbers, identifiers and negation that its excerpts do not carry, in claim order;
    `services`: the environment's service names, each a fact wherever a claim names it."""
    claim = comparable(claim_text)
    evidence = comparable("\n".join(excerpts))
    accepted = {normalize(service) for service in scope_services if service}
    missing: list[str] = []
    claim_numbers = dict.fromkeys(_DIGITS.findall(claim))
    if claim_numbers:  # the typed check compared most numbers already: often none is left
        written = set(_DIGITS.findall(evidence))
        unwritten = [digits for digits in claim_numbers if digits not in written]  # as written: the same value
        if unwritten:
            evidence_numbers = {_number(match) for match in written}
            missing += [f"number {digits}" for digits in unwritten if _number(digits) not in evidence_numbers]
    identifiers = [token for token in critical_tokens(claim, mixed_case_words(claim_text)) if _identifier(token)]
    identifiers += [word for word in _HYPHENATED.findall(claim) if not any(map(str.isdigit, word))]
    names = [name for name in dict.fromkeys(normalize(s) for s in services if s) if name in claim]
    # Most names are in the evidence as whole tokens: its pieces (`_tokens`) are read only for one that is not.
    whole = set(TOKEN.findall(evidence)) if identifiers or names else set()
    looked_up = [name for name in (*identifiers, *names) if name not in whole or name != name.rstrip("._:/+-")]
    evidence_tokens = _tokens(whole) if looked_up else whole
    for token in dict.fromkeys(identifiers):
        if token in evidence_tokens or token in accepted or _inflected(token, evidence_tokens):
            continue
        if "-" in token and not any(c in token for c in "_.:/") and not is_session_entity(token):
            continue  # a hyphenated word the session's evidence never uses is prose ("read-only")
        missing.append(f"identifier {token}")
    for name in names:
        if name in accepted or name in evidence_tokens or f"identifier {name}" in missing:
            continue
        if re.search(rf"(?<![a-z0-9_.-]){re.escape(name)}(?![a-z0-9_]|-[a-z0-9])", claim):
            missing.append(f"service {name}")  # "payment-service has …" bound to order-service's alert
    if negated(claim) and not negated(evidence):
        missing.append("negation")
    dropped = _negation_dropped(claim, evidence)
    if dropped:
        missing.append(f"negation before '{dropped}'")
    stitched = _stitched(claim, excerpts, accepted | set(names))
    if stitched:
        missing.append(stitched)
    return missing


_ADDRESS = re.compile(r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d])")
_CLAUSE_END = re.compile(r"[;；。]|\.\s|\n")
_WORD_TOKEN = re.compile(r"[a-z0-9][a-z0-9_-]*")


def _stitched(claim: str, excerpts: Iterable[str], subjects: set[str] | frozenset[str] = frozenset()) -> str:
    """A clause that tells of one address what a line about another address says ("Accepted publickey for
    deploy from 203.0.113.45" cited to a login from 10.0.0.12 and a failure from 203.0.113.45): a word of a
    clause with an address must not come only from excerpts about other addresses. Words of excerpts that
    name no address (an alert, a count) may join it; `subjects` (services) are the claim's own words."""
    excerpts = list(excerpts)
    if len(excerpts) < 2 or _ADDRESS.search(claim) is None:
        return ""
    excerpts = [comparable(excerpt) for excerpt in excerpts]
    for clause in _CLAUSE_END.split(claim):
        addresses = set(_ADDRESS.findall(clause))
        if not addresses:
            continue
        near: set[str] = set()
        far: set[str] = set()
        for excerpt in excerpts:
            found = set(_ADDRESS.findall(excerpt))
            held = set(_WORD_TOKEN.findall(excerpt))
            if found & addresses or not found:
                near |= held
            else:
                far |= held  # a line about other addresses only
        words = [w for w in _WORD_TOKEN.findall(_ADDRESS.sub(" ", clause)) if w not in STOP_WORDS and len(w) > 2]
        moved = [w for w in dict.fromkeys(words) if w in far and w not in near and w not in subjects]
        if moved:
            return f"'{' '.join(moved[:3])}' from a line about another address than {', '.join(sorted(addresses))}"
    return ""


def _inflected(token: str, evidence_tokens: set[str]) -> bool:
    """ "OOMKill" for OOMKilled, "timeouts" for timeout: the same name with an English ending."""
    return any(token + ending in evidence_tokens for ending in _INFLECTIONS) or any(
        token.endswith(ending) and token[: -len(ending)] in evidence_tokens for ending in _INFLECTIONS
    )


_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def _negation_dropped(claim: str, evidence: str) -> str:
    """A word pair of the claim that the evidence writes only with a negation between them ("is available"
    for "is not available"): the claim quotes the evidence with its negation taken out."""
    if not has_negation(evidence):
        return ""
    words = _WORD.findall(evidence)
    # is_negation of such a word (ASCII letters and digits, no quote at either end); without "n't" in the
    # evidence only a negation word is one
    if "n't" in evidence:
        negative = [word in NEGATION_WORDS or word.endswith("n't") for word in words]
    else:
        negative = list(map(NEGATION_WORDS.__contains__, words))
    closed = {
        f"{words[index - 1]} {words[index + 1]}"
        for index in compress(range(len(words)), negative)
        if 0 < index < len(words) - 1 and not negative[index - 1]
    }
    if not closed:
        return ""
    said = _WORD.findall(claim)
    quoted = [(pair, b) for a, b in zip(said, said[1:], strict=False) if (pair := f"{a} {b}") in closed]
    if not quoted:
        return ""
    written = {f"{a} {b}" for a, b in zip(words, words[1:], strict=False)}
    return next((b for pair, b in quoted if pair not in written), "")


_LETTER = re.compile(r"[a-z]")
_NUMBER_WITH_UNIT = re.compile(r"\d+(?:\.\d+)?[a-z%µ]{1,3}")


def _identifier(token: str) -> bool:
    """Not a pure number (numbers are compared by value) and not dotted letters such as e.g."""
    if not _LETTER.search(token):
        return False
    if _NUMBER_WITH_UNIT.fullmatch(token):
        return False  # 25m, 3.8gb: a number with its unit
    return any(len(piece) >= 2 for piece in _PIECE.findall(token))
