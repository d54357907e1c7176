"""The one console pair: data to stdout, status and errors to stderr."""

from __future__ import annotations

from rich.console import Console

out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False, soft_wrap=True)
