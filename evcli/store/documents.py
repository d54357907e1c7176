"""Session documents on disk: one canonical JSON file per session."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from evcli.canonical import canonical_json
from evcli.contracts import SessionDocument
from evcli.errors import BadInput


def to_canonical(document: SessionDocument) -> str:
    return canonical_json(document.model_dump(mode="json"))


def read_document(path: Path) -> SessionDocument:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise BadInput(f"no such file: {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read {path}: {exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from exc
    try:
        return SessionDocument.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        location = ".".join(str(part) for part in first["loc"]) or "(document)"
        raise BadInput(
            f"{path} is not an evcli session document: {location}: {first['msg']}"
            + (f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else "")
        ) from exc
