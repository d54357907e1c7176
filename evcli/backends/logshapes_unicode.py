"""The characters beyond ASCII the vectorised log reader (evcli.backends.logcolumns) reads itself (issue 27):
a line of printable ASCII, tabs and SAFE characters only, valid UTF-8, takes the vector path; a line with
any other byte above 127 is read by the Python path.

SAFE is data: ranges of letters, ideographs, kana, Hangul syllables and punctuation of the blocks in
CANDIDATE_BLOCKS on which everything the vector path does to a line gives what the Python reading gives.
Each SAFE character:
  - is no mark, control, format, unassigned or separator character and combines with nothing (no
    canonical composition takes it second, its combining class is 0), is its own NFKC form and none of
    evcli.core.redaction's invisible characters: masking folds a SAFE line as it folds ASCII (escapes
    only), so the masking screen, which reads such a line with ASCII stand-ins (`screened_lines`), still
    flags every line masking changes;
  - is no whitespace (Python's `isspace`, `\\s` of both engines, polars' `strip_chars`) and no digit
    (`isdigit`, `\\d` of both engines: `int`, `float` and `isdigit` read no SAFE character as a digit);
  - is `\\w` in Python's re exactly where it is in Rust's regex crate (so `\\b` agrees too), and matches
    `.` and negated ASCII classes in both;
  - matches case-insensitively (`(?i)`) the same characters of ASCII and the candidate blocks in both
    engines, and neither its upper, lower, title nor case-folded form holds an ASCII character (so
    `lower`, `upper` and ASCII case-insensitive matching never make an ASCII level word or key of it).
tests/backends/test_log_columns_unicode.py checks every code point of CANDIDATE_BLOCKS against both
engines and holds SAFE equal to those that pass. All SAFE characters are in the BMP (two or three bytes of
UTF-8), so `unsafe_lines` decodes them with numpy.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import polars as pl

from evcli.backends.logshapes_screen import screened
from evcli.core import redaction

# the blocks whose characters were tested for SAFE (first, last code point)
CANDIDATE_BLOCKS: dict[str, tuple[int, int]] = {
    "Latin-1 Supplement": (0x0080, 0x00FF),
    "Latin Extended-A": (0x0100, 0x017F),
    "Latin Extended-B": (0x0180, 0x024F),
    "Greek and Coptic": (0x0370, 0x03FF),
    "Cyrillic": (0x0400, 0x04FF),
    "Cyrillic Supplement": (0x0500, 0x052F),
    "Latin Extended Additional": (0x1E00, 0x1EFF),
    "General Punctuation": (0x2000, 0x206F),
    "CJK Symbols and Punctuation": (0x3000, 0x303F),
    "Hiragana": (0x3040, 0x309F),
    "Katakana": (0x30A0, 0x30FF),
    "CJK Unified Ideographs Extension A": (0x3400, 0x4DBF),
    "CJK Unified Ideographs": (0x4E00, 0x9FFF),
    "Hangul Syllables": (0xAC00, 0xD7AF),
    "Halfwidth and Fullwidth Forms": (0xFF00, 0xFFEF),
}
# the characters of CANDIDATE_BLOCKS that pass every test (see the module docstring), as ranges
SAFE: tuple[tuple[int, int], ...] = (
    (0x00A1, 0x00A7),
    (0x00A9, 0x00A9),
    (0x00AB, 0x00AC),
    (0x00AE, 0x00AE),
    (0x00B0, 0x00B1),
    (0x00B6, 0x00B7),
    (0x00BB, 0x00BB),
    (0x00BF, 0x00DE),
    (0x00E0, 0x012F),
    (0x0134, 0x013E),
    (0x0141, 0x0148),
    (0x014A, 0x017E),
    (0x0180, 0x01C3),
    (0x01CD, 0x01EF),
    (0x01F4, 0x024F),
    (0x0370, 0x0373),
    (0x0375, 0x0377),
    (0x037B, 0x037D),
    (0x037F, 0x037F),
    (0x0386, 0x0386),
    (0x0388, 0x038A),
    (0x038C, 0x038C),
    (0x038E, 0x03A1),
    (0x03A3, 0x03CF),
    (0x03D7, 0x03EF),
    (0x03F3, 0x03F3),
    (0x03F6, 0x03F8),
    (0x03FA, 0x0482),
    (0x048A, 0x052F),
    (0x1E00, 0x1E95),
    (0x1E9C, 0x1E9D),
    (0x1E9F, 0x1EFF),
    (0x2010, 0x2010),
    (0x2012, 0x2016),
    (0x2018, 0x2023),
    (0x2027, 0x2027),
    (0x2030, 0x2032),
    (0x2035, 0x2035),
    (0x2038, 0x203B),
    (0x203D, 0x203D),
    (0x2041, 0x2046),
    (0x204A, 0x2053),
    (0x2055, 0x2056),
    (0x2058, 0x205E),
    (0x3001, 0x3029),
    (0x3030, 0x3035),
    (0x3037, 0x3037),
    (0x303B, 0x303F),
    (0x3041, 0x3096),
    (0x309D, 0x309E),
    (0x30A0, 0x30FE),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7A3),
)
_SAFE_TABLE = np.zeros(0x10000, bool)
for _first, _last in SAFE:
    _SAFE_TABLE[_first : _last + 1] = True
# a whole text the vector path reads: printable ASCII, tabs and SAFE characters (a Rust regex)
SAFE_TEXT = "^[\t\x20-\x7e" + "".join(f"{chr(first)}-{chr(last)}" for first, last in SAFE) + "]*$"
WORD_STAND_IN, OTHER_STAND_IN = "_", "~"  # see in_ascii
# Where the template regex's `\\b` may read otherwise as an ASCII word boundary: its parts that begin or end
# at `\\b` consume `\\w`, `.`, `:` and `-` only, and each needs a digit (or `-`: a UUID); a run of
# `[\\w.:/-]` holding a word character beyond ASCII but no digit or `-` holds no such part, and a run without
# one (its neighbours are not `\\w`) has the same word boundaries in both readings
_BOUNDARY_UNSURE = r"[\w&&[^\x00-\x7f]][\w.:/-]*[0-9-]|[0-9-][\w.:/-]*[\w&&[^\x00-\x7f]]"
_SLICE = 1 << 20  # bytes searched at a time: arrays over every byte above 127 of a window would be large


def unsafe_lines(data: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per line (line i starts at byte starts[i] of `data`, uint8; lines end at b"\\n"), whether it holds a
    byte above 127 that is not part of the UTF-8 of a SAFE character (invalid UTF-8 too)."""
    unsafe = np.zeros(len(starts), bool)
    for at in range(0, len(data), _SLICE):
        high = np.flatnonzero(data[at : at + _SLICE] >= 0x80) + at
        if len(high):
            unsafe[np.searchsorted(starts, high[~_in_safe_character(data, high)], "right") - 1] = True
    return unsafe


