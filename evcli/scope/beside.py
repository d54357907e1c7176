"""Names written beside a cue word: "service payments", "payments service", "host db-2.prod", "status 304",
"logged in as deploy". One reader for every kind of name: which side of its cue a name stands on and the
shape it has are one row of BESIDE, keyed by the cue group of the question grammar
(evcli/scope/grammar/<language>.toml). The cue words are a language's; the shapes are language-neutral.

Invariants:
  - a name is read only where whitespace alone stands between it and its cue (a row's shape may let a quote
    open it: 'as "deploy"');
  - every hit of the group is read, in the grammar's order (by start, longest first), also one that no
    name of the row's shape stands beside (`Beside.name` None): a caller choosing among overlapping cues
    sees them all;
  - `span` is what was read, cue and name together; `end` its end (a shape may read past its name: 304s).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Literal, NamedTuple

from evcli.scope.grammar import hits
from evcli.scope.match import RIGHT


@dataclass(frozen=True)
class Shape:
    """Where a name stands (`after` or `before` its cue) and its regex, whose group `name` is the name."""

    side: Literal["after", "before"]
    pattern: str
    flags: int = 0


_WHOLE_LEFT, _WHOLE_RIGHT = r"(?<![\w-])", r"(?![\w-])"  # never a part of a longer hyphenated name
BESIDE: dict[str, Shape] = {
    "entity.service_before": Shape("after", rf"(?P<name>[A-Za-z][\w-]*[A-Za-z0-9]){_WHOLE_RIGHT}"),  # service X
    "entity.service_after": Shape("before", rf"{_WHOLE_LEFT}(?P<name>[a-z][\w-]*[a-z0-9])"),  # X service
    "entity.host_before": Shape("after", rf"(?P<name>[a-z][\w-]*[\d.-][\w.-]*[a-z0-9]){RIGHT}"),  # host db-2.prod
    "token.status_cue": Shape("after", r"(?P<name>[1-3]\d\d)s?(?![\w.:/-])", re.IGNORECASE),  # got 304
    "token.user_cue": Shape("after", r"['\"]?(?P<name>[a-z_][a-z0-9_.-]{0,31})", re.IGNORECASE),  # as deploy
}


class Beside(NamedTuple):
    """One hit of a cue group and the name beside it (None: no name of the row's shape stands there)."""

    cue: tuple[int, int]
    name: tuple[int, int] | None
    span: tuple[int, int]  # cue and name together (the cue alone without a name)

    @property
    def end(self) -> int:
        return self.span[1]


def beside(question: str, group: str) -> Iterator[Beside]:
    """Every hit of `group` in the question with the name its BESIDE row reads beside it."""
    shape, pattern = BESIDE[group], _compiled(group)
    for hit in hits(question, group):
        cue = (hit.start, hit.end)
        if shape.side == "after":
            found = pattern.match(question, hit.end)
            span = (hit.start, found.end()) if found is not None else cue
        else:
            found = pattern.search(question, 0, hit.start)
            span = (found.start(), hit.end) if found is not None else cue
        yield Beside(cue, found.span("name") if found is not None else None, span)


def names_beside(question: str, group: str) -> Iterator[tuple[tuple[int, int], tuple[int, int]]]:
    """(what was read, the name) for each hit of `group` a name stands beside."""
    for found in beside(question, group):
        if found.name is not None:
            yield found.span, found.name


@cache
def _compiled(group: str) -> re.Pattern[str]:
    """A row's regex with the whitespace between cue and name: after the cue from its end, before it up to its start."""
    shape = BESIDE[group]
    written = rf"\s+{shape.pattern}" if shape.side == "after" else rf"{shape.pattern}\s+$"
    return re.compile(written, shape.flags)
