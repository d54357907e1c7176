"""Choosing where evidence comes from: a snapshot directory or live backends, and the tool
settings (the per-call timeout can be set with $EVCLI_TOOL_TIMEOUT_S)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evcli.backends.spec import EnvironmentSpec
from evcli.tools.redaction import Redactor
from evcli.tools.runner import ToolEnvironment, ToolSettings

if TYPE_CHECKING:
    from evcli.kb.index import KnowledgeIndex


def build_environment(
    env_dir: Path | None = None,
    *,
    spec: EnvironmentSpec | None = None,
    runbooks: Path | None = None,
    kb_path: Path | None = None,
    settings: ToolSettings | None = None,
    **backend_urls: str | None,
) -> ToolEnvironment:
    """The tools' environment for `spec`, or for the spec `--env DIR`, `--runbooks` and
    `--<backend> URL` describe; nothing given means the packaged demo environment."""
    if spec is None:
        spec = EnvironmentSpec.from_options(env_dir, runbooks, backend_urls)
    elif env_dir is not None or runbooks is not None or backend_urls:
        raise TypeError("pass either a spec or the options that describe one")
    backend = spec.evidence_backend()
    knowledge_dir = spec.knowledge_dir()

    opened: list[KnowledgeIndex] = []

    def open_knowledge() -> KnowledgeIndex:
        """The knowledge index, opened once per environment on first use."""
        if not opened:
            from evcli.kb.index import KnowledgeIndex

            opened.append(KnowledgeIndex(kb_path))  # None: kb.db next to the trace store
        return opened[0]

    return ToolEnvironment(
        backend=backend,
        knowledge_dir=knowledge_dir,
        open_knowledge=open_knowledge,
        redactor=Redactor.from_env(),
        settings=settings or ToolSettings.from_env(),
    )
