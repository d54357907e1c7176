"""Loki over `/loki/api/v1/query_range`, with the LogQL built from a service and keywords.

Invariants (the shared log contract, DESIGN §2):
  - the request's start/end are the query's range; a query naming none searches the last hour
    ending now (`range_origin: live default 1h`), an open end is now, an open start an hour
    before the end;
  - every item carries its timestamp as ISO 8601 with offset (UTC), the original line, and its
    provenance {stream labels, ts_ns}; a level comes from the stream's labels or the line itself,
    and a `level` filter keeps lines without one unless `level_strict`;
  - stats and patterns are computed from the lines Loki returned; when Loki returned as many as
    it was asked for, older lines were not seen: stats say `lower_bound` and the result is truncated;
  - `digests` maps the query_range URL to the sha256 of the response body.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from evcli.backends.addresses import count_addresses, count_paths, top_counts
from evcli.backends.alerts import service_of
from evcli.backends.base import LEVELS, LogQuery, LogResult, as_utc, canonical_level
from evcli.backends.http import Connection, HttpAuth, quote_string
from evcli.backends.logrows import mask
from evcli.core.errors import BackendError
from evcli.core.time import TimeRange

if TYPE_CHECKING:
    from evcli.contracts import BackendSpec

# Loki refuses larger limits by default (limits_config.max_entries_limit_per_query).
MAX_ENTRIES = 5000
# With a level filter, which is applied here, fetch this many lines so that enough survive it.
LEVEL_FILTER_FETCH = 1000
MAX_PATTERNS = 20
DEFAULT_SPAN = timedelta(hours=1)
LIVE_DEFAULT = "live default 1h"
NAMED = "question/call"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_RE2_SPECIAL = re.compile(r"([\\.+*?()|\[\]{}^$])")
_LEVEL_FIELD = re.compile(
    r"""(?:\blevel|\blvl|\bseverity|"level"|"lvl"|"severity")\s*[=:]\s*"?([A-Za-z]+)""",
    re.IGNORECASE,
)
_LEVEL_WORD = re.compile(r"\b(TRACE|DEBUG|INFO|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL|CRIT|PANIC)\b")


def build(spec: BackendSpec) -> LokiBackend:
    """Options: `service_label`, the stream label naming the service (default `service`)."""
    return LokiBackend(Connection.from_spec(spec), service_label=spec.options.get("service_label") or "service")


class LokiBackend:
    def __init__(
        self,
        url: str | Connection,
        timeout: float = 10,
        *,
        service_label: str = "service",
        auth: HttpAuth | None = None,
    ) -> None:
        if not _LABEL_NAME.match(service_label):
            raise ValueError(f"not a Loki label name: {service_label!r}")
        self.connection = url if isinstance(url, Connection) else Connection(url, timeout=timeout, auth=auth)
        self.url = self.connection.url
        self.service_label = service_label

    def probe(self) -> None:
        """Raise `BackendError` unless the server answers (`/ready`)."""
        self.connection.probe("/ready")

    def services(self) -> list[str]:
        """Values of the service label (`/loki/api/v1/label/NAME/values`)."""
        answer = self.connection.get_json(f"/loki/api/v1/label/{self.service_label}/values")
        values = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(values, list):
            raise BackendError(f"Loki at {self.url} answered no label values: {str(answer)[:200]}")
        return sorted(str(value) for value in values)

    def logql(self, query: LogQuery) -> str:
        """`{service="X"}` then one case-insensitive line filter per keyword, all escaped."""
        if query.service is None:
            stream = f'{{{self.service_label}=~".+"}}'
        else:
            stream = f"{{{self.service_label}={quote_string(query.service)}}}"
        filters = [f" |~ {quote_string(keyword_regex(keyword))}" for keyword in query.keywords if keyword]
        return stream + "".join(filters)

    def query_logs(self, query: LogQuery) -> LogResult:
        """The newest `query.limit` matching lines, oldest first, with stats and patterns over all
        the lines Loki returned.

        Loki returns at most the requested limit, newest first; `total` counts the matches among
        the lines it returned, and `truncated` says that it had more to give.
        """
        start, end = self.searched_bounds(query)
        fetch = query.limit + 1 if query.level is None else max(query.limit + 1, LEVEL_FILTER_FETCH)
        fetch = min(fetch, MAX_ENTRIES)
        endpoint = self.url + "/loki/api/v1/query_range"
        answer, digest = self.connection.get_json_digest(
            "/loki/api/v1/query_range",
            {
                "query": self.logql(query),
                "start": _nanoseconds(start),
                "end": _nanoseconds(end),
                "limit": fetch,
                "direction": "backward",
            },
        )
        entries = self._entries(answer)  # (nanoseconds, record) pairs, newest first per stream
        matches = [
            record for _, record in sorted(entries, key=lambda pair: pair[0]) if query.keeps_level(record["level"])
        ]
        loki_had_more = len(entries) >= fetch
        message = ""
        if loki_had_more:
            message = f"Loki returned its limit of {fetch} lines: older lines were not searched"
        elif len(matches) > query.limit:
            message = f"showing the newest {query.limit} of {len(matches)} matching lines"
        range_text = TimeRange(start, end).text()
        origin = LIVE_DEFAULT if query.effective_range() is None else NAMED
        return LogResult(
            logs=matches[max(0, len(matches) - query.limit) :],
            total=len(matches),
            truncated=loki_had_more or len(matches) > query.limit,
            message=message,
            stats=stats_of(matches, query, range_text, origin, lower_bound=loki_had_more),
            patterns=patterns_of(matches),
            searched_range=range_text,
            digests={endpoint: digest},
        )

    @staticmethod
    def searched_bounds(query: LogQuery) -> tuple[datetime, datetime]:
        """The query's range with open ends filled: the end is now, the start an hour before the end."""
        named = query.effective_range() or TimeRange(None, None)
        end = named.end or datetime.now(UTC).replace(microsecond=0)
        return named.start or end - DEFAULT_SPAN, end

    def _entries(self, answer: Any) -> list[tuple[int, dict[str, Any]]]:
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(answer, dict) or answer.get("status") != "success" or not isinstance(data, dict):
            raise BackendError(f"Loki at {self.url} answered without success: {str(answer)[:200]}")
        if data.get("resultType") != "streams":
            raise BackendError(f"Loki answered resultType {data.get('resultType')!r}, expected streams")
        entries = []
        for stream in data.get("result") or []:
            labels = stream.get("stream") or {}
            for value in stream.get("values") or []:
                try:
                    nanoseconds, line = int(value[0]), str(value[1])
                except (TypeError, ValueError, IndexError):
                    raise BackendError(f"Loki answered an unreadable log entry: {str(value)[:200]}") from None
                record = {
                    "timestamp": _iso_from_ns(nanoseconds),
                    "level": canonical_level(labels.get("level") or labels.get("detected_level"))
                    or level_in_line(line),
                    "level_derived": False,
                    "service": labels.get(self.service_label) or service_of(labels),
                    "instance": labels.get("instance") or labels.get("pod") or "",
                    "message": line,
                    "line": line,
                    "source": {"stream": dict(labels), "ts_ns": str(nanoseconds)},
                }
                entries.append((nanoseconds, record))
        return entries


