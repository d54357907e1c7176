"""Whom a claim speaks of: the service it names as its subject, and the calls it states between services.

The subject is the service of one of the cited items: the one the claim names before an attribution word
("shop-api logged …": the line it quotes may name others first), else the first one it names.

Calls: "checkout calls payment", "checkout → payment", "payment is called by checkout" against the pairs a
claim's cited items record in two fields (facts.toml [pairs.*]: a call edge's caller and callee).

A claim states a pair as two names joined by nothing but a forward word (the caller first) or a backward word
(the callee first); names are the environment's services and the values the pair's fields hold across the
cited item's array. A stated pair must be a cited item's in its direction: one that an item records the other
way round, or with another name at one end, fails naming that end's field ("claim says caller payment;
$.edges[0].caller is checkout"). A pair no cited item shares an end with is another call the claim tells of
(a chain around its cited call), not compared here. Items without both fields are never read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

from evcli.gatekeeper import paths
from evcli.gatekeeper.wordtables import facts_file, skip_spaces, tables

if TYPE_CHECKING:
    from evcli.gatekeeper.typed_model import Cited, ClaimCheck, Value

__all__ = ["check_pairs", "check_subject", "service_pattern", "stated"]


class _Pair(NamedTuple):
    source: str  # the field naming the first end (caller)
    target: str  # the field naming the second end (callee)
    forward: frozenset[str]  # joins with the source first
    backward: frozenset[str]  # joins with the target first


@cache
def _pairs() -> tuple[_Pair, ...]:
    data = facts_file()["pairs"]
    return tuple(
        _Pair(spec["from"], spec["to"], frozenset(spec["forward"]), frozenset(spec["backward"]))
        for spec in data.values()
    )


@cache
def service_pattern(services: tuple[str, ...]) -> re.Pattern[str]:
    """Any of the names as a whole name (not inside an instance id such as order-service-5c8d7f9b, nor a path
    or an image such as shop/checkout:1.4.2), casefolded, longest first; group 1 is the name."""
    names = sorted({s.casefold() for s in services if s}, key=len, reverse=True)
    if not names:
        return re.compile(r"(?!)")
    return re.compile(r"(?<![\w./-])(" + "|".join(map(re.escape, names)) + r")(?![\w]|-\w)")


def check_subject(lowered: str, values: list[tuple[int, Value]], services: Iterable[str], result: ClaimCheck) -> None:
    """The service the claim (casefolded) speaks of is the service of one of its cited items (`values`)."""
    if not any(v.kind == "subject" for _, v in values):
        return
    named = list(service_pattern(tuple(services)).finditer(lowered))
    if not named:
        return
    attribution = tables().attribution
    attributed = [m for m in named if attribution.starting(lowered, skip_spaces(lowered, m.end())) is not None]
    first = (attributed or named)[0].group(1)
    index, value = next(((i, v) for i, v in values if v.kind == "subject" and v.value == first), (None, None))
    if value is not None:
        result.record(first, value.path, value.shown, True, index)
        return
    index, value = next((i, v) for i, v in values if v.kind == "subject")
    result.record(
        first, value.path, value.shown, False, index, f"claim speaks of {first}; {value.path} is {value.shown}"
    )


_SPACES = re.compile(r"\s+")


def _stated(lowered: str, names: tuple[str, ...], pair: _Pair) -> Iterator[tuple[str, str]]:
    """(first end, second end) of each pair the claim states, in its order."""
    found = list(service_pattern(names).finditer(lowered))
    for before, after in zip(found, found[1:], strict=False):
        join = _SPACES.sub(" ", lowered[before.end() : after.start()].replace("’", "'")).strip(" ,;:()")
        if join in pair.forward:
            yield before.group(1), after.group(1)
        elif join in pair.backward:
            yield after.group(1), before.group(1)


def stated(lowered: str, names: Iterable[str]) -> list[tuple[str, str]]:
    """Every pair the claim (casefolded) states between `names`: (first end, second end), in its order."""
    return [found for pair in _pairs() for found in _stated(lowered, tuple(sorted(set(names))), pair)]


def check_pairs(lowered: str, cited: list[Cited], services: Iterable[str], result: ClaimCheck) -> None:
    """Each pair the claim (casefolded) states against the pairs its cited items record."""
    for pair in _pairs():
        recorded = [c for c in cited if isinstance(c.item, dict) and pair.source in c.item and pair.target in c.item]
        if not recorded:
            continue
        names = set(services)
        for item in (item for c in recorded for item in (c.item, *c.siblings) if isinstance(item, dict)):
            names.update(str(item.get(field) or "") for field in (pair.source, pair.target))
        for first, second in dict.fromkeys(_stated(lowered, tuple(sorted(names)), pair)):
            _compare(first, second, recorded, pair, result)


def _compare(first: str, second: str, recorded: list[Cited], pair: _Pair, result: ClaimCheck) -> None:
    """One stated pair: a cited item's in its direction, else the end it got wrong of an item sharing the other
    end (or recording the pair the other way round)."""
    said = f"{first} → {second}"
    ends = [(cited, _end(cited.item, pair.source), _end(cited.item, pair.target)) for cited in recorded]
    for cited, source, target in ends:
        if (source, target) == (first, second):
            result.record(said, cited.raw_path, said, True, cited.binding_index)
            return
    for cited, source, target in ends:
        if target == second or (source, target) == (second, first):
            _wrong(said, cited, pair.source, first, result)
            return
    for cited, source, _target in ends:
        if source == first:
            _wrong(said, cited, pair.target, second, result)
            return


def _end(item: dict[str, Any], field: str) -> str:
    return str(item.get(field) or "").casefold()


def _wrong(said: str, cited: Cited, field: str, claimed: str, result: ClaimCheck) -> None:
    path, recorded = paths.member(cited.raw_path, field), str(cited.item.get(field))
    result.record(
        said, path, recorded, False, cited.binding_index, f"claim says {field} {claimed}; {path} is {recorded}"
    )
