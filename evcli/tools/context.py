"""Choosing where evidence comes from: a snapshot directory or live backends, the backend serving
knowledge (found by capability, see EnvironmentSpec.knowledge_backend), and the tool settings
(the per-call timeout can be set with $EVCLI_TOOL_TIMEOUT_S). The knowledge backend is built once, by
the first of the threads asking for it (the tool calls of one model reply run side by side)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from evcli.backends.spec import EnvironmentSpec
from evcli.core.redaction import Redactor
from evcli.tools.runner import ToolEnvironment, ToolSettings


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
    built: list[Any] = []
    building = threading.Lock()

    def knowledge() -> Any:
        """The backend serving the knowledge capability, built once per environment on first use."""
        with building:
            if not built:
                built.append(spec.knowledge_backend(kb_path))  # kb_path None: kb.db next to the trace store
            return built[0]

    return ToolEnvironment(
        backend=backend,
        knowledge=knowledge,
        redactor=Redactor.from_env(),
        settings=settings or ToolSettings.from_env(),
    )
