"""The trace store: sessions, steps, tool invocations, stage outputs, gate results."""

from evcli.store.db import TraceStore, default_db_path

__all__ = ["TraceStore", "default_db_path"]
