"""The one console pair: data to stdout, status and errors to stderr.

Data (questions, log lines, runbook text, model output, alert labels) never
reaches the terminal as markup or as control sequences: renderers pass every
data value through `safe()` (inside rich markup) or `visible()` (plain text).
Control characters other than newline and tab, DEL, the C1 range and the
bidirectional overrides are shown as `\\xNN` / `\\uNNNN` text, so a log line
cannot move the cursor, retitle the window, open an OSC 8 link or reorder
what the reader sees.
"""

from __future__ import annotations

import os

from rich.console import Console, RenderableType
from rich.markup import escape

# emoji=False: evidence such as "root:x:0" must print as written, not as ❌.
# Rich itself honours NO_COLOR (no colour, styles kept) and stays plain when not a terminal.
out = Console(highlight=False, soft_wrap=False, emoji=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)

_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_CONTROLS = [c for c in range(0x20) if chr(c) not in "\n\t"] + list(range(0x7F, 0xA0)) + list(_BIDI)
_VISIBLE = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _CONTROLS}
# What JSON output must escape beyond what json.dumps does (it leaves DEL, C1 and bidi raw).
_JSON_EXTRA = {c: f"\\u{c:04x}" for c in _CONTROLS if c >= 0x7F}


def visible(text: object) -> str:
    """`text` as a string whose control characters are shown, not obeyed."""
    return str(text).translate(_VISIBLE)


def safe(text: object) -> str:
    """`text` ready to embed in rich markup: shown literally, controls made visible."""
    return escape(visible(text))


def json_safe(dumped: str) -> str:
    """A json.dumps result with DEL, C1 and bidi characters \\u-escaped (still the same JSON)."""
    return dumped.translate(_JSON_EXTRA)


def paged(renderable: RenderableType, no_pager: bool = False) -> None:
    """Print `renderable` to stdout, through $PAGER (default `less -R`) when stdout is a terminal,
    paging is not turned off and the output is taller than the screen."""
    if no_pager or not out.is_terminal:
        out.print(renderable)
        return
    with out.capture() as captured:
        out.print(renderable)
    text = captured.get()
    if text.count("\n") < out.size.height:
        out.file.write(text)
        return
    _page(text)


def _page(text: str) -> None:
    import pydoc

    os.environ.setdefault("LESS", "-FRX")  # less (the usual pager) keeps colours, exits when it all fits
    pydoc.pager(text)
