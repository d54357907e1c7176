"""What the tools' fetch functions share: the outcome they return, service resolution, text capping.

A fetch function returns its raw output and scope; the runner masks, caps and
cites it. A service the backend does not know is reported as a message with an
empty result (`unknown_service`), never as a backend failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evcli.backends.base import EvidenceBackend

TRUNCATION_MARK = " …[truncated]"


@dataclass
class Outcome:
    output: dict[str, Any]
    scope: dict[str, Any]
    dedup_reason: str | None = None
    unknown_service: bool = False


def resolve_service(service: str | None, backend: EvidenceBackend) -> tuple[str | None, str | None]:
    """(service to query, message) — message set when the backend does not know the service."""
    if not service:
        return service, None
    resolve = getattr(backend, "resolve_service", None)
    if resolve is not None:
        resolved = resolve(service)
        if resolved is not None:
            return resolved, None
    else:
        known = backend.known_services()
        if known is None or service in known:
            return service, None
    close = getattr(backend, "close_matches", None)
    suggestions = close(service) if close else []
    hint = f"; similar services: {', '.join(suggestions)}" if suggestions else ""
    return None, f"unknown service '{service}'{hint}"


def unknown_service_outcome(message: str, arrays: tuple[str, ...], scope: dict[str, Any]) -> Outcome:
    output: dict[str, Any] = {array: [] for array in arrays}
    output.update({"total": 0, "truncated": False, "message": message})
    return Outcome(output, scope, unknown_service=True)


def cap_text(output: dict[str, Any], arrays: tuple[str, ...], limit: int) -> bool:
    """Shorten over-long strings of the items of `arrays` in place; True if any was cut."""
    cut = False
    for array in arrays:
        for item in output.get(array) or []:
            for key, value in item.items():
                if isinstance(value, str) and len(value) > limit:
                    item[key] = value[:limit] + TRUNCATION_MARK
                    cut = True
    return cut
