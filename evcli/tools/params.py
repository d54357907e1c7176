"""Validated parameters of the evidence tools: the base model, shared field patterns, validation.

Each tool module declares its own parameter model on `ToolParams`. A tool call
that a model (or a user) makes is checked here before any backend sees it; a
bad value or an unknown tool is a one-line error naming the tool and the parameter.
"""

from __future__ import annotations

import shlex
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evcli.backends.base import parse_window
from evcli.errors import BadInput
from evcli.timerange import parse_time

NAME = r"^\w[\w.:/-]{0,99}$"  # \w is Unicode: aliases such as 订单服务 are names too
ALERTNAME = r"^[A-Za-z_][A-Za-z0-9_:.-]{0,99}$"
# A metric as a tool shows it: a Prometheus name, or a CSV header with its unit (`CpuUsageRate(%)`,
# `latency_p99[s]`, `mem_used (MiB)`); the backend checks it against the names it has.
METRIC = r"^\w[\w:.%/()\[\] -]{0,199}$"
MAX_KEYWORDS = 8


class ToolParams(BaseModel):
    # defer_build: a model's validator (its Unicode name patterns cost ~80 ms to compile) is built on first
    # validation, so `evcli gate`, which reads the registry only for evidence arrays, does not pay for it.
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, defer_build=True)

    @field_validator("window", check_fields=False)
    @classmethod
    def _window_syntax(cls, value: str | None) -> str | None:
        if value is not None:
            parse_window(value, datetime.now(UTC))  # raises ValueError with the reason
        return value

    @model_validator(mode="after")
    def _window_or_since_until(self) -> ToolParams:
        """A relative window and an absolute since/until exclude each other (tools with both fields)."""
        if getattr(self, "window", None) is not None and (
            getattr(self, "since", None) is not None or getattr(self, "until", None) is not None
        ):
            raise ValueError("give either window or since/until, not both")
        return self


def _time_syntax(value: str | None) -> str | None:
    """Only the syntax: the time is read on the environment's clock and in its zone when the call runs."""
    if value is not None:
        parse_time(value, clock=datetime.now(UTC), tz=UTC)
    return value


# `since`/`until` of a tool that searches a time range (with `window: str | None = None` beside them):
# ISO 8601 with or without zone, a date and time, a time of day or a relative time (evcli.timerange).
TimeExpression = Annotated[str | None, Field(max_length=64), AfterValidator(_time_syntax)]


def keywords(query: str) -> tuple[str, ...]:
    """Whitespace-separated keywords; "quoted phrases" stay one keyword."""
    try:
        words = tuple(word for word in shlex.split(query) if word.strip())
    except ValueError as exc:
        raise ValueError(f"query has unbalanced quotes: {exc}") from exc
    if len(words) > MAX_KEYWORDS:
        raise ValueError(f"at most {MAX_KEYWORDS} keywords, got {len(words)}")
    return words


def validate_params(tool_name: str, raw: dict[str, Any]) -> ToolParams:
    from evcli.tools import registry

    model = registry.get(tool_name).params
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "parameters"
        message = first["msg"].removeprefix("Value error, ")
        raise BadInput(f"{tool_name}: {where}: {message}") from exc
