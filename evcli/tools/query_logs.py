"""`query_logs`: log lines of one service in which every keyword occurs; the newest `limit` lines.

Refs: `$.logs[i]`, one log line as `timestamp level service instance message`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from evcli.backends.base import LEVELS, LogQuery, parse_window
from evcli.tools import registry
from evcli.tools.fetch import Outcome, resolve_service, unknown_service_outcome
from evcli.tools.params import NAME, ToolParams, keywords

if TYPE_CHECKING:
    from evcli.tools.runner import SessionView, ToolEnvironment


class QueryLogsParams(ToolParams):
    service: str = Field(pattern=NAME)
    query: str = Field("", max_length=200)
    level: Literal["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"] | None = None
    window: str = "30m"
    limit: int = Field(50, ge=1, le=500)

    @field_validator("level", mode="before")
    @classmethod
    def _level_upper(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip().upper()
            return {"WARNING": "WARN", "CRITICAL": "FATAL"}.get(value, value) or None
        return value

    @field_validator("query")
    @classmethod
    def _keywords_parse(cls, value: str) -> str:
        keywords(value)
        return value

    @property
    def keywords(self) -> tuple[str, ...]:
        return keywords(self.query)


def log_text(log: dict[str, Any]) -> str:
    timestamp = str(log.get("timestamp") or "").replace("T", " ").removesuffix("Z")
    fields = (timestamp, log.get("level"), log.get("service"), log.get("instance"), log.get("message"))
    return " ".join(str(field) for field in fields if field)


def scope(params: QueryLogsParams) -> dict[str, Any]:
    found: dict[str, Any] = {"service": params.service, "window": params.window, "limit": params.limit}
    found["keywords"] = list(params.keywords)
    if params.level:
        found["level"] = params.level
    return found


def precise(params: dict[str, Any]) -> bool:
    return bool(params.get("service") and params.get("query"))


def wider(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    old_keywords = set(old.get("query", "").lower().split())
    new_keywords = set(new.get("query", "").lower().split())
    if old_keywords and not new_keywords >= old_keywords:
        return f"it loosens the keywords ({old.get('query')!r} → {new.get('query') or '(none)'!r})"
    if old.get("level") and LEVELS.index(new.get("level") or "TRACE") < LEVELS.index(old["level"]):
        return f"it lowers or drops the level filter ({old['level']} → {new.get('level') or 'any'})"
    return None


def fetch(params: QueryLogsParams, env: ToolEnvironment, session: SessionView) -> Outcome:
    found_scope = scope(params)
    service, unknown = resolve_service(params.service, env.backend)
    if unknown:
        return unknown_service_outcome(unknown, SPEC.array_names, found_scope)
    window = parse_window(params.window, env.backend.now())
    result = env.backend.query_logs(
        LogQuery(service=service, keywords=params.keywords, level=params.level, window=window, limit=params.limit)
    )
    output = {"logs": result.logs, "total": result.total, "truncated": result.truncated, "message": result.message}
    return Outcome(output, found_scope)


SPEC = registry.register(
    registry.ToolSpec(
        name="query_logs",
        description="Log lines of one service in which every keyword occurs; newest `limit` lines.",
        summary="Log lines of one service matching every keyword.",
        params=QueryLogsParams,
        arrays=(registry.EvidenceArray("logs", log_text),),
        fetch=fetch,
        scope=scope,
        precise=precise,
        wider=wider,
        option_help={
            "service": "Service whose logs to search.",
            "query": 'Keywords that must all occur: "HikariPool timeout".',
            "level": "Minimum level: DEBUG, INFO, WARN, ERROR, FATAL.",
            "limit": "Newest N matching lines (1-500).",
        },
    )
)
