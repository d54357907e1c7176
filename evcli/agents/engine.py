"""The one call every model makes, whichever model it is.

A stage builds a `RoleRequest` (its prompt, a JSON payload, and for the
Executor the tools and the transcript of earlier tool calls) and an `Engine`
answers it with an `EngineReply`: text (the role's JSON document) or tool
calls. The offline engine and the litellm adapter are the two implementations.
A repair request is the same request plus the unusable reply and what was wrong
with it (`Repair`): the model is asked once to answer again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from evcli.contracts import ToolInvocation

Role = Literal["planner", "executor", "verifier", "composer"]


@dataclass(frozen=True)
class Prompt:
    name: str  # planner, executor, verifier, composer
    version: str  # from the file's front matter
    resource: str  # e.g. prompts/executor.md
    text: str  # the body, without front matter

    def audit(self) -> dict[str, str]:
        """What a run records: never the text itself."""
        return {"name": self.name, "version": self.version, "resource": self.resource}


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


CHECK_CLAIMS = "check_claims"  # the Gatekeeper as an Executor tool: draft claims in, findings out (no evidence)


@dataclass(frozen=True)
class Turn:
    """One executed tool call of the Executor loop, as the model will see it."""

    call: ToolCall
    view: str  # evcli.tools.view.model_view(...) or the refusal / error message
    invocation: ToolInvocation | None = None  # None when the call was refused before running
    reply: int = 0  # which model reply asked for it: calls of one reply go back as one assistant message
    text: str = ""  # what the model wrote in that reply besides its calls (on the reply's first call)


@dataclass(frozen=True)
class Repair:
    """A reply that could not be used, and why (in plain words): sent back once for a corrected answer."""

    reply: str
    problem: str


@dataclass(frozen=True)
class RoleRequest:
    role: Role
    prompt: Prompt
    payload: dict[str, Any]
    tools: list[dict[str, Any]] | None = None  # OpenAI-style function schemas (executor only)
    transcript: list[Turn] = field(default_factory=list)
    response_schema: dict[str, Any] | None = None  # JSON Schema of the expected document
    repair: Repair | None = None
    # The Executor's last step: its tools are still sent (the request repeats the one before it, so a provider's
    # prompt cache reads all of it) but none may be called; the document is due
    last_step: bool = False


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0  # every input token, those read from the provider's prompt cache included
    completion_tokens: int = 0
    cached_tokens: int | None = None  # of prompt_tokens, read from the prompt cache; None: not reported


@dataclass(frozen=True)
class EngineReply:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str = ""


class EngineError(Exception):
    """A model call failed, in one plain line. `retryable`: a timeout, rate limit or 5xx worth one more try."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.wait: float | None = None  # set by an engine that may ask again after this many seconds (0: backoff)


class Engine(Protocol):
    name: str

    def complete(self, request: RoleRequest) -> EngineReply: ...
