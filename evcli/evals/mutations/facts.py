"""Typed-fact mutations (issue 22): claims whose citations are real but whose words say something else.

Each hostile class edits one claim the way a careless or adversarial writer would — a unit, an extreme,
an alert state, a direction, a level's count, a time, a cause stated as seen, a look-alike letter, an
invisible character — keeping every citation as it was; each benign class makes an honest paraphrase a
faithful writer makes (739 ms for 0.739 s, 1,200, 09:11:23 for 09:11:23.231, "about 99%", "not yet
firing", "p99 latency", "25 minutes", "184 thousand", "a peak of 92%", "2026-07-08 22:49", "(UTC+8)",
"over 180000") that must still pass. What to edit is read from the claim's own stated facts and
its cited items' typed fields (evcli.gatekeeper.typed), never from a list of known claims.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from typing import Any

from evcli.contracts import Claim, SessionDocument
from evcli.evals.mutations.base import Case, Output
from evcli.gatekeeper import typed, typed_model
from evcli.gatekeeper.checks import cited_items


def _observations(
    document: SessionDocument, output: Output
) -> Iterator[tuple[int, dict[str, Any], Claim, list[typed_model.Cited]]]:
    """Each observation claim that parses (index, as written, parsed) with its cited items."""
    invocations = {invocation.invocation_id: invocation for invocation in document.invocations}
    for index, raw in enumerate(output.get("claims") or []):
        if raw.get("claim_type") != "observation":
            continue
        try:
            claim = Claim.model_validate(raw)
        except ValueError:
            continue
        yield index, raw, claim, cited_items(claim.evidence_bindings, invocations)


def _claims(
    document: SessionDocument, output: Output
) -> Iterator[tuple[int, dict[str, Any], list[typed_model.Stated], list[typed_model.Value]]]:
    """Each observation claim with its stated facts and its cited items' typed values."""
    for index, raw, claim, cited in _observations(document, output):
        values = [value for item in cited for value in item.values]
        yield index, raw, typed.stated_facts(claim.claim_text), values


def _with_text(output: Output, index: int, text: str) -> Output:
    mutated = copy.deepcopy(output)
    mutated["claims"][index]["claim_text"] = text
    return mutated


def _replace(text: str, fact: typed_model.Stated, new: str) -> str:
    """The claim with one stated fact rewritten."""
    return _spliced_text(text, (fact.start, fact.end), new)


def _spliced_text(text: str, span: tuple[int, int], new: str) -> str:
    """The claim with a span of its `plain` text replaced: in the claim's own characters (a Chinese claim
    keeps its ，and ：) when NFKC kept every offset, else in the NFKC text the span was found in."""
    plain = typed.plain(text)
    kept = text if len(plain) == len(text) else plain
    return kept[: span[0]] + new + kept[span[1] :]


def _matched(fact: typed_model.Stated, values: list[typed_model.Value]) -> typed_model.Value | None:
    """The number field of the cited items the stated number agrees with."""
    for value in values:
        if value.kind == "number" and fact.number is not None and typed.close(fact, value):
            return value
    return None


def _format(number: float) -> str:
    return f"{number:.6f}".rstrip("0").rstrip(".")


_OTHER_UNIT = {"s": "ms", "ms": "s", "m": "h", "min": "h", "GB": "MB", "MB": "GB", "G": "M", "M": "G", "KB": "MB"}


# Where a claim starts quoting its source ("auth logged at <time>: Accepted ... port 45660").
_QUOTATION = re.compile(r"(?:logged|记录了).*?(?::(?!\d)|：)")


def _quantities(text: str, stated: list[typed_model.Stated], own_words: bool = False) -> Iterator[typed_model.Stated]:
    """The stated facts but a number inside a name or a path ("HTTP/1.1", "/data/2/dfs"); with `own_words`,
    none from a quoted log line either (a port or a size there is the source's, not to be rounded)."""
    plain = typed.plain(text)
    quoted = _QUOTATION.search(plain)
    end = quoted.end() if own_words and quoted else len(plain)
    return (fact for fact in stated if fact.start < end and not (fact.start and plain[fact.start - 1] == "/"))


_CJK = re.compile(r"[\u4e00-\u9fff]")


def _language(text: str) -> str:
    return "zh" if _CJK.search(text) else "en"