def screened_lines(column: pl.Series, redactor: redaction.Redactor, *, beyond_ascii: bool = True) -> np.ndarray:
    """logshapes_screen.screened (a superset of the lines masking changes), with each character beyond
    ASCII read as its ASCII stand-in (`in_ascii`): Rust's regex crate runs a Unicode `\\b` with its slowest
    engine on text beyond ASCII (measured 30-200 µs a line, more than the Python path's reading), on ASCII
    with a DFA. With extra patterns (a user's regex may name characters beyond ASCII), or `beyond_ascii`
    False (no line holds a character beyond ASCII), the lines are screened as written."""
    return screened(in_ascii(column) if beyond_ascii and not redactor._extra else column, redactor)


def in_ascii(lines: pl.Series) -> pl.Series:
    """`lines` with each character beyond ASCII written as WORD_STAND_IN where it is `\\w`, else as
    OTHER_STAND_IN. On a SAFE line a redaction rule's regex (made readable by Rust: no look-around) then
    matches wherever it matches the line as written: a SAFE character matches no ASCII literal, in any
    case, and every class, `.` or `\\S` of the rules' regexes that holds a SAFE character holds its
    stand-in (tests/backends/test_log_columns_unicode.py checks each class of each rule), and a stand-in
    is `\\w` where the character is, so `\\b` holds at the same places."""
    return lines.str.replace_all(r"[\w&&[^\x00-\x7f]]", WORD_STAND_IN).str.replace_all(r"[^\x00-\x7f]", OTHER_STAND_IN)


