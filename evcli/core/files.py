"""Reading the files of a directory evcli is pointed at (a snapshot, a runbook tree), safely.

Every reader of a snapshot or runbook directory opens files through this module; files named on
the command line are opened with the same `open_regular` and `read_limited` (evcli/core/userfiles.py).
Invariants:

- A file is read only when its real path (every symlink resolved) lies inside the real path of
  its root: a symlink leading out of the directory is refused; one that stays inside is followed.
- Only regular files are opened. A FIFO, device or socket is refused from `os.stat`, before any
  open (opening a FIFO blocks, reading /dev/zero never ends); the descriptor is then opened with
  O_NOFOLLOW|O_NONBLOCK and checked again with `fstat`, so a file swapped in between is caught.
- Reads are bounded by `LIMITS`: a document (env.toml, alerts.json, a runbook) by
  `max_file_bytes`, a text line by `max_line_chars` (the rest of a longer line is skipped and
  counted), a directory walk by `max_entries`, `max_files` and `max_total_bytes`. Going over a
  limit is said (`RefusedFile`, `BadInput`, a count of cut lines), never silent.
- While a deadline is set (`deadline_scope`, by the tool runner), every line and chunk read checks
  it and raises `DeadlineExceeded` once it has passed, so a timed-out tool call stops its work.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, TextIO

from evcli.core.errors import BadInput

_CHUNK = 1 << 20
_CHECK_EVERY_CHARS = 64 * 1024  # deadline checks while reading lines, by text consumed


@dataclass(frozen=True)
class ReadLimits:
    """How much of a directory evcli reads; the defaults (`LIMITS`) are the one place to change them."""

    max_file_bytes: int = 8 << 20  # one env.toml, alerts.json or runbook
    max_line_chars: int = 1 << 20  # one log or CSV line; the rest of a longer line is skipped
    max_entries: int = 20_000  # directory entries a walk looks at
    max_files: int = 2_000  # files a walk collects
    max_total_bytes: int = 64 << 20  # the collected files together


LIMITS = ReadLimits()


class RefusedFile(OSError):
    """A path evcli will not read: outside its directory, not a regular file, or too large.
    An OSError, so every reader reports it as it reports an unreadable file."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EPERM, f"refused: {reason}")

    def __str__(self) -> str:
        return str(self.strerror)


class DeadlineExceeded(Exception):
    """The tool call's time is up. Deliberately neither an OSError nor a BackendError: no reader
    may take it for one bad file and go on with the next."""


class Deadline:
    """A point in time after which reads raise `DeadlineExceeded`; `cancel` ends it at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def check(self) -> None:
        if self.cancelled or time.monotonic() >= self.ends:
            raise DeadlineExceeded(f"timed out after {self.seconds:g}s")


_DEADLINE: ContextVar[Deadline | None] = ContextVar("evcli_read_deadline", default=None)


@contextmanager
def deadline_scope(deadline: Deadline) -> Iterator[Deadline]:
    """Reads in this context (this thread) check `deadline`."""
    token = _DEADLINE.set(deadline)
    try:
        yield deadline
    finally:
        _DEADLINE.reset(token)


def check_deadline() -> None:
    """Raise `DeadlineExceeded` when the current deadline has passed; nothing without one."""
    deadline = _DEADLINE.get()
    if deadline is not None:
        deadline.check()


# --- one file ----------------------------------------------------------------------------------


def contained(path: Path, root: Path) -> Path:
    """The real path of `path`, which must lie inside the real path of `root`."""
    real = Path(os.path.realpath(path))
    base = Path(os.path.realpath(root))
    if real != base and base not in real.parents:
        raise RefusedFile(f"a symlink leading outside {root} (to {real})")
    return real


def file_kind(mode: int) -> str:
    """What a non-regular file is, for a message."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "a special file")


