"""Span matching shared by every scope extractor.

A question is read left to right by several extractors; each match *consumes* its span
(`Spans.claim`), so one piece of text is read once: "payment service" is one service and
not also the alias "payment", a time inside a quoted phrase is no range, the "502" of a
status code is no term. Matching is case-insensitive on ASCII word boundaries, so a
name next to CJK text (`支付服务的CPU`) is still found.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
LEFT = r"(?<![A-Za-z0-9_])"
RIGHT = r"(?![A-Za-z0-9_])"
SEPARATOR = r"[\s_-]*"  # "payment service", "payment_service", "payment-service"
_HUMPS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


class Spans:
    """The character spans of a question already read by some extractor."""

    def __init__(self) -> None:
        self.taken: list[tuple[int, int]] = []

    def free(self, start: int, end: int) -> bool:
        return all(end <= first or last <= start for first, last in self.taken)

    def claim(self, start: int, end: int) -> bool:
        """Take the span if nothing overlaps it; whether it was taken."""
        if not self.free(start, end):
            return False
        self.taken.append((start, end))
        return True

    def claim_longest(self, text: str, candidates: Iterable[tuple[str, str]]) -> list[tuple[int, int, str]]:
        """(start, end, value) of every match of the (pattern, value) candidates that overlaps nothing
        taken, in question order; where matches overlap, the longest wins."""
        matches = [
            (match.start(), match.end(), value)
            for pattern, value in candidates
            for match in re.finditer(pattern, text, re.IGNORECASE)
            if match.end() > match.start()
        ]
        matches.sort(key=lambda match: (-(match[1] - match[0]), match[0]))
        return sorted(match for match in matches if self.claim(match[0], match[1]))

    def rest(self, text: str) -> str:
        """The text with every taken span blanked (same length, so positions still hold)."""
        chars = list(text)
        for start, end in self.taken:
            chars[start:end] = " " * (end - start)
        return "".join(chars)


def name_pattern(name: str) -> str:
    """A service or alert name, its parts joined by any of space, `_` and `-`."""
    if CJK.search(name):
        return re.escape(name)
    parts = [re.escape(part) for part in re.split(r"[\s_-]+", name) if part]
    return LEFT + SEPARATOR.join(parts) + RIGHT


def distinct(values: Iterable[str]) -> list[str]:
    """The values in order, without case-insensitive repeats (the first spelling wins)."""
    seen: dict[str, str] = {}
    for value in values:
        seen.setdefault(value.lower(), value)
    return list(seen.values())


def humps(name: str) -> list[str]:
    """The words of a CamelCase name: HighCPUUsage → High, CPU, Usage."""
    return _HUMPS.findall(name)
