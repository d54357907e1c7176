"""`query_logs`: log lines of one service in which every keyword occurs, in a time range; the newest
`limit` lines, with counts and message patterns over every matching line.

Refs (rendered here from the structured output, the one source the runner records and the
Gatekeeper re-derives):
  - `$.logs[i]`: one line, `<provenance> <timestamp with zone> <LEVEL> <original line>`, the
    provenance being `logs/auth.log:1234` (snapshot) or `loki{labels}@<ns>` (Loki), so `grep` on
    the source finds the line; the canonical level is left out when the line has none, and a level
    derived from an access log's status is labelled as derived;
  - `$.stats`: the total of matching lines in the searched range (not capped by `limit`; "at least"
    when a live backend's own line limit cut it: `lower_bound`), and the records they belong to
    when fewer (`42 matching lines in 14 records,`: a stack trace is one record), first and last time, counts per
    level (`none`: lines without a level) and per source, per IPv4 address when the call asked
    (`count_by="address"`: `by address: 203.0.113.45 29, …`) or instance, the host, pod or node a
    line names (`count_by="instance"`: `by instance: dn-07 19`), the absolute range with where it
    came from, and the filters;
  - `$.patterns[i]`: a message template with variable parts masked as `<*>`, its count, first and
    last time and one example line.
An item recorded before issue 9 (no original `line`) renders as it did then, so an older
session's refs still re-derive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from evcli.contracts import Breakdown
from evcli.tools import registry
from evcli.tools.fetch import Outcome, call_target, searched_scope
from evcli.tools.params import NAME, TimeExpression, ToolParams, keywords
from evcli.tools.refs import level_filter, range_text

if TYPE_CHECKING:
    from evcli.tools.runner import SessionView, ToolEnvironment


class QueryLogsParams(ToolParams):
    service: str | None = Field(None, pattern=NAME)  # None: every service's logs
    query: str = Field("", max_length=200)
    level: Literal["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"] | None = None
    level_strict: bool | None = None  # None (or False): not strict, and not recorded in the call's parameters
    since: TimeExpression = None
    until: TimeExpression = None
    window: str | None = None
    limit: int = Field(50, ge=1, le=500)
    count_by: Breakdown | None = None  # stats.by_address / by_instance / by_path

    @field_validator("level", mode="before")
    @classmethod
    def _level_upper(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip().upper()
            return {"WARNING": "WARN", "CRITICAL": "FATAL"}.get(value, value) or None
        return value

    @field_validator("level_strict")
    @classmethod
    def _strict_or_none(cls, value: bool | None) -> bool | None:
        return value or None  # False is the default spelt out: the same call

    @field_validator("query")
    @classmethod
    def _keywords_parse(cls, value: str) -> str:
        keywords(value)
        return value

    @property
    def keywords(self) -> tuple[str, ...]:
        return keywords(self.query)


# --- refs --------------------------------------------------------------------------------------


def log_time(log: dict[str, Any]) -> str:
    """The timestamp as a log ref shows it: ISO 8601 with the zone; an item recorded before issue 9
    as it showed then (`2026-07-08 23:05:28`)."""
    timestamp = str(log.get("timestamp") or "")
    if "line" in log:
        return timestamp
    return timestamp.replace("T", " ").removesuffix("Z")


def provenance(source: Any) -> str:
    """`logs/auth.log:1234` for a snapshot line, `loki{job="sshd"}@1674958991123000000` for a Loki entry."""
    if not isinstance(source, dict):
        return ""
    if "stream" in source:
        labels = ",".join(f'{key}="{value}"' for key, value in sorted((source.get("stream") or {}).items()))
        return f"loki{{{labels}}}@{source.get('ts_ns', '')}"
    return f"{source.get('path', '')}:{source.get('line', '')}"


def log_text(log: dict[str, Any]) -> str:
    if "line" not in log:  # recorded before issue 9
        fields = (log_time(log), log.get("level"), log.get("service"), log.get("instance"), log.get("message"))
        return " ".join(str(field) for field in fields if field)
    parts = [provenance(log.get("source")), log_time(log), str(log.get("level") or ""), str(log["line"])]
    if log.get("level_derived") and log.get("level"):
        parts.append("(level derived from the status code)")
    return " ".join(part for part in parts if part)


def _counts(counts: Any, order: tuple[str, ...] = ()) -> str:
    """`ERROR 12, WARN 3, none 22`: the keys of `order` first (in that order), then the rest by count."""
    if not isinstance(counts, dict) or not counts:
        return "-"
    rank = {key: position for position, key in enumerate(order)}
    keys = sorted(counts, key=lambda key: (rank.get(key, len(rank)), -int(counts[key] or 0), key))
    return ", ".join(f"{key} {counts[key]}" for key in keys)


def _filters(filters: Any) -> str:
    """`service=sshd keywords="Failed password" level>=WARN (lines without a level kept)`."""
    filters = filters if isinstance(filters, dict) else {}
    parts = [f"service={filters['service']}"] if filters.get("service") else []
    words = [str(keyword) for keyword in filters.get("keywords") or []]
    if words:
        parts.append("keywords=" + " ".join(f'"{word}"' for word in words))
    if filters.get("level"):
        parts.append(level_filter(filters["level"], bool(filters.get("level_strict"))))
    return " ".join(parts) or "none"


def stats_text(stats: dict[str, Any]) -> str:
    """`stats: 37 matching lines in <range> (<origin>); first …, last …; by level: …; by source: …; filters: …`."""
    from evcli.backends.base import LEVELS

    total = stats.get("total", 0)
    counted = f"at least {total}" if stats.get("lower_bound") else f"{total}"
    text = f"stats: {counted} matching line{'s' * (total != 1)}{_records(stats)} in {range_text(stats)}"
    if stats.get("lower_bound"):
        text += " (a lower bound: the backend's line limit was reached)"
    if stats.get("first"):
        text += f"; first {stats['first']}, last {stats.get('last')}"
    text += f"; by level: {_counts(stats.get('by_level'), (*reversed(LEVELS), 'none'))}"
    text += f"; by source: {_counts(stats.get('by_source'))}"
    if stats.get("by_address") is not None:  # counted only when the call asked (count_by="address")
        text += f"; by address: {_counts(stats['by_address'])}"
    if stats.get("by_instance") is not None:  # count_by="instance"
        text += f"; by instance: {_counts(stats['by_instance'])}"
    if stats.get("by_path") is not None:  # count_by="path"
        text += f"; by path: {_counts(stats['by_path'])}"
    return text + f"; filters: {_filters(stats.get('filters'))}"


def _records(stats: dict[str, Any]) -> str:
    """` in 14 records,` when the matching lines belong to fewer records (stack traces), else ``."""
    records = stats.get("records")
    if not isinstance(records, int) or records == stats.get("total", 0):
        return ""
    return f" in {records} record{'s' * (records != 1)},"


def pattern_text(pattern: dict[str, Any]) -> str:
    """`pattern (count 14, first …, last …): Failed password for <*> from <*> port <*> ssh2 — example: <line>`."""
    seen = f"count {pattern.get('count')}, first {pattern.get('first')}, last {pattern.get('last')}"
    return f"pattern ({seen}): {pattern.get('template')} — example: {pattern.get('example')}"


# --- the call ----------------------------------------------------------------------------------


def scope(params: QueryLogsParams) -> dict[str, Any]:
    found: dict[str, Any] = {"service": params.service, "limit": params.limit}
    found.update({key: getattr(params, key) for key in ("window", "since", "until") if getattr(params, key)})
    found["keywords"] = list(params.keywords)
    if params.level:
        found["level"] = params.level
        found["level_strict"] = bool(params.level_strict)
    if params.count_by:
        found["count_by"] = params.count_by
    return found


def precise(params: dict[str, Any]) -> bool:
    return bool(params.get("service") and params.get("query"))


def wider(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Why `new` finds lines `old` would not, or None. Keywords match as substrings (a number as a whole
    number), so a keyword that contains an old one is narrower: "HikariPool-1" after "HikariPool"."""
    from evcli.backends.base import LEVELS

    old_keywords = set(old.get("query", "").lower().split())
    new_keywords = set(new.get("query", "").lower().split())
    kept = all(
        keyword in new_keywords or (not keyword.isdigit() and any(keyword in word for word in new_keywords))
        for keyword in old_keywords
    )
    if old_keywords and not kept:
        return f"it loosens the keywords ({old.get('query')!r} → {new.get('query') or '(none)'!r})"
    if old.get("level") and LEVELS.index(new.get("level") or "TRACE") < LEVELS.index(old["level"]):
        return f"it lowers or drops the level filter ({old['level']} → {new.get('level') or 'any'})"
    return None


