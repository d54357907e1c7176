"""Front matter of a knowledge document, parsed without a YAML library.

The subset runbooks use: a `---` block at the very top of the file with one
`key: value` per line. A value is a `[a, "b, c"]` list, a `'single'` or
`"double"` quoted string, or a bare string (a ` # comment` after it is dropped,
as in YAML); a key with no value followed by `- item` lines is a list. Lines
that fit none of these are skipped rather than failing the document: a cache of
runbooks should index what it can.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = "---"
_CLOSERS = ("---", "...")
_KEY_LINE = re.compile(r"^([A-Za-z_][\w-]*)\s*:(?:\s+(.*))?$")
_LIST_ITEM = re.compile(r"^\s*-\s+(.*)$")


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, body). Without a complete `---` block: ({}, text)."""
    lines = text.lstrip("\ufeff").split("\n")
    if not lines or lines[0].rstrip() != _FENCE:
        return {}, text
    for end, line in enumerate(lines[1:], start=1):
        if line.rstrip() in _CLOSERS:
            return parse_front_matter(lines[1:end]), "\n".join(lines[end + 1 :])
    return {}, text


def parse_front_matter(lines: list[str]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    list_key: str | None = None  # the key whose `- item` lines may follow
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        item = _LIST_ITEM.match(line)
        if item and list_key is not None:
            data[list_key].append(_scalar(item.group(1)))
            continue
        field = _KEY_LINE.match(stripped)
        if not field:
            list_key = None
            continue
        key, raw = field.group(1), (field.group(2) or "").strip()
        if raw:
            data[key] = parse_value(raw)
            list_key = None
        else:
            data[key] = []
            list_key = key
    # A key with neither a value nor items is an empty string, not an empty list.
    return {key: "" if value == [] else value for key, value in data.items()}


def parse_value(raw: str) -> str | list[str]:
    raw = raw.strip()
    if raw.startswith("[") and raw.endswith("]"):
        return [_scalar(part) for part in _split_list(raw[1:-1]) if part.strip()]
    return _scalar(raw)


def as_list(value: Any) -> list[str]:
    """A front matter value as a list of non-empty strings (`a, b` counts as two)."""
    if isinstance(value, list):
        items = value
    elif value in (None, ""):
        items = []
    else:
        items = str(value).split(",")
    return [str(item).strip() for item in items if str(item).strip()]


def _scalar(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        try:
            return str(json.loads(raw))  # handles \" and \\ as YAML does
        except json.JSONDecodeError:
            return raw[1:-1]
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1].replace("''", "'")
    return re.sub(r"\s+#.*$", "", raw)


def _split_list(inner: str) -> list[str]:
    """Split on commas that are not inside quotes."""
    parts: list[str] = []
    current: list[str] = []
    quote: str | None = None
    for char in inner:
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == ",":
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts
