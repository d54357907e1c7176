"""A binding's `raw_path`: one evidence item (`$.alerts[0]`, `$.stats`), optionally one field inside it
(`$.alerts[0].value`, `$.series[1].max`, `$.stats.by_level.ERROR`, `$.stats.by_source['app.log']`).

The grammar is an exact subset of JSONPath (a test resolves every form against jsonpath-ng): a root
`$`, then `.name` members and `[i]` indexes, and `['key']` for a member whose name is not a plain
word. No wildcard, slice, filter or recursive descent: a path names one value or nothing. The item a
path lies in is what the tool's evidence refs name; the field is read from the recorded output.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_INDEX = r"\[(?:0|[1-9][0-9]*)\]"
_MEMBER = r"\.[A-Za-z_][A-Za-z0-9_-]*"
_QUOTED = r"\['[^'\\\[\]]+'\]"
FIELD = rf"(?:{_MEMBER}|{_INDEX}|{_QUOTED})*"  # what may follow an item path
_ITEM = re.compile(rf"(\$\.[A-Za-z_][A-Za-z0-9_]*(?:{_INDEX})?)({FIELD})")
_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\[(0|[1-9][0-9]*)\]|\['([^'\\\[\]]+)'\]")
_MISSING = object()


@lru_cache(maxsize=4096)  # a session cites the same paths of many calls ($.logs[0]); a hostile one cannot grow it
def split(raw_path: str) -> tuple[str, str]:
    """(the item path, the field path after it); ("", "") for what is not a path of this grammar."""
    match = _ITEM.fullmatch(raw_path or "")
    return (match.group(1), match.group(2)) if match else ("", "")


def item_path(raw_path: str) -> str:
    """The item a path lies in (the path itself when it names an item, or is no path at all)."""
    item, _ = split(raw_path)
    return item or raw_path


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def member(path: str, name: str) -> str:
    """The path of member `name` of the value at `path`, written as `canonical` writes it."""
    return f"{path}{_written(name)}"


@lru_cache(maxsize=4096)  # a field name repeats in every item; a hostile output cannot grow it
def _written(name: str) -> str:
    return f".{name}" if _WORD.fullmatch(name) else f"['{name}']"


def canonical(field: str) -> str:
    """A field path written one way: `.name` for a plain word, `['key']` otherwise."""
    written = ""
    for name, index, quoted in _SEGMENT.findall(field):
        written = f"{written}[{index}]" if index else member(written, name or quoted)
    return written


def resolve(node: Any, field: str) -> tuple[bool, Any]:
    """(found, value) of `field` (as `split` returns it) inside `node`."""
    for member, index, quoted in _SEGMENT.findall(field):
        if index:
            position = int(index)
            node = node[position] if isinstance(node, list) and position < len(node) else _MISSING
        else:
            node = node.get(member or quoted, _MISSING) if isinstance(node, dict) else _MISSING
        if node is _MISSING:
            return False, None
    return True, node
