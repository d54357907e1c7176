"""What a reader sees: default-ignorable characters and look-alike letters (Unicode TR39).

A claim written "ordеr-service" with a Cyrillic е, "faılure" with a dotless ı or "n\u115fot" with an
invisible Hangul filler reads like its plain twin but checks as another word. The look-alike data is
the Unicode consortium's confusables list as the confusable_homoglyphs package ships it; the
default-ignorable property comes from the `regex` module's Unicode tables. Both load on first use,
only for text that is not plain ASCII.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources

__all__ = ["invisible", "skeleton"]


@cache
def _ascii_of() -> dict[str, str]:
    """Each character that looks like one ASCII letter or digit, mapped to it."""
    data = json.loads((resources.files("confusable_homoglyphs") / "confusables.json").read_text(encoding="utf-8"))
    mapping: dict[str, str] = {}
    for char, homoglyphs in data.items():
        targets = [h["c"] for h in homoglyphs if len(h["c"]) == 1 and h["c"].isascii() and h["c"].isalnum()]
        if len(char) != 1:
            continue
        if char.isascii() and char.isalnum():
            for homoglyph in homoglyphs:
                if len(homoglyph["c"]) == 1 and not homoglyph["c"].isascii():
                    mapping.setdefault(homoglyph["c"], char)
        elif targets:
            mapping.setdefault(char, targets[0])
    return mapping


@cache
def _ascii_table() -> dict[int, str]:
    """_ascii_of for str.translate."""
    return {ord(char): ascii for char, ascii in _ascii_of().items()}


def skeleton(word: str) -> str:
    """The word with every look-alike of an ASCII letter or digit replaced by it."""
    if word.isascii():
        return word
    return word.translate(_ascii_table())


@cache
def _invisible(controls: bool) -> re.Pattern[str]:
    import regex

    extra = r"\p{Cc}\p{Co}\p{Cs}" if controls else ""
    return regex.compile(rf"[\p{{Default_Ignorable_Code_Point}}\p{{Cf}}{extra}]")


def invisible(text: str, *, controls: bool = True) -> list[str]:
    """The default-ignorable and format characters of a text, and with `controls` its control and
    private characters too (tab and newline aside)."""
    if text.isascii() and (text.isprintable() or not controls):
        return []
    return [char for char in dict.fromkeys(_invisible(controls).findall(text)) if char not in "\n\t\r"]
