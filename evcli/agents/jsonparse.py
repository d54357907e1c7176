"""Getting the JSON document out of a model's answer: fenced, chatty or bare."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.S)


class InvalidOutput(ValueError):
    """The answer holds no JSON object."""


def parse_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in `text`: inside a ``` fence if there is one, else anywhere."""
    candidates = [match.group(1) for match in _FENCE.finditer(text or "")] + [text or ""]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for start in (i for i, char in enumerate(candidate) if char == "{"):
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    preview = (text or "").strip().replace("\n", " ")[:120]
    raise InvalidOutput(f"no JSON object in the model's answer: {preview!r}")
