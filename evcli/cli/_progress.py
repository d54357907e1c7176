"""What `evcli ask` shows on stderr while it runs.

On a terminal: one transient status line (a spinner and the current stage) that disappears when the
run ends, so only the answer stays on screen. `-v` prints every stage and tool call as its own line
instead (also when stderr is not a terminal); `--quiet` shows nothing. Stage text is data (service
names, tool errors) and is shown literally.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from evcli.core.console import err, safe

Progress = Callable[[str], None]


def _silent(message: str) -> None:
    return None


def _line(message: str) -> None:
    err.print(f"[dim]·[/] {safe(message)}", markup=True, highlight=False)


@contextlib.contextmanager
def stage_progress(*, verbose: bool = False, quiet: bool = False) -> Iterator[Progress]:
    """The progress callback for one run; the status line is removed when the block ends."""
    if quiet:
        yield _silent
    elif verbose:
        yield _line
    elif not err.is_terminal:
        yield _silent
    else:
        from rich.live import Live
        from rich.spinner import Spinner

        # Each stage is drawn when it starts (refresh=True), not at the next tick of the refresh thread:
        # a stage shorter than a tick would otherwise never be seen.
        with Live(Spinner("dots", text="starting …"), console=err, transient=True) as live:
            yield lambda message: live.update(Spinner("dots", text=safe(message)), refresh=True)
