"""Validated parameters of each evidence tool.

A tool call that a model (or a user) makes is checked here before any backend
sees it; a bad value is a one-line error naming the tool and the parameter.
"""

from __future__ import annotations

import shlex
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evcli.backends.base import parse_window
from evcli.errors import BadInput

_NAME = r"^\w[\w.:/-]{0,99}$"  # \w is Unicode: aliases such as 订单服务 are names too
_ALERTNAME = r"^[A-Za-z_][A-Za-z0-9_:.-]{0,99}$"
_METRIC = r"^[A-Za-z_:][A-Za-z0-9_:]{0,199}$"
MAX_KEYWORDS = 8


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    @field_validator("window", check_fields=False)
    @classmethod
    def _window_syntax(cls, value: str) -> str:
        parse_window(value, datetime.now(UTC))  # raises ValueError with the reason
        return value


class QueryMetricsParams(_Params):
    service: str | None = Field(None, pattern=_NAME)
    alertname: str | None = Field(None, pattern=_ALERTNAME)
    metric: str | None = Field(None, pattern=_METRIC)
    window: str = "30m"


class QueryLogsParams(_Params):
    service: str = Field(pattern=_NAME)
    query: str = Field("", max_length=200)
    level: Literal["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"] | None = None
    window: str = "30m"
    limit: int = Field(50, ge=1, le=500)

    @field_validator("level", mode="before")
    @classmethod
    def _level_upper(cls, value):
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


class LookupKnowledgeParams(_Params):
    query: str = Field(min_length=1, max_length=300)
    alertname: str | None = Field(None, pattern=_ALERTNAME)
    service: str | None = Field(None, pattern=_NAME)
    limit: int = Field(5, ge=1, le=20)


def keywords(query: str) -> tuple[str, ...]:
    """Whitespace-separated keywords; "quoted phrases" stay one keyword."""
    try:
        words = tuple(word for word in shlex.split(query) if word.strip())
    except ValueError as exc:
        raise ValueError(f"query has unbalanced quotes: {exc}") from exc
    if len(words) > MAX_KEYWORDS:
        raise ValueError(f"at most {MAX_KEYWORDS} keywords, got {len(words)}")
    return words


PARAMS: dict[str, type[_Params]] = {
    "query_metrics": QueryMetricsParams,
    "query_logs": QueryLogsParams,
    "lookup_knowledge": LookupKnowledgeParams,
}


def validate_params(tool_name: str, raw: dict) -> _Params:
    model = PARAMS.get(tool_name)
    if model is None:
        raise BadInput(f"unknown tool {tool_name!r}; tools: {', '.join(PARAMS)}")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "parameters"
        message = first["msg"].removeprefix("Value error, ")
        raise BadInput(f"{tool_name}: {where}: {message}") from exc
