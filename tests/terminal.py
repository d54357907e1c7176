"""Running a command with its stderr on a pseudo-terminal, as a user's shell would show a progress bar."""

from __future__ import annotations

import os
import pty
import subprocess


def stderr_on_a_terminal(command: list[str], environment: dict[str, str]) -> str:
    """What `command` writes to stderr when stderr is a terminal (stdin and stdout are not); it must exit 0."""
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        command, env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=follower
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    assert child.wait() == 0
    os.close(leader)
    return seen.decode(errors="replace")
