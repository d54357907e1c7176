"""The environment's own log vocabulary: in which services' logs a question's words occur.

The offline engine searches a content word of the question only where the environment's logs
contain it (DESIGN §6: no fixed list of demo words), and ranks services by where the words
occur when the question names none. Counts come from the backend's ordinary `query_logs`
path (a keyword search with `limit=1`; the snapshot's log index makes it cheap), over the
backend's default range, case-insensitively as every keyword search is. A backend that fails
for one service leaves that service out; it never fails the caller.
"""

from __future__ import annotations

from collections.abc import Iterable

from evcli.backends.base import EvidenceBackend, LogQuery
from evcli.core.errors import BackendError

TERM_CAP = 12  # words looked up per question; the strongest come first


def term_hits(backend: EvidenceBackend, terms: Iterable[str], services: Iterable[str]) -> dict[str, dict[str, int]]:
    """{term: {service: matching lines}} for the terms found in at least one service's logs.

    Terms no service's logs contain are left out; services are in the order given."""
    hits: dict[str, dict[str, int]] = {}
    service_list = list(dict.fromkeys(services))
    for term in list(dict.fromkeys(term.strip() for term in terms if term.strip()))[:TERM_CAP]:
        found = {service: count for service in service_list if (count := _count(backend, service, term))}
        if found:
            hits[term] = found
    return hits


def _count(backend: EvidenceBackend, service: str, term: str) -> int:
    try:
        result = backend.query_logs(LogQuery(service=service, keywords=(term,), level=None, limit=1))
    except (BackendError, ValueError, OSError):
        return 0
    return int(result.total or 0)