def _require_regular(mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise RefusedFile(f"not a regular file ({file_kind(mode)})")


def open_binary(path: Path, root: Path) -> BinaryIO:
    """A regular file inside `root`, opened for reading without ever blocking on the open."""
    return open_regular(contained(path, root), follow_symlinks=False)


def open_regular(path: Path, *, follow_symlinks: bool = True) -> BinaryIO:
    """`path`, opened for reading only if it is a regular file: checked with `os.stat` before the
    open (never blocking: O_NONBLOCK) and with `fstat` after it, so a file swapped in between is caught.
    Without `follow_symlinks` a symlink at `path` fails the open (O_NOFOLLOW)."""
    _require_regular(os.stat(path).st_mode)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        _require_regular(os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def open_text(path: Path, root: Path) -> TextIO:
    """`open_binary` as UTF-8 text, undecodable bytes replaced, line endings kept; a line ends at "\n" only,
    as `grep -n` counts them (a lone "\r" inside a line does not split it)."""
    return io.TextIOWrapper(open_binary(path, root), encoding="utf-8", errors="replace", newline="\n")


def read_bytes(path: Path, root: Path, limit: int | None = None) -> bytes:
    """A whole document of at most `limit` bytes (default `LIMITS.max_file_bytes`)."""
    with open_binary(path, root) as handle:
        return read_limited(handle, LIMITS.max_file_bytes if limit is None else limit)


def read_limited(handle: BinaryIO, limit: int) -> bytes:
    """The rest of `handle`, refused (`RefusedFile`) as soon as it passes `limit` bytes."""
    chunks, size = [], 0
    while chunk := handle.read(min(_CHUNK, limit + 1 - size)):
        check_deadline()
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise RefusedFile(f"larger than {limit} bytes (the read limit)")
    return b"".join(chunks)


def read_text(path: Path, root: Path, limit: int | None = None) -> str:
    """`read_bytes` decoded as strict UTF-8 (UnicodeDecodeError for bad bytes)."""
    return read_bytes(path, root, limit).decode("utf-8")


@dataclass
class Lines:
    """The lines of a text handle, each cut at `max_chars`: the rest of a longer line is skipped
    (counted in `cut`), so one huge line costs a bounded amount of memory and work. Checks the
    deadline as it reads. Only "\n" ends a line (the handle is opened as `open_text` opens it): a cut
    whose kept part ends in "\r" still skips the rest of its line."""

    handle: TextIO
    max_chars: int = field(default_factory=lambda: LIMITS.max_line_chars)
    cut: int = 0

    def __iter__(self) -> Iterator[str]:
        readline, limit = self.handle.readline, self.max_chars
        deadline = _DEADLINE.get()
        budget = _CHECK_EVERY_CHARS
        while line := readline(limit):
            budget -= len(line)
            if budget <= 0 and deadline is not None:
                deadline.check()
                budget = _CHECK_EVERY_CHARS
            if len(line) == limit and line[-1] != "\n":
                self._skip_rest(readline)
            yield line

    def _skip_rest(self, readline: Callable[[int], str]) -> None:
        self.cut += 1
        while (rest := readline(_CHUNK)) and rest[-1] != "\n":
            check_deadline()


# --- a directory ---------------------------------------------------------------------------------


@dataclass
class Walk:
    """What a walk found: the wanted regular files, other regular files, and refused entries."""

    files: list[Path] = field(default_factory=list)
    others: list[Path] = field(default_factory=list)  # regular files not named `*suffix`
    refused: list[tuple[Path, str]] = field(default_factory=list)  # (path, why), e.g. a link leading out


def walk(
    root: Path, *, within: Path | None = None, suffix: str = "", skip_hidden: bool = False, limits: ReadLimits = LIMITS
) -> Walk:
    """Regular files under `root` named `*suffix`, sorted; symlinks are followed only inside
    `within` (default `root`), each directory once. A wanted name that is not a regular file, or
    larger than a document may be, is refused. Raises BadInput naming the limit when the tree is
    larger than `limits` allow: a partial walk would index an arbitrary subset."""
    walker = _Walker(root, within or root, suffix, skip_hidden, limits)
    walker.run()
    for paths in (walker.found.files, walker.found.others, walker.found.refused):
        paths.sort()
    return walker.found


@dataclass
class _Walker:
    root: Path
    within: Path
    suffix: str
    skip_hidden: bool
    limits: ReadLimits
    found: Walk = field(default_factory=Walk)
    entries: int = 0
    total_bytes: int = 0

    def run(self) -> None:
        pending, seen = [self.root], {os.path.realpath(self.root)}
        while pending:
            directory = pending.pop()
            try:
                listing = sorted(os.scandir(directory), key=lambda entry: entry.name)
            except OSError as error:
                self.found.refused.append((directory, f"cannot list: {error.strerror or error}"))
                continue
            for entry in listing:
                self.entries += 1
                if self.skip_hidden and entry.name.startswith("."):
                    continue
                subdirectory = self._visit(Path(entry.path), entry)
                self._check_limits()
                if subdirectory is not None and os.path.realpath(subdirectory) not in seen:
                    seen.add(os.path.realpath(subdirectory))
                    pending.append(subdirectory)

    def _check_limits(self) -> None:
        limits, what = self.limits, f"{self.suffix} files".strip()
        if self.entries > limits.max_entries:
            raise BadInput(f"more than {limits.max_entries} entries under {self.root} (the walk limit)")
        if len(self.found.files) > limits.max_files:
            raise BadInput(f"more than {limits.max_files} {what} under {self.root} (the walk limit)")
        if self.total_bytes > limits.max_total_bytes:
            raise BadInput(f"more than {limits.max_total_bytes} bytes of {what} under {self.root} (the walk limit)")
        check_deadline()

    def _visit(self, path: Path, entry: os.DirEntry) -> Path | None:
        """File one entry under `found`; a directory to descend into is returned instead."""
        try:
            if entry.is_symlink():
                contained(path, self.within)
            status = entry.stat()
        except OSError as error:
            reason = str(error) if isinstance(error, RefusedFile) else f"cannot read: {error.strerror or error}"
            self.found.refused.append((path, reason))
            return None
        if stat.S_ISDIR(status.st_mode):
            return path
        wanted = entry.name.endswith(self.suffix)
        if not stat.S_ISREG(status.st_mode):
            if wanted:
                self.found.refused.append((path, f"refused: not a regular file ({file_kind(status.st_mode)})"))
        elif not wanted:
            self.found.others.append(path)
        elif status.st_size > self.limits.max_file_bytes:
            self.found.refused.append(
                (path, f"refused: larger than {self.limits.max_file_bytes} bytes (the read limit)")
            )
        else:
            self.found.files.append(path)
            self.total_bytes += status.st_size
        return None


def non_blank_lines(handle: BinaryIO) -> int:
    """Lines of the file with something besides white space, counted chunk by chunk."""
    count, carry_blank = 0, True  # carry_blank: the line begun in the previous chunk is blank so far
    while chunk := handle.read(_CHUNK):
        parts = chunk.split(b"\n")
        for index, part in enumerate(parts):
            blank = (carry_blank if index == 0 else True) and not part.strip()
            if index < len(parts) - 1:
                count += not blank
            else:
                carry_blank = blank
    return count + (not carry_blank)