def templates(messages: pl.Series, variable: str) -> pl.Series:
    """`messages.str.replace_all(variable, "<*>")` for logrows' template regex (`variable`, its form Rust
    reads: logshapes_values.VARIABLE), on SAFE text as fast as on ASCII: its `\\b` read as an ASCII word
    boundary (which Rust's DFA runs on any text; a Unicode one makes it fall back to a slower engine beyond
    ASCII) but on the messages where the two may differ (`_BOUNDARY_UNSURE`)."""
    read = messages.str.replace_all(_ascii_boundaries(variable), "<*>")
    unsure = np.flatnonzero(messages.str.contains(_BOUNDARY_UNSURE).to_numpy())
    if not len(unsure):
        return read
    return read.scatter(unsure, messages.gather(unsure).str.replace_all(variable, "<*>"))


@cache
def _ascii_boundaries(variable: str) -> str:
    """`variable` with each `\\b` an ASCII word boundary (it writes no `\\\\`, so each `\\b` is one)."""
    if "\\\\" in variable:
        raise ValueError(f"the template regex writes a backslash: {variable!r}")
    return variable.replace("\\b", "(?-u:\\b)")


def unsafe_read_as_ascii(data: np.ndarray, starts: np.ndarray, unsafe: np.ndarray) -> np.ndarray:
    """`data` with each byte above 127 of an unsafe line (`unsafe_lines`) written as `?`."""
    replaced = data.copy()
    for at in range(0, len(data), _SLICE):
        high = np.flatnonzero(data[at : at + _SLICE] >= 0x80) + at
        replaced[high[unsafe[np.searchsorted(starts, high, "right") - 1]]] = ord("?")
    return replaced


def _in_safe_character(data: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Whether each byte at `high` (all above 127) is the lead byte of a SAFE character's UTF-8 (two or
    three bytes, no overlong form), or a continuation byte after such a lead."""
    first, second, third = (_byte_at(data, high + offset) for offset in (0, 1, 2))
    before, before_that = _byte_at(data, high - 1), _byte_at(data, high - 2)
    lead2, lead3 = (first >= 0xC2) & (first <= 0xDF), (first >= 0xE0) & (first <= 0xEF)
    follows = (second & 0xC0) == 0x80
    code = np.where(
        lead2,
        ((first & 0x1F) << 6) | (second & 0x3F),
        ((first & 0x0F) << 12) | ((second & 0x3F) << 6) | (third & 0x3F),
    )
    whole = follows & (lead2 | (lead3 & ((third & 0xC0) == 0x80) & (code >= 0x800)))
    lead = whole & _SAFE_TABLE[code & 0xFFFF]
    # a continuation byte right after a lead byte, or the third byte of a three-byte character
    owned = ((before >= 0xC2) & (before <= 0xEF)) | (
        (before_that >= 0xE0) & (before_that <= 0xEF) & ((before & 0xC0) == 0x80)
    )
    return np.where((first & 0xC0) == 0x80, owned, lead)


def _byte_at(data: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The bytes at `positions` as int32 (0 outside `data`)."""
    inside = (positions >= 0) & (positions < len(data))
    return np.where(inside, data[np.clip(positions, 0, max(len(data) - 1, 0))], 0).astype(np.int32)
