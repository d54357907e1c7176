"""The masking screen of evcli.backends.logcolumns (issue 27): which lines of a window masking may change,
found with polars' regexes over the whole column, so only those lines go to the Python path to be masked.

Invariant: `screened` flags a superset of the lines `Redactor.mask_line` changes (see its docstring); a
pattern Rust's regex crate reads differently from Python's (set operations in a class) or cannot read flags
every line.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from evcli.backends.logformats.shapes import token_end
from evcli.core import redaction

_FOLDED = r"\\([\"'\\/])"  # redaction._ESCAPE but `\u`: a line writing `\u` goes to the Python path
# the escapes _FOLDED folds: a line holding none (`\n`, `\t` alone) folds to itself, its second pass is skipped
_FOLDING = ["\\" + char for char in "\"'\\/"]
_RUST_UNSURE = ("[[", "&&", "--", "~~")  # class syntax Rust reads as set operations, Python literally


def screened(column: pl.Series, redactor: redaction.Redactor) -> np.ndarray:
    """Lines `Redactor.mask_line` may change (a superset): a match of a rule's regex made readable by Rust
    (`relaxed`), a run of 40 base64 characters or an extra pattern's match, in the line or in its
    escape-folded form (only where it holds an escape folding reads). A rule changes a line only where its
    regex matches (its keyword only saves time)."""
    if any(unsure in pattern.pattern for pattern in redactor._extra for unsure in _RUST_UNSURE):
        return np.ones(len(column), bool)
    sources = [relaxed(rule.source) for rule in redaction._RULES] + [redaction._BASE64_RUN.pattern]
    sources += [pattern.pattern for pattern in redactor._extra]
    escaped = column.str.contains_any(_FOLDING).to_numpy()
    flagged = np.zeros(len(column), bool)
    for rows, text in ((None, column), (escaped, column.filter(escaped).str.replace_all(_FOLDED, "${1}"))):
        try:
            found = text.str.contains("|".join(f"(?:{source})" for source in sources)).to_numpy()
        except pl.exceptions.ComputeError:
            return np.ones(len(column), bool)
        if rows is None:
            flagged |= found
        else:
            flagged[rows] |= found
    return flagged


def relaxed(source: str) -> str:
    """A regex Rust's regex crate reads that matches wherever Python's `source` does (a superset):
    look-arounds dropped, a back-reference read as its group's pattern, group names dropped."""
    pieces, index = [], 0
    while index < len(source):
        if source[index] == "\\":
            pieces.append(source[index : index + 2])
            index += 2
        elif source[index] == "[":
            end = token_end(source, index)
            pieces.append(source[index:end])
            index = end
        elif source.startswith(("(?=", "(?!", "(?<=", "(?<!"), index):
            index = _group_end(source, index)
        elif source.startswith("(?P=", index):
            end = source.index(")", index)
            pieces.append("(?:" + relaxed(_group_body(source, source[index + 4 : end])) + ")")
            index = end + 1
        elif source.startswith("(?P<", index):
            pieces.append("(?:")
            index = source.index(">", index) + 1
        else:
            pieces.append(source[index])
            index += 1
    return "".join(pieces)


def _group_end(source: str, start: int) -> int:
    """The index after the `)` closing the group opened at `start`."""
    depth, index = 0, start
    while True:
        char = source[index]
        if char == "\\":
            index += 2
            continue
        if char == "[":
            index = token_end(source, index)
            continue
        depth += (char == "(") - (char == ")")
        index += 1
        if depth == 0:
            return index


def _group_body(source: str, name: str) -> str:
    start = source.index(f"(?P<{name}>")
    return source[source.index(">", start) + 1 : _group_end(source, start) - 1]
