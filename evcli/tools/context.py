"""Choosing where evidence comes from: a snapshot directory or live backends, and the tool
settings (the per-call timeout can be set with $EVCLI_TOOL_TIMEOUT_S)."""

from __future__ import annotations

from pathlib import Path

from evcli.errors import BadInput
from evcli.tools.redaction import Redactor
from evcli.tools.runner import ToolEnvironment, ToolSettings


def build_environment(
    env_dir: Path | None = None,
    *,
    prometheus: str | None = None,
    alertmanager: str | None = None,
    loki: str | None = None,
    runbooks: Path | None = None,
    kb_path: Path | None = None,
    settings: ToolSettings | None = None,
) -> ToolEnvironment:
    """`--env DIR` or backend URLs; nothing given means the packaged demo environment."""
    live = any((prometheus, alertmanager, loki))
    if env_dir is not None and live:
        raise BadInput("use either --env DIR or backend URLs (--prometheus/--alertmanager/--loki), not both")
    if live:
        from evcli.backends.live import LiveBackend
        from evcli.backends.snapshot import demo_env_dir

        backend = LiveBackend(prometheus_url=prometheus, alertmanager_url=alertmanager, loki_url=loki)
        knowledge_dir = runbooks or demo_env_dir()
    else:
        from evcli.backends.snapshot import SnapshotBackend, demo_env_dir

        directory = env_dir or demo_env_dir()
        if not directory.is_dir():
            raise BadInput(f"no such environment directory: {directory}")
        backend = SnapshotBackend(directory)
        knowledge_dir = runbooks or directory

    opened = []

    def open_knowledge():
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
