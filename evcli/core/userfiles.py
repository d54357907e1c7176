"""Files named on the command line: documents read bounded and without blocking, outputs written whole.

Every command that reads a JSON file the user names (a session document for `import`, `gate`,
`report`, `trace`; an alert payload for `aiops`, `serve --once` and eval cases) reads it here, and
every command that writes a file the user names (`report -o`, `export -o`, `ask --report`,
`aiops --report-dir`, `config init`, `rules init`) writes it here. Invariants:

- Only a regular file is read: a FIFO, device or socket is refused before any read, and the open
  never blocks (`files.open_regular`). A file larger than its kind's cap is refused from its size
  before a byte is read, and the read stops at the cap should the file grow meanwhile. Every
  failure is one `BadInput` (exit 2) naming the file.
- An output is written to a new file in the target's directory, then renamed onto the target: a
  symlink there is replaced, never written through, and no reader ever sees half a file. A
  directory at the target is refused (`IsADirectoryError`); an existing regular file keeps its
  permission bits; a new one gets the umask's.
- A file holding a secret (a token or password file) that other users can read or change, and a
  configuration file anyone can write, are read all the same, with one `warning:` line on stderr
  naming the file and the fix (`chmod 600`, `chmod go-w`), once per file and process
  (`warn_if_exposed`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evcli.core.errors import BadInput


@dataclass(frozen=True)
class DocumentKind:
    """What a file is expected to hold, for messages, and how large it may be."""

    name: str
    max_bytes: int


# Caps far above real documents (a stored session is tens to hundreds of KiB; parsing and validating
# one costs about 8x its size in memory), low enough that a wrong file fails at once.
SESSION_DOCUMENT = DocumentKind("a session document", 64 << 20)
ALERT_PAYLOAD = DocumentKind("an alert payload", 8 << 20)
RULES_FILE = DocumentKind("a rules file", 1 << 20)


def read_input(path: Path, kind: DocumentKind) -> bytes:
    """The bytes of the regular file `path`, at most `kind.max_bytes`; any failure a BadInput."""
    from evcli.core.files import RefusedFile, open_regular, read_limited  # only once a file is read

    try:
        with open_regular(path) as handle:
            if os.fstat(handle.fileno()).st_size > kind.max_bytes:
                raise BadInput(f"{path} is larger than {_size(kind.max_bytes)}, the limit for {kind.name}")
            return read_limited(handle, kind.max_bytes)
    except FileNotFoundError as exc:
        raise BadInput(f"no such file: {path}") from exc
    except RefusedFile as exc:  # a FIFO, a device, a socket, a directory
        raise BadInput(f"cannot read {path}: {exc}", hint=f"give {kind.name} as a regular file") from exc
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror or exc}") from exc


def read_json(path: Path, kind: DocumentKind) -> Any:
    """The JSON value of `read_input(path, kind)`, read as strict UTF-8; not JSON is a BadInput."""
    raw = read_input(path, kind)
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BadInput(f"cannot read {path}: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    except RecursionError as exc:
        raise BadInput(f"{path} is nested too deeply to be {kind.name}") from exc


_SECRET_READ, _SECRET_WRITE = 0o044, 0o022  # group and others: a secret file is for its owner alone
_WORLD_WRITE = 0o002  # a configuration: only writable by anyone is warned (umask 002 leaves group write)
_warned: set[tuple[str, str]] = set()


def warn_if_exposed(path: Path, what: str, *, secret: bool) -> None:
    """One stderr warning when `path` (`what`: "token file", "config file") is open to other users:
    a secret readable or writable by its group or others, a configuration writable by anyone."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return  # its reader reports a file that is not there or cannot be read
    if secret and mode & (_SECRET_READ | _SECRET_WRITE):
        verb = "read" if mode & _SECRET_READ else "changed"
        problem, fix = f"can be {verb} by other users", "chmod 600"
    elif not secret and mode & _WORLD_WRITE:
        problem, fix = "can be written by other users", "chmod go-w"
    else:
        return
    if (str(path), what) in _warned:
        return
    _warned.add((str(path), what))
    from evcli.core.console import err, visible

    line = f"warning: {what} {path} {problem} (mode {mode:04o}); run `{fix} {path}`"
    err.print(visible(line), markup=False, highlight=False, soft_wrap=True)


def _size(count: int) -> str:
    return f"{count >> 20} MiB" if count >= 1 << 20 else f"{count} bytes"


def write_output(path: Path, data: str | bytes) -> None:
    """Replace `path` with `data` (str: UTF-8) whole: a symlink at `path` is replaced, not followed.
    OSErrors (a missing directory, no permission, a full disk) are the caller's to report; they name
    `path`, never the temporary file."""
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    try:
        _replace(path, data.encode("utf-8") if isinstance(data, str) else data)
    except OSError as exc:
        exc.filename, exc.filename2 = str(path), None
        raise


def _replace(path: Path, raw: bytes) -> None:
    kept_mode = _regular_file_mode(path)
    temporary = path.with_name(f".evcli-{secrets.token_hex(6)}.tmp")  # short: any target name fits
    # O_EXCL|O_NOFOLLOW: a name planted in the directory meanwhile is never written through.
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
            if kept_mode is not None:
                os.fchmod(handle.fileno(), kept_mode)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _regular_file_mode(path: Path) -> int | None:
    """The permission bits of a regular file at `path` itself (not a symlink's target), else None."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return None
    return stat.S_IMODE(status.st_mode) if stat.S_ISREG(status.st_mode) else None
