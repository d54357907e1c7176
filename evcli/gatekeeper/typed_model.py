"""The data of the typed-facts check (evcli.gatekeeper.typed states its rules): an evidence item's typed
values, the facts a claim states, the cited items and the record of comparing them.

Shared by the engine (evcli.gatekeeper.typed) and the checks it runs for subjects, call pairs, names
and ranks (evcli.gatekeeper.subjects, evcli.gatekeeper.siblings); plain tuples and dataclasses, no rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple


class Value(NamedTuple):
    """One typed value of an evidence item: a field, or a number or time inside a text field."""

    path: str
    kind: str  # number | time | state | status | direction | subject | name
    value: Any
    shown: str
    dim: str = ""
    factor: float = 1.0
    roles: frozenset[str] = frozenset()
    name: str = ""  # a count map's key (by_service.checkout: checkout): the thing the number counts


class Number(NamedTuple):
    """A number a text states, with its unit."""

    start: int
    end: int
    text: str
    value: float  # in the written unit, multiplier applied
    decimals: int
    scale: float  # the multiplier written ("k"): precision is judged before it
    dim: str
    factor: float
    negative: bool


class Stated(NamedTuple):
    """One fact a claim states: a number, time, state, direction or rank, with the role word tied to it."""

    kind: str
    text: str
    start: int
    end: int
    value: Any
    role: str | None = None
    approximate: bool = False
    sign_free: bool = False
    number: Number | None = None
    bound: str | None = None  # "above" or "below": the claim states a bound, not the value


class Fact(NamedTuple):
    """One stated fact compared with the field it was matched to (`field` empty: nothing to compare)."""

    claim: str
    field: str
    evidence: str
    ok: bool
    binding_index: int | None = None


@dataclass
class ClaimCheck:
    facts: list[Fact] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    consumed: list[tuple[int, int]] = field(default_factory=list)  # spans of the claim the check read

    def disagree(self, said: str, value: Value | None, index: int | None, problem: str) -> None:
        """A stated fact that does not match: the field it was matched to (None: no field states it)."""
        field_path, shown = (value.path, value.shown) if value is not None else ("", "")
        self.record(said, field_path, shown, False, index, problem)

    def record(self, said: str, field: str, shown: str, ok: bool, index: int | None, problem: str = "") -> None:
        """A stated fact compared with a field; `problem` is what a mismatch says."""
        self.facts.append(Fact(said, field, shown, ok, index))
        if not ok:
            self.problems.append(problem)


@dataclass(frozen=True)
class Cited:
    """One cited item: its binding's index in the claim, its raw path and its typed values."""

    binding_index: int
    raw_path: str  # the item's path
    values: list[Value]
    siblings: list[Any] = field(default_factory=list)  # the array the item belongs to (for ranks)
    field: str = ""  # the one field the binding names ($.alerts[0].value), if it names one
    item: Any = None  # the item itself (a dict of the recorded output, or the ref's text)

    def in_field(self, value: Value) -> bool:
        """Whether `value` is (inside) the field the binding names."""
        return bool(self.field) and within(value.path, self.field)


def within(path: str, field: str) -> bool:
    """Whether `path` is the field `field` or a part of it."""
    return path == field or path.startswith((field + ".", field + "["))
