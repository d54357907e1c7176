"""Parameters of the evidence tools: the base model and the shared field patterns and checks.

Each tool module declares its own parameter model on `ToolParams`. A tool call
that a model (or a user) makes is checked against its tool's model
(`evcli.tools.registry.validate_params`) before any backend sees it; a bad value
or an unknown tool is a one-line error naming the tool and the parameter.

The checks import the parsers they call (windows, label matchers, times) when they run: the models are
defined whenever a tool's spec is read (`evcli gate` reads the specs of the tools its session cited), and
that must not load the backends.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

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
        from evcli.backends.base import parse_window

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
    from evcli.core.time import parse_time

    if value is not None:
        parse_time(value, clock=datetime.now(UTC), tz=UTC)
    return value


# `since`/`until` of a tool that searches a time range (with `window: str | None = None` beside them):
# ISO 8601 with or without zone, a date and time, a time of day or a relative time (evcli.core.time).
TimeExpression = Annotated[str | None, Field(max_length=64), AfterValidator(_time_syntax)]


MAX_PROMQL = 2000  # characters of a PromQL expression
MAX_MATCHERS = 8  # label matchers of one call
MAX_MATCHER = 200  # characters of one label matcher


def _printable(value: str | None) -> str | None:
    """One line of text: no control characters (newline, tab, escape, NUL)."""
    if value is not None and any(unicodedata.category(character) == "Cc" for character in value):
        raise ValueError("must be one line without control characters (newlines, tabs, escapes)")
    return value


def _matchers(values: list[str] | None) -> list[str] | None:
    """Each `name=value` (or !=, =~, !~) readable as a label matcher; an empty list is none."""
    from evcli.backends.base import parse_matcher

    for value in values or []:
        _printable(value)
        if len(value) > MAX_MATCHER:
            raise ValueError(f"a label matcher has at most {MAX_MATCHER} characters")
        parse_matcher(value)  # raises ValueError with the form expected
    return values or None


# A PromQL expression: one line, at most MAX_PROMQL characters; Prometheus itself checks the syntax.
PromQL = Annotated[str | None, Field(min_length=1, max_length=MAX_PROMQL), AfterValidator(_printable)]
# Label matchers added to a series selector: `quantile=0.5`, `code!=200`, `handler=~/api/.*`.
LabelMatchers = Annotated[list[str] | None, Field(max_length=MAX_MATCHERS), AfterValidator(_matchers)]


def keywords(query: str) -> tuple[str, ...]:
    """Whitespace-separated keywords; a "quoted phrase" (or 'quoted phrase') is one keyword, as written.

    A quote opens a phrase only at the start of a word, and the same quote closes it only at the end of
    a word; every other quote is text (`Can't`, `users'`, `say"hi"`), as is a backslash. A `'` that
    nothing closes is an apostrophe too (`'twas`); a `"` that nothing closes is an error, since the
    phrase it starts would otherwise be searched with the quote in it.
    """
    words: list[str] = []
    position = 0
    while (start := _word_start(query, position)) < len(query):
        close = _phrase_end(query, start) if query[start] in _PHRASE_QUOTES else None
        if close is not None:
            word, position = query[start + 1 : close], close + 1
        else:
            end = _word_end(query, start)
            word, position = query[start:end], end
        if word.strip():
            words.append(word)
    if len(words) > MAX_KEYWORDS:
        raise ValueError(f"at most {MAX_KEYWORDS} keywords, got {len(words)}")
    return tuple(words)


_PHRASE_QUOTES = "\"'"


def _word_start(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position


def _word_end(text: str, position: int) -> int:
    while position < len(text) and not text[position].isspace():
        position += 1
    return position


def _phrase_end(text: str, start: int) -> int | None:
    """The index of the quote closing the phrase opened at `start` (the first same quote ending a word);
    None for an apostrophe that closes nothing."""
    quote = text[start]
    close = text.find(quote, start + 1)
    while close != -1:
        if close + 1 == len(text) or text[close + 1].isspace():
            return close
        close = text.find(quote, close + 1)
    if quote == "'":
        return None
    opened = text[start : _word_end(text, start)]
    raise ValueError(f"query has unbalanced quotes: the {quote} of {opened} opens a phrase that nothing closes")
