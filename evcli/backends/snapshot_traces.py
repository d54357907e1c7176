"""A snapshot's `traces/` directory: span files read once per backend (DESIGN §5, traces issue).

```
DIR/traces/*.json|*.jsonl|*.ndjson|*.csv   OTLP JSON lines, Jaeger JSON, Zipkin v2 JSON or a CSV span table
```

Each file's format is detected from its content (evcli.backends.traceformats). A span's service
is mapped as the logs' and metrics' are: an env.toml name or alias, else the Deployment of a
Kubernetes pod name (`checkout-7c9f6d8b5-x2k4q` → checkout), else the name as written. Files are
read through `evcli.backends.files` (regular files inside the directory only) and each read file's
sha256 is kept for the invocation's digests. A file that cannot be read is an error naming it; it
never stops the other files from being read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, tzinfo
from functools import cached_property
from pathlib import Path

from evcli.backends.base import BackendError
from evcli.backends.files import RefusedFile, open_binary, read_limited
from evcli.backends.trace_graph import SpanGraph, SpanSource, TraceAnswer, TraceQuery, answer
from evcli.backends.traceformats import SpanFile, TraceFileError, read_spans

TRACES_DIR = "traces"
TRACE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".csv")
MAX_TRACE_FILE_BYTES = 512 << 20  # one span file; a larger one is refused with its size stated


@dataclass
class TraceFile:
    """One file of traces/: what was read from it, or why nothing was."""

    relative: str
    digest: str = ""  # sha256:<hex> of the bytes read
    found: SpanFile | None = None
    error: str = ""


@dataclass
class TraceResult:
    answer: TraceAnswer
    digests: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # files that could not be read


class SnapshotTraces:
    """The span files of a snapshot directory, read on first use and kept."""

    def __init__(self, directory: Path, service_of: Callable[[str], str], zone: tzinfo = UTC) -> None:
        self.directory = directory
        self.service_of = service_of  # a name as written → the environment's service
        self.zone = zone

    def paths(self) -> list[Path]:
        root = self.directory / TRACES_DIR
        if not root.is_dir():
            return []
        return sorted(
            path for path in root.iterdir() if path.suffix in TRACE_SUFFIXES and not path.name.startswith(".")
        )

    @property
    def present(self) -> bool:
        return bool(self.paths())

    @cached_property
    def files(self) -> list[TraceFile]:
        return [self._read(path) for path in self.paths()]

    def _read(self, path: Path) -> TraceFile:
        relative = path.relative_to(self.directory).as_posix()
        try:
            with open_binary(path, self.directory) as handle:
                data = read_limited(handle, MAX_TRACE_FILE_BYTES)
        except RefusedFile as error:
            return TraceFile(relative, error=f"{relative}: {error.strerror}")
        except OSError as error:
            return TraceFile(relative, error=f"{relative}: cannot read: {error.strerror or error}")
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        try:
            found = read_spans(data, csv_name=path.suffix == ".csv", tz=self.zone)
        except TraceFileError as error:
            return TraceFile(relative, digest, error=f"{relative}: {error}")
        mapped = [replace(span, service=self._service(span.service)) for span in found.spans]
        found.spans = mapped
        return TraceFile(relative, digest, found)

    def _service(self, name: str) -> str:
        return self.service_of(name) if name else ""

    @cached_property
    def graph(self) -> SpanGraph:
        return SpanGraph(
            SpanSource(span, file.relative)
            for file in self.files
            if file.found is not None
            for span in file.found.spans
        )

    def services(self) -> list[str]:
        return self.graph.services()

    def call_pairs(self) -> list[tuple[str, str]]:
        """(caller, callee) of every call the spans show (none without traces/)."""
        return self.graph.call_pairs() if self.present else []

    def resolve(self, name: str) -> str | None:
        """A service the spans name, by its name, an alias or a pod of it (case-insensitive)."""
        mapped = self.service_of(name.strip())
        by_lower = {service.lower(): service for service in self.services()}
        return by_lower.get(mapped.lower()) or by_lower.get(name.strip().lower())

    def span(self) -> tuple[datetime, datetime, str] | None:
        """(oldest start, newest end, "traces/") of every span read; None when there is none."""
        spans = [source.span for source in self.graph.sources]
        if not spans:
            return None
        first = min(span.start_ns for span in spans)
        last = max(span.start_ns + span.duration_ns for span in spans)
        return _moment(first), _moment(last), f"{TRACES_DIR}/"

    def query(self, query: TraceQuery) -> TraceResult:
        """The spans, stats and edges of `query` over every file read; a BackendError when no file
        could be read at all (one bad file among good ones is stated in `errors`)."""
        errors = [file.error for file in self.files if file.error]
        if errors and len(errors) == len(self.files):
            raise BackendError(errors[0])
        digests = {file.relative: file.digest for file in self.files if file.digest}
        return TraceResult(answer(self.graph, query, self.zone), digests, errors)


def _moment(nanoseconds: int) -> datetime:
    return datetime.fromtimestamp(nanoseconds // 1_000 / 1e6, UTC)
