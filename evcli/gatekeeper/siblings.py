"""What a claim states of a cited item among the items of its array: a superlative ("the slowest call", "the most
frequent pattern") and a name the array's items hold in one field (a span's operation).

A superlative holds when one of the claim's cited items is the top (or bottom) of its array by the first of the
rank's fields it holds (facts.toml [rank.*]: a pattern's count, an edge's calls; an edge's p99, a span's
duration); an array with one item, or whose items do not all hold that field, shows no rank and is not compared,
and a superlative within a part of the array (a service's own calls, a chain: a row without fields) never is. A
name an item of the array holds in a [names] field (another span's operation) must be a cited item's own.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Any

from evcli.gatekeeper import paths
from evcli.gatekeeper.wordtables import facts_file, tables

if TYPE_CHECKING:
    from evcli.gatekeeper.typed_model import Cited, ClaimCheck, Stated, Value

__all__ = ["check_names", "check_rank"]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _ranked(cited: Cited, rank: str) -> tuple[Value, str, float] | None:
    """(the item's value of the field `rank` compares, that field, the array's extreme of it), or None when the
    item holds none of the rank's fields or its array shows no rank."""
    fields = {paths.member(cited.raw_path, name): name for name in tables().rank_fields.get(rank, ())}
    own = next((v for v in cited.values if v.kind == "number" and v.path in fields), None)
    if own is None:
        return None
    key = fields[own.path]
    numbers = [s[key] for s in cited.siblings if isinstance(s, dict) and _number(s.get(key))]
    if len(numbers) < 2 or len(numbers) < len(cited.siblings):
        return None
    return own, key, max(numbers) if tables().rank_extreme[rank] == "max" else min(numbers)


def check_rank(fact: Stated, values: list[tuple[int, Value]], cited: list[Cited], result: ClaimCheck) -> None:
    """ "the slowest call": one of the cited items is its array's extreme by the rank's field."""
    ranked = [(c, found) for c in cited if (found := _ranked(c, fact.value)) is not None]
    if not ranked:
        return
    top = next(((c, found) for c, found in ranked if found[0].value == found[2]), None)
    item, (own, key, best) = top or ranked[0]
    problem = f"claim says {fact.text}; {own.path} is {own.shown}, another item's {key} is {best:g}"
    result.record(fact.text, own.path, own.shown, top is not None, item.binding_index, problem)


@cache
def _name_fields() -> tuple[str, ...]:
    data = facts_file()
    return tuple(data["names"]["fields"])


@cache
def _name_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    """Any of the names (casefolded, longest first) not inside a longer word or path; group 1 is the name."""
    ordered = sorted(names, key=len, reverse=True)
    return re.compile(r"(?<![\w/-])(" + "|".join(map(re.escape, ordered)) + r")(?![\w/-])")


def check_names(lowered: str, cited: list[Cited], result: ClaimCheck) -> None:
    """Each name the claim (casefolded) writes that an item of a cited item's array holds in a [names] field is
    a cited item's own ("payment's charge span", not another span's POST /checkout)."""
    for field in _name_fields():
        held = [c for c in cited if isinstance(c.item, dict) and isinstance(c.item.get(field), str)]
        if not held:
            continue
        spelled = {
            name.casefold(): name
            for c in held
            for item in (*c.siblings, c.item)
            if isinstance(item, dict) and isinstance(name := item.get(field), str) and name
        }
        for said in dict.fromkeys(m.group(1) for m in _name_pattern(tuple(sorted(spelled))).finditer(lowered)):
            own = next((c for c in held if c.item[field].casefold() == said), None)
            cited_one = own or held[0]
            path = paths.member(cited_one.raw_path, field)
            recorded = cited_one.item[field]
            problem = f"claim says {field} {spelled[said]}; {path} is {recorded}"
            result.record(spelled[said], path, recorded, own is not None, cited_one.binding_index, problem)
