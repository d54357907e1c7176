"""The one console pair: data to stdout, status and errors to stderr."""

from __future__ import annotations

from rich.console import Console

# emoji=False: evidence such as "root:x:0" must print as written, not as ❌.
out = Console(highlight=False, soft_wrap=False, emoji=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)
