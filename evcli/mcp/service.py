"""What `evcli mcp` serves, without the MCP SDK: the tool list, and one call at a time.

Tools: every evidence tool of the registry, with the parameter schema and description the Executor's
model is shown (`evcli.agents.executor.tool_schemas`) plus `session_id`/`question`; `check_claims`, the
Executor's Gatekeeper tool, on a stored session's invocations; `get_session`, a session as `evcli export`
writes it; `diagnose`, the whole chain as `evcli ask` runs it.

Invariants: an evidence call goes through the runner every call goes through (`run_tool`: parameters
validated, per-session call cap, no identical repeat, no widening in a narrow task, the per-call timeout,
output capped and secrets masked) and is recorded in a session of the trace store before its reply is
made; a session is only added to from the environment it was started on. Every failure comes back as an
error reply of one line (the message a command would print), never a traceback. Runs written during a
call are released when it ends (marked interrupted when it failed), as `handles_errors` does for a command.
Calls must come one at a time: the store's connection is not shared between threads.
"""

from __future__ import annotations

import copy
import json
import logging
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from evcli.agents.engine import CHECK_CLAIMS
from evcli.core.errors import BadInput, EvcliError, expected_failure

if TYPE_CHECKING:
    from evcli.contracts import SessionDocument, ToolInvocation
    from evcli.pipeline import Pipeline
    from evcli.store.db import TraceStore
    from evcli.tools.registry import ToolSpec

log = logging.getLogger("evcli.mcp")

GET_SESSION = "get_session"
DIAGNOSE = "diagnose"

# Added to every evidence tool's parameters: where the call is recorded.
SESSION_PROPERTIES: dict[str, dict[str, Any]] = {
    "session_id": {
        "type": "string",
        "description": (
            "Record the call in this session: the session_id an earlier call returned (check_claims checks claims "
            "citing the calls of one session). Omitted: a new session is started for `question`."
        ),
    },
    "question": {
        "type": "string",
        "description": (
            "What you are investigating, e.g. 'Why are orders timing out?': starts a new session with this question "
            "when session_id is omitted. In a narrow question's session (one service, one window), once a precise "
            "query found nothing a wider retry is refused."
        ),
    },
}


@dataclass(frozen=True)
class McpTool:
    """A tool as an MCP client lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """A call's result: text for the model, the same as JSON (`data`) for programs, and whether it failed."""

    text: str
    data: dict[str, Any] | None = None
    is_error: bool = False


