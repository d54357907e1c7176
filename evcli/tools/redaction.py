"""Masking secrets before anything is stored or shown to a model.

Tool outputs are data from the outside world: log lines carry JDBC URLs with
passwords, HTTP headers with bearer tokens, cloud keys. Every string of a tool
output and of its input parameters goes through `Redactor.mask` first.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from typing import Any

MASK = "***"

# (pattern, replacement) pairs; replacements keep the key so a reader still
# knows what was there.
_BUILTIN: tuple[tuple[str, str], ...] = (
    # -----BEGIN ... PRIVATE KEY----- blocks
    (r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", MASK),
    # scheme://user:password@host
    (r"(?i)\b([a-z][a-z0-9+.-]*://[^:/\s@]*):[^@\s/]+@", rf"\1:{MASK}@"),
    # Authorization: Bearer xxx / Basic xxx, and bare "Bearer xxx"
    (r"(?i)\b(authorization\s*[:=]\s*)(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]+", rf"\1\2 {MASK}"),
    (r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/-]{12,}=*", rf"\1 {MASK}"),
    # key=value / key: value for secret-looking keys (JSON-quoted values too)
    (
        r"(?i)(\b[\w.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
        r"|credentials?)\"?\s*[=:]\s*\"?)(?!\*\*\*)[^\s\"',;&)}\]]+",
        rf"\1{MASK}",
    ),
    # well-known token shapes
    (r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b", MASK),  # JWT
    (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", MASK),  # AWS access key id
    (r"\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}\b", MASK),  # OpenAI-style keys
    (r"\bgh[pousr]_[A-Za-z0-9]{30,}\b", MASK),  # GitHub tokens
    (r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b", MASK),  # Slack tokens
)

ENV_EXTRA_PATTERNS = "EVCLI_REDACT_PATTERNS"


class Redactor:
    def __init__(self, extra_patterns: Iterable[str] = ()) -> None:
        rules = [(re.compile(pattern, re.S), replacement) for pattern, replacement in _BUILTIN]
        for pattern in extra_patterns:
            try:
                rules.append((re.compile(pattern), MASK))
            except re.error as exc:
                from evcli.errors import BadInput

                raise BadInput(f"invalid secret pattern {pattern!r}: {exc}") from exc
        self._rules = rules

    @classmethod
    def from_env(cls) -> Redactor:
        """Built-in patterns plus a JSON list of regexes in $EVCLI_REDACT_PATTERNS."""
        raw = os.environ.get(ENV_EXTRA_PATTERNS, "").strip()
        if not raw:
            return cls()
        try:
            extra = json.loads(raw)
        except json.JSONDecodeError:
            extra = None
        if not isinstance(extra, list) or not all(isinstance(p, str) for p in extra):
            from evcli.errors import BadInput

            raise BadInput(f"${ENV_EXTRA_PATTERNS} must be a JSON list of regular expressions")
        return cls(extra)

    def mask_text(self, text: str) -> str:
        for pattern, replacement in self._rules:
            text = pattern.sub(replacement, text)
        return text

    def mask(self, value: Any) -> Any:
        """The same structure with every string masked (dict keys kept)."""
        if isinstance(value, str):
            return self.mask_text(value)
        if isinstance(value, dict):
            return {key: self.mask(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.mask(item) for item in value]
        return value
