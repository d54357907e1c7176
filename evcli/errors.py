"""Expected failures and the exit codes they map to (DESIGN §8)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_LOW_CONFID = 3
EXIT_REJECT = 4


class EvcliError(Exception):
    """An expected failure: one line for the user, a documented exit code."""

    exit_code = EXIT_RUNTIME

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class BadInput(EvcliError):
    """The user gave us something we cannot use (file, option, rules)."""

    exit_code = EXIT_USAGE


class StoreError(EvcliError):
    """The trace store is missing, unreadable or corrupt."""

    exit_code = EXIT_RUNTIME


class NotFound(EvcliError):
    """A session id that is not in the store."""

    exit_code = EXIT_USAGE