class McpService:
    """The tools of `evcli mcp` over one pipeline (its store, rules, models and environment)."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.redactor = pipeline.tools().redactor  # builds the environment: a bad one fails here, at start

    @property
    def store(self) -> TraceStore:
        return self.pipeline.store

    @cached_property
    def _specs(self) -> dict[str, ToolSpec]:
        from evcli.tools import registry

        specs = {spec.name: spec for spec in registry.specs()}
        clashing = sorted(set(specs) & {CHECK_CLAIMS, GET_SESSION, DIAGNOSE})
        if clashing:
            raise ValueError(f"registered tools shadow the MCP server's own: {', '.join(clashing)}")
        return specs

    @cached_property
    def _tools(self) -> dict[str, McpTool]:
        from evcli.agents.executor import tool_schemas

        functions = {schema["function"]["name"]: copy.deepcopy(schema["function"]) for schema in tool_schemas()}
        tools = [_evidence_tool(functions[name]) for name in self._specs]
        tools += [_check_claims_tool(functions[CHECK_CLAIMS]), _GET_SESSION_TOOL, _DIAGNOSE_TOOL]
        return {tool.name: tool for tool in tools}

    def tools(self) -> list[McpTool]:
        """The evidence tools in registry order, then check_claims, get_session and diagnose."""
        return list(self._tools.values())

    def call(self, name: str, arguments: dict[str, Any] | None) -> Reply:
        """Run tool `name`; any failure is an error reply of one line."""
        from evcli.store.db import interrupt_owned_runs, release_owned_runs

        try:
            reply = self._dispatch(name, arguments or {})
        except Exception as exc:
            interrupt_owned_runs()
            return self._failure(exc)
        release_owned_runs()
        return reply

    def _dispatch(self, name: str, arguments: dict[str, Any]) -> Reply:
        if name in self._specs:
            return self._evidence(self._specs[name], arguments)
        handlers = {CHECK_CLAIMS: self._check_claims, GET_SESSION: self._get_session, DIAGNOSE: self._diagnose}
        if name not in handlers:
            raise BadInput(f"unknown tool {name!r}; tools: {', '.join(self._tools)}")
        _only(name, arguments, self._tools[name].input_schema["properties"])
        return handlers[name](arguments)

    def _failure(self, exc: Exception) -> Reply:
        """The one line `evcli` would print for `exc` (secrets masked), as an error reply."""
        expected = expected_failure(exc)
        if expected is None:  # a bug: the traceback goes to the server's stderr, never to the client
            log.error("unexpected error in an MCP call", exc_info=exc)
            expected = EvcliError(
                f"unexpected {type(exc).__name__}: {exc}", hint="the server's stderr has the traceback"
            )
        message, hint = expected.message, expected.hint
        line = (f"{message} ({hint})" if hint else message).replace("\n", " ")
        return Reply(text=self.redactor.mask_text(line), is_error=True)

    # --- the tools -----------------------------------------------------------------------

    def _evidence(self, spec: ToolSpec, arguments: dict[str, Any]) -> Reply:
        from evcli.tools.registry import validate_params
        from evcli.tools.runner import SessionView, run_tool, stored_guards

        params = {key: value for key, value in arguments.items() if key not in SESSION_PROPERTIES}
        validate_params(spec.name, params)  # bad parameters: one line, before a session is started
        document = self._session_to_record(spec.name, arguments)
        session_id = document.run.session_id
        narrow = document.run.config.task_scope == "narrow"
        tools = self.pipeline.tools()
        invocation = run_tool(spec.name, params, tools, SessionView(invocations=document.invocations, narrow=narrow))
        stored = self.store.record_invocation(session_id, invocation, check=stored_guards(invocation, tools.settings))
        return _evidence_reply(session_id, stored)

    def _check_claims(self, arguments: dict[str, Any]) -> Reply:
        from evcli.agents.drafts import check_drafts

        document = self._stored(_text(arguments, "session_id", CHECK_CLAIMS))
        claims = arguments.get("claims")
        if not isinstance(claims, list) or not all(isinstance(claim, dict) for claim in claims):
            raise BadInput(f"{CHECK_CLAIMS}: claims must be a list of claim objects")
        view = check_drafts(document, document.invocations, {"claims": claims}, self.pipeline.rules)
        return Reply(text=f"session {document.run.session_id}\n{view}")

    def _get_session(self, arguments: dict[str, Any]) -> Reply:
        from evcli.store.documents import to_canonical

        text = to_canonical(self._stored(_text(arguments, "session", GET_SESSION)))
        return Reply(text=text, data=json.loads(text))

    def _diagnose(self, arguments: dict[str, Any]) -> Reply:
        result = self.pipeline.ask(_text(arguments, "question", DIAGNOSE))
        gate = result.gate
        text = (
            f"{result.answer.user_facing_answer}\n\nverdict {result.verdict} · gate {gate.status}/{gate.severity}"
            + (f" ({', '.join(gate.failed_rules)})" if gate.failed_rules else "")
            + f" · session {result.session_id}"
        )
        return Reply(text=text, data=result.model_dump(mode="json"))

    # --- sessions ------------------------------------------------------------------------------

    def _stored(self, reference: str) -> SessionDocument:
        return self.store.load(self.store.resolve(reference))

    def _session_to_record(self, tool: str, arguments: dict[str, Any]) -> SessionDocument:
        """The session an evidence call goes into: the one named (started on this server's environment),
        else a new one for the question."""
        if arguments.get("session_id") is not None:
            document = self._stored(_text(arguments, "session_id", tool))
            self._check_environment(document)
            return document
        if arguments.get("question") is None:
            raise BadInput(
                f"{tool}: give session_id (record the call in that session) or question (start a new session with it)"
            )
        run = self.pipeline.create_session(_text(arguments, "question", tool))
        # no stage runs in it: not left active (an active run is never pruned), like `evcli tool --session` targets
        self.store.update_run(run.session_id, status="completed")
        return self.store.load(run.session_id)

    def _check_environment(self, document: SessionDocument) -> None:
        served = self.redactor.mask(self.pipeline.env_spec)  # stored configs are masked
        stored = document.run.config.env
        if stored != served:
            raise BadInput(
                f"session {document.run.session_id} ran on {_environment(stored)}; this server serves "
                f"{_environment(served)}",
                hint="give question instead of session_id to start a session here",
            )


def _evidence_tool(function: dict[str, Any]) -> McpTool:
    """A registry tool as the Executor's model sees it, plus where the call is recorded."""
    schema = function["parameters"]
    clashing = sorted(set(schema.get("properties", {})) & set(SESSION_PROPERTIES))
    if clashing:
        raise ValueError(f"{function['name']}: parameters clash with the session fields: {', '.join(clashing)}")
    schema.setdefault("properties", {}).update(copy.deepcopy(SESSION_PROPERTIES))
    return McpTool(function["name"], function["description"], schema)


def _check_claims_tool(function: dict[str, Any]) -> McpTool:
    schema = function["parameters"]
    schema["properties"] = {
        "session_id": {"type": "string", "description": "The session whose invocations the claims cite."},
        **schema["properties"],
    }
    schema["required"] = ["session_id", *schema.get("required", [])]
    description = (
        f"{function['description']} Each evidence binding names the tool_name, source_invocation_id and raw_path of "
        "a ref an evidence call of the session returned, and quotes its evidence_excerpt from that ref's text."
    )
    return McpTool(function["name"], description, schema)


_GET_SESSION_TOOL = McpTool(
    GET_SESSION,
    "A stored session of evcli's trace store as one JSON document, as `evcli export` writes it (secrets masked): "
    "the question, every tool invocation with its evidence refs, each stage's output and every gate result.",
    {
        "type": "object",
        "properties": {
            "session": {"type": "string", "description": "The session: its id, a unique prefix of it, or `last`."}
        },
        "required": ["session"],
        "additionalProperties": False,
    },
)

_DIAGNOSE_TOOL = McpTool(
    DIAGNOSE,
    "Run evcli's whole chain on a question (plan, call the evidence tools, gate every cited claim, verify, "
    "compose) and return the answer, its verdict (PASS, LOW_CONFID or REJECT), the claims that passed with "
    "their evidence, and the session id. The models are the server's (offline unless configured).",
    {
        "type": "object",
        "properties": {
            "question": {
                "type": "string",
                "description": "The question, in English or Chinese, e.g. 'Why is payment-service CPU high?'",
            }
        },
        "required": ["question"],
        "additionalProperties": False,
    },
)


def _evidence_reply(session_id: str, invocation: ToolInvocation) -> Reply:
    """What the model is shown of the call (its id, status and refs), and the whole invocation as JSON."""
    from evcli.tools.view import model_view

    data = {"session_id": session_id, "invocation": invocation.model_dump(mode="json")}
    return Reply(text=f"session {session_id}\n{model_view(invocation)}", data=data, is_error=not invocation.success)


def _only(tool: str, arguments: dict[str, Any], allowed: dict[str, Any]) -> None:
    unknown = sorted(set(arguments) - set(allowed))
    if unknown:
        raise BadInput(f"{tool}: unknown parameter {unknown[0]!r}; parameters: {', '.join(allowed)}")


def _text(arguments: dict[str, Any], key: str, tool: str) -> str:
    """A required text argument: a string with some words in it."""
    value = arguments.get(key)
    if not isinstance(value, str) or not value.strip():
        raise BadInput(f"{tool}: {key} must be a non-empty string")
    return value.strip()


def _environment(config: dict[str, Any]) -> str:
    """An environment config (EnvironmentSpec.as_config) in words."""
    if not config:
        return "the packaged demo environment"
    return "environment " + ", ".join(f"{key}={value}" for key, value in sorted(config.items()))
