"""The `runbooks` knowledge backend: the Markdown runbooks of one or more directories, searched
through the knowledge index (evcli/kb/index.py).

Invariants: the index file is opened on first use and each directory is (re)indexed before each
search or skill listing (a no-op when nothing changed, so an edited runbook is seen by the next
lookup); only those directories' documents are searched, each one's blocks ranked in it and the
whole merged by score (L0 hints first). No directory at all (live backends without runbooks) is a
`BackendError` "no runbooks configured", as is a directory with nothing to index: nothing to search
is not "found nothing". Blocks are returned as dicts without the index's `directory` field (where
the index found them is not evidence).

Threads: the knowledge index is one SQLite connection, and every search may re-index its directories
in a write transaction on it, so calls from several threads at once (the tool calls of one model
reply) are serialised by a lock per backend; a search takes milliseconds.
"""

from __future__ import annotations

import json
import threading
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evcli.backends.registry import DIRECTORIES_OPTION, INDEX_OPTION
from evcli.core.errors import BackendError, BadInput

if TYPE_CHECKING:
    from evcli.contracts import BackendSpec
    from evcli.kb.index import EvidenceBlock, KnowledgeIndex

NO_RUNBOOKS = "no runbooks configured (pass --runbooks DIR or set runbooks in the configuration)"


class RunbooksBackend:
    name = "runbooks"

    def __init__(self, directories: Path | list[Path], index_path: Path | None = None) -> None:
        self.directories = [directories] if isinstance(directories, Path) else list(directories)
        self.index_path = index_path
        self._lock = threading.Lock()  # one caller at a time on the index's connection (see the module)

    @cached_property
    def index(self) -> KnowledgeIndex:
        from evcli.kb.index import KnowledgeIndex

        return KnowledgeIndex(self.index_path)  # None: kb.db next to the trace store

    def _indexed(self) -> KnowledgeIndex:
        if not self.directories:
            raise BackendError(NO_RUNBOOKS)
        for directory in self.directories:
            try:
                self.index.index_dir(directory)
            except BadInput as exc:  # e.g. a snapshot without runbooks
                raise BackendError(exc.message) from exc
        return self.index

    def search(self, query: str, *, limit: int, alertname: str | None, service: str | None) -> list[dict[str, Any]]:
        with self._lock:
            index = self._indexed()
            found: list[EvidenceBlock] = [
                block
                for directory in self.directories
                for block in index.search(query, limit=limit, alertname=alertname, service=service, directory=directory)
            ]
        if len(self.directories) > 1:
            found.sort(key=lambda block: (block.layer != "L0", -block.score))
        return [block.model_dump(exclude={"directory"}) for block in found[:limit]]

    def skills(self) -> list[dict[str, Any]]:
        with self._lock:
            index = self._indexed()
            return [skill.as_dict() for directory in self.directories for skill in index.skills(directory)]


def build(spec: BackendSpec) -> RunbooksBackend:
    """The backend for the directories `spec.options["directories"]` lists (a JSON list), else the one
    directory `spec.url` names (see EnvironmentSpec.knowledge_backend)."""
    listed = spec.options.get(DIRECTORIES_OPTION)
    directories = [Path(path) for path in json.loads(listed)] if listed is not None else [Path(spec.url)]
    index = spec.options.get(INDEX_OPTION)
    return RunbooksBackend(directories, Path(index) if index else None)
