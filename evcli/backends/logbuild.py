"""What remains of the SQLite log index build (issue 27 replaced it with evcli.backends.logcolumns and
evcli.backends.logstore): the decoding of a line's JSON `\\uXXXX` escapes as the per-line reading does it,
which the oracle of the vectorised reader (evcli.backends.logtable.reference_table) imports from here.

Invariant: only `\\uXXXX` escapes are decoded, each to its code unit; nothing else of the line changes.
This module goes when reference_table takes these two names from elsewhere.
"""

from __future__ import annotations

import re

_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def _unescape(match: re.Match[str]) -> str:
    return chr(int(match.group(1), 16))