def prepare(backend: Any, params: QueryLogsParams) -> None:
    """Before the call's deadline: the index of each log file it reads (the service's, else every one) and
    the snapshot's clock, so a first query of a big file is not timed out by building its index."""
    from evcli.backends.envindex import prepare_queries

    prepare_queries(backend, params.service, logs=True)


def fetch(params: QueryLogsParams, env: ToolEnvironment, session: SessionView) -> Outcome:
    from evcli.backends.base import LogQuery

    found_scope = scope(params)
    target = call_target(params, env.backend, SPEC.array_names, found_scope)
    if isinstance(target, Outcome):
        return target
    service, named, window = target
    query = LogQuery(
        service=service,
        keywords=params.keywords,
        level=params.level,
        window=window,
        limit=params.limit,
        range=named,
        level_strict=bool(params.level_strict),
        count_by=params.count_by,
    )
    result = env.backend.query_logs(query)
    stats = result.stats or {}
    found_scope.update(searched_scope(named, env.backend, result.searched_range, stats.get("range_origin")))
    output = {
        "logs": result.logs,
        "stats": stats,
        "patterns": result.patterns,
        "total": result.total,
        "truncated": result.truncated,
        "message": result.message,
        "searched_range": found_scope["range"],
        "digests": result.digests,
    }
    return Outcome(output, found_scope)


