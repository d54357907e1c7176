"""The `runbooks` knowledge backend: the Markdown runbooks of one directory, searched through the
knowledge index (evcli/kb/index.py).

Invariants: the index file is opened on first use and the directory is (re)indexed before each
search or skill listing (a no-op when nothing changed); only that directory's documents are
searched. A directory with nothing to index is a `BackendError` (nothing to search is not "found
nothing"). Blocks are returned as dicts without the index's `directory` field (where the index
found them is not evidence).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evcli.backends.base import BackendError
from evcli.backends.registry import INDEX_OPTION
from evcli.errors import BadInput

if TYPE_CHECKING:
    from evcli.contracts import BackendSpec
    from evcli.kb.index import KnowledgeIndex


class RunbooksBackend:
    name = "runbooks"

    def __init__(self, directory: Path, index_path: Path | None = None) -> None:
        self.directory = directory
        self.index_path = index_path

    @cached_property
    def index(self) -> KnowledgeIndex:
        from evcli.kb.index import KnowledgeIndex

        return KnowledgeIndex(self.index_path)  # None: kb.db next to the trace store

    def _indexed(self) -> KnowledgeIndex:
        try:
            self.index.index_dir(self.directory)
        except BadInput as exc:  # e.g. a snapshot without runbooks
            raise BackendError(exc.message) from exc
        return self.index

    def search(self, query: str, *, limit: int, alertname: str | None, service: str | None) -> list[dict[str, Any]]:
        found = self._indexed().search(
            query, limit=limit, alertname=alertname, service=service, directory=self.directory
        )
        return [block.model_dump(exclude={"directory"}) for block in found]

    def skills(self) -> list[dict[str, Any]]:
        return [skill.as_dict() for skill in self._indexed().skills(self.directory)]


def build(spec: BackendSpec) -> RunbooksBackend:
    """The backend for the directory `spec.url` names (see EnvironmentSpec.knowledge_backend)."""
    index = spec.options.get(INDEX_OPTION)
    return RunbooksBackend(Path(spec.url), Path(index) if index else None)
