"""Canonical JSON and content hashes for anything that is re-checked later."""

from __future__ import annotations

import hashlib
import json
from typing import Any

HASH_PREFIX = "sha256-v1:"


def canonical_json(data: Any) -> str:
    """Sorted keys, compact separators, UTF-8 text: one byte string per value."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(data: bytes | str) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return HASH_PREFIX + hashlib.sha256(raw).hexdigest()
