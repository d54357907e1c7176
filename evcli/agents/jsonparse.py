"""Reading a role's JSON document out of a model's reply, strictly.

Invariant: a reply is accepted only when it IS one JSON object — bare, or as the
only thing inside one ``` fence (```json or plain). A JSON object found inside
prose is never taken (the first `{…}` of a chatty reply may be an example, a
quote, or half of two answers); such a reply is invalid output, and the stage
asks the model once to repair it. Every error says what was wrong in plain words.
"""

from __future__ import annotations

import json
import re
from typing import Any

# The whole reply is one fence: an optional language tag, the document, the closing fence.
_FENCE = re.compile(r"\A```[A-Za-z]*[ \t]*\n(.*)\n?```\Z", re.S)


class InvalidOutput(ValueError):
    """The reply is not one JSON object; the message says what it is instead."""


def parse_json_object(text: str | None) -> dict[str, Any]:
    """The JSON object that is the whole reply (optionally fenced); InvalidOutput otherwise."""
    stripped = (text or "").strip()
    if not stripped:
        raise InvalidOutput("the reply is empty")
    fenced = _FENCE.match(stripped)
    document = fenced.group(1).strip() if fenced else stripped
    if not document.startswith(("{", "[")):
        raise InvalidOutput(f"the reply is prose, not one JSON document: {_preview(stripped)}")
    try:
        value = json.loads(document)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            raise InvalidOutput(f"the reply has text after the JSON document: {_preview(stripped)}") from None
        raise InvalidOutput(f"the reply is broken JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    if not isinstance(value, dict):
        raise InvalidOutput(f"the reply is a JSON {type(value).__name__}, not an object")
    return value


def _preview(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "…")