SPEC = registry.register(
    registry.ToolSpec(
        name="query_logs",
        description=(
            "Log lines of one service (or of all) in which every keyword occurs, in a time range (since/until, or a relative "
            "window; none: the whole snapshot, or the last hour of a live backend); the newest `limit` lines, "
            "`$.stats` (total matching lines, per level and source, the range searched) and `$.patterns[i]` "
            "(message templates with counts). Cite `$.stats` or a `$.patterns[i]` for a count. "
            'count_by="address" adds the matching lines per IPv4 address to `$.stats` (which IP the most); '
            '"instance" per host, pod or node; "path" per requested path (which endpoint).'
        ),
        summary="Log lines of one service matching every keyword, with counts and patterns.",
        params=QueryLogsParams,
        arrays=(
            registry.EvidenceArray("logs", log_text),
            registry.EvidenceArray("stats", stats_text, single=True),
            registry.EvidenceArray("patterns", pattern_text),
        ),
        fetch=fetch,
        scope=scope,
        reads=("logs",),
        prepare=prepare,
        precise=precise,
        wider=wider,
        option_help={
            "service": "Service whose logs to search (default: every service's logs).",
            "query": (
                "Keywords that must all occur in a line, each as a substring, case-insensitive: HikariPool timeout "
                '(the words are ANDed); "a quoted phrase" is one keyword, a quote inside a word is text (Can\'t); '
                "a number alone matches whole numbers, 500 not 1500."
            ),
            "level": "Minimum level: DEBUG, INFO, WARN, ERROR, FATAL (lines without a level are kept).",
            "level_strict": "With --level: drop lines that have no level.",
            "limit": "Newest N matching lines (1-500).",
            "count_by": "address: count the matching lines per IPv4 address in the stats (the 10 most); instance: per host, pod or node; path: per requested path (endpoint).",
        },
    )
)