def stream_text(labels: dict[str, Any]) -> str:
    """`{pod="a",service="checkout"}`: a stream's labels, sorted, as LogQL writes a selector."""
    return "{" + ",".join(f"{key}={quote_string(str(value))}" for key, value in sorted(labels.items())) + "}"


def stats_of(
    records: list[dict[str, Any]], query: LogQuery, searched: str, origin: str, *, lower_bound: bool
) -> dict[str, Any]:
    """The shared stats shape over `records` (oldest first); `lower_bound`: Loki had more lines."""
    levels = Counter(record["level"] or "none" for record in records)
    filters: dict[str, Any] = {"service": query.service, "keywords": list(query.keywords), "level": query.level}
    if query.level_strict:
        filters["level_strict"] = True
    stats: dict[str, Any] = {
        "total": len(records),
        "first": records[0]["timestamp"] if records else None,
        "last": records[-1]["timestamp"] if records else None,
        "by_level": {level: levels[level] for level in (*reversed(LEVELS), "none") if levels[level] or level == "none"},
        "by_source": dict(Counter(stream_text(record["source"]["stream"]) for record in records).most_common()),
        "range": searched,
        "range_origin": origin,
        "filters": filters,
    }
    if query.count_by == "address":
        stats["by_address"] = top_counts(count_addresses(str(record["line"]) for record in records))
    elif query.count_by == "path":
        stats["by_path"] = top_counts(count_paths(str(record["line"]) for record in records))
    elif query.count_by == "instance":
        stats["by_instance"] = top_counts(Counter(str(r["instance"]) for r in records if r.get("instance")))
    if lower_bound:
        stats["lower_bound"] = True
    return stats


def patterns_of(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Message templates (variable parts as `<*>`) with count, first/last time and the newest line
    as example (its level; every Loki entry starts a record of its own), the MAX_PATTERNS most
    frequent; ties by first appearance."""
    patterns: dict[str, dict[str, Any]] = {}
    for record in records:
        template = mask(record["message"])
        known = patterns.setdefault(template, {"template": template, "count": 0, "first": record["timestamp"]})
        known.update(
            count=known["count"] + 1,
            last=record["timestamp"],
            example=record["line"],
            level=record.get("level"),
            starts_record=True,
        )
    return sorted(patterns.values(), key=lambda pattern: -pattern["count"])[:MAX_PATTERNS]


def keyword_regex(keyword: str) -> str:
    """The RE2 line filter of one keyword: itself, any case; a number alone is a whole number (500 is not
    in 1500 or 0.500), as the snapshot index matches it (RE2 has no look-around: the boundaries are groups)."""
    if keyword.isdigit() and keyword.isascii():
        return f"(^|[^0-9.]){keyword}([^0-9]|$)"
    return "(?i)" + regex_literal(keyword)


def regex_literal(text: str) -> str:
    """`text` as an RE2 pattern matching itself (Go's regexp.QuoteMeta)."""
    return _RE2_SPECIAL.sub(r"\\\1", text)


def level_in_line(line: str) -> str | None:
    """The level a line states: a `level=`/`"level":` field, else the first upper-case level word."""
    field = _LEVEL_FIELD.search(line)
    if field and canonical_level(field.group(1)):
        return canonical_level(field.group(1))
    word = _LEVEL_WORD.search(line)
    return canonical_level(word.group(1)) if word else None


def _nanoseconds(moment: datetime) -> int:
    return (as_utc(moment) - _EPOCH) // timedelta(microseconds=1) * 1_000


def _iso_from_ns(nanoseconds: int) -> str:
    """ISO 8601 in UTC with milliseconds and offset (`2024-05-01T10:00:12.500+00:00`)."""
    seconds, remainder = divmod(nanoseconds, 1_000_000_000)
    moment = datetime.fromtimestamp(seconds, UTC).replace(microsecond=remainder // 1_000)
    return moment.isoformat(timespec="milliseconds")
