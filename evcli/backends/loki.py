"""Loki over `/loki/api/v1/query_range`, with the LogQL built from a service and keywords."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from evcli.backends.alerts import service_of
from evcli.backends.base import (
    BackendError,
    LogQuery,
    LogResult,
    as_utc,
    canonical_level,
    level_at_least,
)
from evcli.backends.http import HttpAuth, base_url, get_json, quote_string

if TYPE_CHECKING:
    from evcli.backends.spec import BackendSpec

# Loki refuses larger limits by default (limits_config.max_entries_limit_per_query).
MAX_ENTRIES = 5000
# With a level filter, which is applied here, fetch this many lines so that enough survive it.
LEVEL_FILTER_FETCH = 1000
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
    return LokiBackend(spec.url, spec.timeout, service_label=spec.options.get("service_label", "service"))


class LokiBackend:
    def __init__(
        self,
        url: str,
        timeout: float = 10,
        *,
        service_label: str = "service",
        auth: HttpAuth | None = None,
    ) -> None:
        if not _LABEL_NAME.match(service_label):
            raise ValueError(f"not a Loki label name: {service_label!r}")
        self.url, self._auth = base_url(url, auth)
        self.timeout = timeout
        self.service_label = service_label

    def logql(self, query: LogQuery) -> str:
        """`{service="X"}` then one case-insensitive line filter per keyword, all escaped."""
        if query.service is None:
            stream = f'{{{self.service_label}=~".+"}}'
        else:
            stream = f"{{{self.service_label}={quote_string(query.service)}}}"
        filters = [f" |~ {quote_string('(?i)' + regex_literal(keyword))}" for keyword in query.keywords if keyword]
        return stream + "".join(filters)

    def query_logs(self, query: LogQuery) -> LogResult:
        """The newest `query.limit` matching lines, oldest first.

        Loki returns at most the requested limit, newest first; `total` counts the matches among
        the lines it returned, and `truncated` says that it had more to give.
        """
        fetch = query.limit + 1 if query.level is None else max(query.limit + 1, LEVEL_FILTER_FETCH)
        fetch = min(fetch, MAX_ENTRIES)
        answer = get_json(
            self.url + "/loki/api/v1/query_range",
            {
                "query": self.logql(query),
                "start": _nanoseconds(query.window.start),
                "end": _nanoseconds(query.window.end),
                "limit": fetch,
                "direction": "backward",
            },
            self.timeout,
            self._auth,
        )
        entries = self._entries(answer)  # (nanoseconds, record) pairs, newest first per stream
        minimum = canonical_level(query.level)
        matches = [
            record
            for _, record in sorted(entries, key=lambda pair: pair[0])
            if level_at_least(record["level"], minimum)
        ]
        loki_had_more = len(entries) >= fetch
        message = ""
        if loki_had_more:
            message = f"Loki returned its limit of {fetch} lines: older lines were not searched"
        elif len(matches) > query.limit:
            message = f"showing the newest {query.limit} of {len(matches)} matching lines"
        return LogResult(
            logs=matches[max(0, len(matches) - query.limit) :],
            total=len(matches),
            truncated=loki_had_more or len(matches) > query.limit,
            message=message,
        )

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
                    "service": labels.get(self.service_label) or service_of(labels),
                    "instance": labels.get("instance") or labels.get("pod") or "",
                    "message": line,
                }
                entries.append((nanoseconds, record))
        return entries


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
    seconds, remainder = divmod(nanoseconds, 1_000_000_000)
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{remainder // 1_000_000:03d}Z"