def _unit_of(fact: typed_model.Stated) -> tuple[str, str]:
    """The number as written and its unit suffix ("0.739", "s")."""
    match = re.fullmatch(r"([-−]?[\d,]+(?:\.\d+)?)\s?(\S*)", fact.text)
    return (match.group(1), match.group(2)) if match else (fact.text, "")


# --- hostile -----------------------------------------------------------------------------------------

Rewrite = Callable[[typed_model.Stated, list[typed_model.Value]], "str | None"]


def _first_rewritten(
    document, output, rewrite: Rewrite, language: str | None = None, own_words: bool = False, alone: bool = False
) -> Iterator[Case]:
    """Each observation claim (of `language`, if given) with the first of its stated facts (`_quantities`)
    that `rewrite` gives new words for; `alone`: only a number standing as a word of its own (the 50010 of
    10.40.7.7:50010 is part of an address: written 50,010 it is no honest variant)."""
    for index, raw, stated, values in _claims(document, output):
        if language is not None and _language(raw["claim_text"]) != language:
            continue
        plain = typed.plain(raw["claim_text"])
        for fact in _quantities(raw["claim_text"], stated, own_words):
            if alone and re.match(r"[A-Za-z0-9_:/.-]", plain[fact.start - 1 : fact.start] or " "):
                continue
            new = rewrite(fact, values)
            if new is not None:
                text = _replace(raw["claim_text"], fact, new)
                yield Case(f"{raw['claim_id']}: {fact.text} -> {new}", _with_text(output, index, text))
                break


def fact_unit_changed(document, output):
    """0.739 s written as 0.739 ms, 3.8GB as 3.8MB, 17m as 17h."""

    def rewrite(fact, values):
        digits, unit = _unit_of(fact)
        if fact.kind == "number" and unit in _OTHER_UNIT and _matched(fact, values):
            return f"{digits}{_OTHER_UNIT[unit]}"
        return None

    return _first_rewritten(document, output, rewrite)


def fact_role_value_swapped(document, output):
    """ "max=99.4%" written with the minimum's value: a real number of the item under the wrong field."""

    def rewrite(fact, values):
        if fact.kind != "number" or not fact.role:
            return None
        own = [v for v in values if v.kind == "number" and fact.role in v.roles]
        others = [
            v
            for v in values
            if v.kind == "number"
            and v.roles
            and fact.role not in v.roles
            and v.dim == (own[0].dim if own else "")
            and not any(o.value == v.value for o in own)
        ]
        return _format(others[0].value) + _unit_of(fact)[1] if own and others else None

    return _first_rewritten(document, output, rewrite)


_OTHER_STATE = {"firing": "resolved", "pending": "firing", "resolved": "still firing"}


def fact_state_swapped(document, output):
    """A resolved alert called still firing, a pending one firing, a firing one resolved."""

    def rewrite(fact, values):
        recorded = any(v.kind == "state" for v in values)
        return _OTHER_STATE[fact.value] if fact.kind == "state" and recorded else None

    return _first_rewritten(document, output, rewrite)


_FLIPPED = {"up": "fell", "down": "rose"}


def fact_direction_flipped(document, output):
    """ "rose" citing a quantity that only fell, and the other way round."""

    def rewrite(fact, values):
        went = {v.value for v in values if v.kind == "direction"}
        return _FLIPPED[fact.value] if fact.kind == "direction" and went == {fact.value} else None

    return _first_rewritten(document, output, rewrite)


def fact_counts_swapped(document, output):
    """Two counts of different fields swapped ("ERROR 23, WARN 15" as "ERROR 15, WARN 23")."""
    for index, raw, stated, _values in _claims(document, output):
        numbers = [f for f in stated if f.kind == "number" and f.role and f.number and not f.number.dim]
        for first, second in zip(numbers, numbers[1:], strict=False):
            if first.role != second.role and first.value != second.value:
                text = raw["claim_text"]
                plain = typed.plain(text)
                swapped = (
                    plain[: first.start]
                    + second.text
                    + plain[first.end : second.start]
                    + first.text
                    + plain[second.end :]
                )
                yield Case(f"{raw['claim_id']}: {first.text} <-> {second.text}", _with_text(output, index, swapped))
                break


