"""Session documents on disk: one canonical JSON file per session.

A session id becomes a file name only after it matched SESSION_ID_PATTERN,
and `export_all` writes nothing whose resolved path leaves its directory. Files are
read and written through evcli/core/userfiles.py (bounded reads, writes by rename).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from evcli.contracts import SESSION_ID_RULE, SessionDocument, is_session_id
from evcli.core.canonical import canonical_json
from evcli.core.errors import BadInput
from evcli.core.userfiles import SESSION_DOCUMENT, read_json, write_output


class SessionSource(Protocol):
    """Where `export_all` reads the sessions it writes: the trace store (evcli.store.db.TraceStore)."""

    def list_sessions(self, limit: int = ...) -> list[dict[str, Any]]: ...

    def load(self, session_id: str) -> SessionDocument: ...


def check_session_id(value: str, *, consequence: str = "") -> str:
    """`value` if it matches SESSION_ID_PATTERN, else a BadInput naming the rule."""
    if not is_session_id(value):
        raise BadInput(f"{value[:200]!r} is not a valid session id ({SESSION_ID_RULE}){consequence}")
    return value


def export_all(store: SessionSource, directory: Path) -> list[str]:
    """Every stored session as DIR/<id>.json; nothing is written unless every target stays inside DIR."""
    ids = [row["session_id"] for row in store.list_sessions(limit=1_000_000)]
    for session_id in ids:
        check_session_id(session_id, consequence="; nothing exported")
    directory.mkdir(parents=True, exist_ok=True)
    root = directory.resolve()
    targets = {session_id: _inside(root, f"{session_id}.json") for session_id in ids}
    for session_id, target in targets.items():
        write_output(target, to_canonical(store.load(session_id)) + "\n")
    return ids


def _inside(root: Path, name: str) -> Path:
    target = root / name
    if not target.resolve().is_relative_to(root):
        raise BadInput(f"{target} leads outside {root} (a symlink); nothing exported")
    return target


def to_canonical(document: SessionDocument) -> str:
    return canonical_json(document.model_dump(mode="json"))


def read_document(path: Path) -> SessionDocument:
    """The session document in the file `path` (a regular file of at most `SESSION_DOCUMENT.max_bytes`)."""
    data = read_json(Path(path), SESSION_DOCUMENT)
    try:
        # A file from elsewhere may carry secrets an older evcli did not mask: mask before storing or showing it.
        # (Imported here: reading the store, as `evcli sessions` and `trace ID` do, needs no masking rules.)
        from evcli.core.redaction import Redactor

        return SessionDocument.model_validate(Redactor.from_env().mask(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        location = ".".join(str(part) for part in first["loc"]) or "(document)"
        raise BadInput(
            f"{path} is not an evcli session document: {location}: {first['msg']}"
            + (f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else "")
        ) from exc