def fact_time_shifted(document, output):
    """A time seven minutes off what the item recorded."""

    def rewrite(fact, values):
        if fact.kind != "time" or fact.value.hour is None or not any(v.kind == "time" for v in values):
            return None
        shifted = f"{fact.value.hour}:{(fact.value.minute + 7) % 60:02d}"
        return re.sub(r"\d{1,2}:\d{2}", shifted, fact.text, count=1)

    return _first_rewritten(document, output, rewrite)


def claim_cause_asserted(document, output):
    """A cause or an instruction stated as if observed."""
    for index, raw, _stated, _values in _claims(document, output):
        for prefix in ("Root cause confirmed: ", "根因已确认："):
            yield Case(f"{raw['claim_id']}: {prefix.strip()}", _with_text(output, index, prefix + raw["claim_text"]))
        yield Case(
            f"{raw['claim_id']}: an instruction appended",
            _with_text(output, index, raw["claim_text"].rstrip(".") + "; you should restart the service."),
        )
        return


_LOOKALIKES = {"i": "ı", "o": "օ", "a": "ɑ", "e": "е"}


def claim_lookalike_skeleton(document, output):
    """A name written with a dotless ı, an Armenian օ, a Latin ɑ or a Cyrillic е."""
    for index, raw, _stated, _values in _claims(document, output):
        text = raw["claim_text"]
        for plain, lookalike in _LOOKALIKES.items():
            match = re.search(rf"\b[a-z]*{plain}[a-z-]*\b", text)
            if match:
                word = match.group(0)
                spoofed = text.replace(word, word.replace(plain, lookalike, 1), 1)
                yield Case(f"{raw['claim_id']}: {word} with {lookalike!r}", _with_text(output, index, spoofed))
        return


def claim_hidden_filler(document, output):
    """An invisible Hangul filler (U+115F) or a soft hyphen inside a word."""
    for index, raw, _stated, _values in _claims(document, output):
        text = raw["claim_text"]
        for filler in ("\u115f", "\u00ad", "\u3164"):
            middle = len(text) // 2
            yield Case(
                f"{raw['claim_id']}: U+{ord(filler):04X}",
                _with_text(output, index, text[:middle] + filler + text[middle:]),
            )
        return


# --- honest paraphrases -----------------------------------------------------------------------------------


_CONVERTED = {"s": ("ms", 1000.0), "ms": ("s", 0.001), "GB": ("MB", 1000.0), "MB": ("GB", 0.001), "m": ("min", 1.0)}


def benign_unit_converted(document, output):
    """0.739 s written as 739 ms, 3.8GB as 3800 MB."""

    def rewrite(fact, values):
        digits, unit = _unit_of(fact)
        if fact.kind != "number" or unit not in _CONVERTED or not _matched(fact, values):
            return None
        new_unit, factor = _CONVERTED[unit]
        return f"{_format(round(float(digits.replace(',', '')) * factor, 6))} {new_unit}"

    return _first_rewritten(document, output, rewrite)


def benign_thousands_separator(document, output):
    """1200 written 1,200."""

    def rewrite(fact, values):
        digits, unit = _unit_of(fact)
        if fact.kind == "number" and re.fullmatch(r"\d{4,}", digits) and _matched(fact, values):
            return f"{int(digits):,}{unit}"
        return None

    return _first_rewritten(document, output, rewrite, alone=True)


def benign_time_truncated(document, output):
    """09:11:23.231 written 09:11:23."""

    def rewrite(fact, values):
        if fact.kind != "time" or not fact.value.fraction:
            return None
        return re.sub(r"(Z|[+-]\d{2}:?\d{2})$", "", re.sub(r"[.,]\d+", "", fact.text, count=1))

    return _first_rewritten(document, output, rewrite)


def benign_rounded_about(document, output):
    """99.4% written "about 99%"."""

    def rewrite(fact, values):
        digits, unit = _unit_of(fact)
        if fact.kind == "number" and "." in digits and not fact.role and _matched(fact, values):
            return f"about {round(float(digits.replace(',', '')))}{unit}"
        return None

    return _first_rewritten(document, output, rewrite)


def benign_snake_case_spelled(document, output):
    """`p99_latency` written "p99 latency"."""
    for index, raw, _stated, _values in _claims(document, output):
        match = re.search(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b", raw["claim_text"])
        if match:
            spelled = raw["claim_text"].replace(match.group(0), match.group(0).replace("_", " "), 1)
            yield Case(f"{raw['claim_id']}: {match.group(0)} spelled out", _with_text(output, index, spelled))
